// Leftmost-longest multi-pattern replacement over a stream. Candidate starts are found with a Wu-Manber
// skip table (2-byte blocks; a window moves by up to the shortest form's length at a time), then checked
// against the forms that begin with that byte, longest first.
#include "core/secrets/redact.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/base/codec.h"

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
  std::string out;
  if (buf_.empty()) {  // the usual case: scan the chunk where it is, keep only an undecided tail
    size_t used = scan(chunk, false, out);
    buf_.assign(chunk.substr(used));
    return out;
  }
  buf_.append(chunk);
  size_t used = scan(buf_, false, out);
  buf_.erase(0, used);
  return out;
}

std::string Redactor::finish() {
  std::string out;
  scan(buf_, true, out);
  buf_.clear();
  return out;
}

void Redactor::build_skip_table() {
  // Wu-Manber: for each 2-byte block, how far the end of a window of m bytes (the shortest form's length)
  // can move without passing the end of a window where some form starts. Blocks that occur in no form's
  // first m bytes allow the largest move.
  const size_t m = std::min<size_t>(patterns_.back().size(), 256);  // patterns_ is sorted longest first
  skip_.assign(size_t{1} << 16, static_cast<uint8_t>(m - 1));
  for (const auto& p : patterns_)
    for (size_t j = 1; j < m; ++j) {
      unsigned block = static_cast<unsigned char>(p[j - 1]) << 8 | static_cast<unsigned char>(p[j]);
      skip_[block] = std::min<uint8_t>(skip_[block], static_cast<uint8_t>(m - 1 - j));
    }
  skip_window_ = m;
}

size_t Redactor::next_candidate(std::string_view d, size_t i) const {
  const size_t n = d.size();
  if (!skip_.empty() && n - i >= 2 * skip_window_) {
    const size_t m = skip_window_;
    const auto* u = reinterpret_cast<const unsigned char*>(d.data());
    size_t end = i + m - 1;  // the last byte of the window that starts at i
    while (end < n) {
      uint8_t shift = skip_[u[end - 1] << 8 | u[end]];
      if (shift == 0) {
        size_t start = end + 1 - m;
        if (!by_first_[u[start]].empty()) return start;
        ++end;
      } else {
        end += shift;
      }
    }
    // Starts before end + 1 - m are excluded; the ones after it have no whole window left (a form can only
    // begin there, to be decided when more bytes come): the byte loop below looks at them.
    i = std::max(i, end + 1 - m);
  }
  while (i < n && by_first_[static_cast<unsigned char>(d[i])].empty()) ++i;
  return i;
}

size_t Redactor::scan(std::string_view d, bool final, std::string& out) {
  const size_t n = d.size();
  if (skip_.empty() && n >= 4096) build_skip_table();  // worth its 64 KiB only for a stream of logs
  out.reserve(out.size() + n);
  size_t i = 0, emitted = 0;
  while (i < n) {
    // Most bytes start no form of any value: skip them (the node log's hot path).
    i = next_candidate(d, i);
    if (i == n) break;
    const std::string* hit = nullptr;
    bool wait = false;
    for (unsigned idx : by_first_[static_cast<unsigned char>(d[i])]) {
      const std::string& p = patterns_[idx];
      size_t rem = n - i;
      if (rem >= p.size()) {
        if (std::memcmp(d.data() + i, p.data(), p.size()) == 0) {
          hit = &p;
          break;
        }
      } else if (!final && std::memcmp(d.data() + i, p.data(), rem) == 0) {
        wait = true;  // a longer form may still complete here: decide when more bytes arrive
        break;
      }
    }
    if (wait) break;
    if (hit) {
      out.append(d.substr(emitted, i - emitted));
      out += kMarker;
      i += hit->size();
      emitted = i;
    } else {
      ++i;
    }
  }
  out.append(d.substr(emitted, i - emitted));
  return i;
}

std::string redact(std::string_view text, const std::vector<std::string>& secret_values) {
  Redactor r(secret_values);
  std::string out = r.feed(text);
  out += r.finish();
  return out;
}

}  // namespace air
