// Streaming redaction of secret values in a byte stream (node logs): each value and its base64,
// base64url, percent-encoded and JSON-escaped forms become [REDACTED], also when split across writes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace air {

class Redactor {
 public:
  static constexpr std::string_view kMarker = "[REDACTED]";
  // Shorter values are not redacted: a 1-3 byte "secret" would blank out ordinary words and digits all
  // over the log, and such a value is no secret anyway. ignored_values() counts them so the caller can warn.
  static constexpr size_t kMinSecretLength = 4;

  explicit Redactor(const std::vector<std::string>& secret_values);

  // Returns the redacted bytes that are safe to emit now. Bytes that could still be the start of a
  // secret (a prefix of some form) are held back until more data or finish(); nothing else is delayed.
  std::string feed(std::string_view chunk);
  // Emits what was held back (redacting whole matches; an unfinished prefix is not a secret).
  std::string finish();

  size_t pending_bytes() const { return buf_.size(); }
  size_t max_pattern_length() const { return max_len_; }
  size_t ignored_values() const { return ignored_; }
  size_t pattern_count() const { return patterns_.size(); }

  // Every form of one value that is searched for (exposed for tests and docs).
  static std::vector<std::string> forms_of(const std::string& value);

 private:
  // Redacts d into out up to where it can decide (all of it when final); returns how many bytes it used.
  size_t scan(std::string_view d, bool final, std::string& out);
  // The first position >= i where a form may start (or d.size()).
  size_t next_candidate(std::string_view d, size_t i) const;
  void build_skip_table();

  std::vector<std::string> patterns_;                  // longest first
  std::array<std::vector<unsigned>, 256> by_first_{};  // pattern indexes by first byte, longest first
  std::string buf_;
  size_t max_len_ = 0;
  size_t skip_window_ = 0;  // the shortest form's length (at most 256)
  std::vector<uint8_t> skip_;  // Wu-Manber shifts by 2-byte block; built on the first large scan
  size_t ignored_ = 0;
};

// One-shot convenience for whole strings (error messages, diagnostics).
std::string redact(std::string_view text, const std::vector<std::string>& secret_values);

}  // namespace air
