// Leftmost-longest multi-pattern replacement over a stream. Patterns are indexed by first byte, so the
// common case (a log byte that starts no pattern) costs one table lookup.
#include "core/redact.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/redact_codec.h"

namespace air {

namespace {

// Base64 characters of `value` that do not depend on its neighbours when it sits at byte offset
// `align` (mod 3) inside a larger base64-encoded stream.
std::string base64_core(const std::string& value, size_t align, Base64Alphabet alphabet) {
  std::string framed(align, '\0');
  framed += value;
  framed.append(3, '\0');
  std::string enc = base64_encode(framed, alphabet, false);
  size_t first = (8 * align + 5) / 6;                  // first char whose bits all lie in value
  size_t end = (8 * (align + value.size())) / 6;       // one past the last such char
  return end > first ? enc.substr(first, end - first) : std::string();
}

}  // namespace

std::vector<std::string> Redactor::forms_of(const std::string& value) {
  std::set<std::string> forms;
  forms.insert(value);
  std::string json = nlohmann::json(value).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  forms.insert(json.substr(1, json.size() - 2));
  for (auto alphabet : {Base64Alphabet::kStandard, Base64Alphabet::kUrl}) {
    forms.insert(base64_encode(value, alphabet, true));
    forms.insert(base64_encode(value, alphabet, false));
    for (size_t align = 0; align < 3; ++align) forms.insert(base64_core(value, align, alphabet));
  }
  for (auto style : {PercentStyle::kComponent, PercentStyle::kPath, PercentStyle::kForm})
    for (bool lower : {false, true}) forms.insert(percent_encode(value, style, lower));
  std::vector<std::string> out;
  for (const auto& f : forms)
    if (f.size() >= kMinSecretLength) out.push_back(f);
  return out;
}

Redactor::Redactor(const std::vector<std::string>& secret_values) {
  std::set<std::string> all;
  for (const auto& v : secret_values) {
    if (v.size() < kMinSecretLength) {
      ++ignored_;
      continue;
    }
    for (auto& f : forms_of(v)) all.insert(std::move(f));
  }
  patterns_.assign(all.begin(), all.end());
  std::stable_sort(patterns_.begin(), patterns_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (unsigned i = 0; i < patterns_.size(); ++i) {
    by_first_[static_cast<unsigned char>(patterns_[i][0])].push_back(i);
    max_len_ = std::max(max_len_, patterns_[i].size());
  }
}

std::string Redactor::feed(std::string_view chunk) {
  if (patterns_.empty()) return std::string(chunk);
  buf_.append(chunk);
  return process(false);
}

std::string Redactor::finish() {
  std::string out = process(true);
  buf_.clear();
  return out;
}

std::string Redactor::process(bool final) {
  std::string out;
  out.reserve(buf_.size());
  const size_t n = buf_.size();
  size_t i = 0, emitted = 0;
  const char* data = buf_.data();
  while (i < n) {
    // Most bytes start no form of any value: skip them in a tight loop (the node log's hot path).
    while (i < n && by_first_[static_cast<unsigned char>(data[i])].empty()) ++i;
    if (i == n) break;
    const std::string* hit = nullptr;
    bool wait = false;
    for (unsigned idx : by_first_[static_cast<unsigned char>(buf_[i])]) {
      const std::string& p = patterns_[idx];
      size_t rem = n - i;
      if (rem >= p.size()) {
        if (std::memcmp(buf_.data() + i, p.data(), p.size()) == 0) {
          hit = &p;
          break;
        }
      } else if (!final && std::memcmp(buf_.data() + i, p.data(), rem) == 0) {
        wait = true;  // a longer form may still complete here: decide when more bytes arrive
        break;
      }
    }
    if (wait) break;
    if (hit) {
      out.append(buf_, emitted, i - emitted);
      out += kMarker;
      i += hit->size();
      emitted = i;
    } else {
      ++i;
    }
  }
  out.append(buf_, emitted, i - emitted);
  buf_.erase(0, i);
  return out;
}

std::string redact(std::string_view text, const std::vector<std::string>& secret_values) {
  Redactor r(secret_values);
  std::string out = r.feed(text);
  out += r.finish();
  return out;
}

}  // namespace air
