// libFuzzer target: the streaming redactor (core/redact). The input holds up to three secret values and
// a log stream; the stream is fed in reads of a length the input chooses. Streamed output must equal the
// one-shot redact() of the whole text, and no secret value may survive in it. Secrets use lowercase
// letters and digits only, so none can be spelled by the "[REDACTED]" marker itself.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/secrets/redact.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

std::string as_secret(std::string_view raw) {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s;
  for (unsigned char c : raw) s += kAlphabet[c % 36];
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t step = 1 + static_cast<unsigned char>(in[0]) % 23;
  in.remove_prefix(1);
  // "secret1\x01secret2\x01secret3\x01 log text..."; the secrets are the first fields (at most three).
  std::vector<std::string> secrets;
  while (secrets.size() < 3) {
    size_t sep = in.find('\x01');
    if (sep == std::string_view::npos) break;
    secrets.push_back(as_secret(in.substr(0, sep)));
    in.remove_prefix(sep + 1);
  }
  // Make the secrets appear in the text the mutator builds: "\x02" + digit inserts secret n.
  std::string text;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\x02' && i + 1 < in.size() && !secrets.empty()) {
      text += secrets[static_cast<unsigned char>(in[i + 1]) % secrets.size()];
      ++i;
    } else {
      text += in[i];
    }
  }

  air::Redactor r(secrets);
  std::string streamed;
  for (size_t at = 0; at < text.size(); at += step) {
    streamed += r.feed(std::string_view(text).substr(at, step));
    FUZZ_CHECK(r.pending_bytes() <= r.max_pattern_length(), "the redactor holds back more than a pattern");
  }
  streamed += r.finish();
  FUZZ_CHECK(streamed == air::redact(text, secrets), "streamed and one-shot redaction differ");
  for (const auto& s : secrets)
    if (s.size() >= air::Redactor::kMinSecretLength)
      FUZZ_CHECK(streamed.find(s) == std::string::npos, "a secret value survived redaction");
  return 0;
}
