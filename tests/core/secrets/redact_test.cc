// Tests for the streaming redactor and its codecs: every form of a value is replaced, at any split point.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

#include "core/secrets/redact.h"
#include "core/base/codec.h"

using air::Redactor;

namespace {

// Splits text at random points, feeds the pieces, and checks the held-back tail stays bounded.
std::string feed_randomly(Redactor& r, const std::string& text, std::mt19937& rng) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t n = std::uniform_int_distribution<size_t>(0, 9)(rng) == 0
                   ? std::uniform_int_distribution<size_t>(0, 200)(rng)
                   : std::uniform_int_distribution<size_t>(1, 7)(rng);
    n = std::min(n, text.size() - pos);
    out += r.feed(std::string_view(text).substr(pos, n));
    REQUIRE(r.pending_bytes() < std::max<size_t>(r.max_pattern_length(), 1));
    pos += n;
  }
  out += r.finish();
  REQUIRE(r.pending_bytes() == 0);
  return out;
}

}  // namespace

TEST_CASE("base64 and percent encodings match known vectors") {
  CHECK(air::base64_encode("") == "");
  CHECK(air::base64_encode("f") == "Zg==");
  CHECK(air::base64_encode("fo") == "Zm8=");
  CHECK(air::base64_encode("foo") == "Zm9v");
  CHECK(air::base64_encode("foob", air::Base64Alphabet::kStandard, false) == "Zm9vYg");
  CHECK(air::base64_encode("\xfb\xff", air::Base64Alphabet::kStandard) == "+/8=");
  CHECK(air::base64_encode("\xfb\xff", air::Base64Alphabet::kUrl) == "-_8=");
  CHECK(air::base64_decode("Zm9vYmFy").value() == "foobar");
  CHECK(air::base64_decode("Zm9vYg").value() == "foob");
  CHECK(air::base64_decode("Zm9vYg==").value() == "foob");
  CHECK(air::base64_decode("-_8=").value() == "\xfb\xff");
  CHECK_FALSE(air::base64_decode("Zm9v!").has_value());
  CHECK_FALSE(air::base64_decode("Z").has_value());
  CHECK_FALSE(air::base64_decode("Zg=a").has_value());
  CHECK(air::percent_encode("p@ss word/x") == "p%40ss%20word%2Fx");
  CHECK(air::percent_encode("p@ss word/x", air::PercentStyle::kPath) == "p%40ss%20word/x");
  CHECK(air::percent_encode("p@ss word/x", air::PercentStyle::kForm) == "p%40ss+word%2Fx");
  CHECK(air::percent_encode("\xc3\xa9", air::PercentStyle::kComponent, true) == "%c3%a9");
}

TEST_CASE("redact replaces a value and each of its encoded forms") {
  const std::string v = "hf_Secret/Value+1 x";
  std::vector<std::string> forms = {
      v,
      air::base64_encode(v),
      air::base64_encode(v, air::Base64Alphabet::kStandard, false),
      air::base64_encode(v, air::Base64Alphabet::kUrl),
      air::base64_encode(v, air::Base64Alphabet::kUrl, false),
      air::percent_encode(v),
      air::percent_encode(v, air::PercentStyle::kPath),
      air::percent_encode(v, air::PercentStyle::kForm, true),
  };
  for (const auto& f : forms) {
    INFO(f);
    CHECK(air::redact("token=" + f + "; done\n", {v}) == "token=[REDACTED]; done\n");
  }
  CHECK(air::redact(R"({"t": "a\"b\\c"})", {"a\"b\\c"}) == R"({"t": "[REDACTED]"})");
}

TEST_CASE("redact finds a value inside a larger base64 stream at every alignment") {
  const std::string v = "my-hf-token-0123456789";
  for (size_t offset : {15, 16, 17}) {  // the value starts at each alignment mod 3
    std::string plain = std::string(offset, 'u') + v + "@host";
    std::string encoded = air::base64_encode(plain);
    size_t first = (8 * offset + 5) / 6, end = 8 * (offset + v.size()) / 6;
    std::string expected = "h " + encoded.substr(0, first) + "[REDACTED]" + encoded.substr(end) + "\n";
    INFO(plain << " -> " << encoded);
    CHECK(air::redact("h " + encoded + "\n", {v}) == expected);
  }
}

TEST_CASE("redact holds back only a possible prefix of a secret") {
  Redactor r({"supersecret"});
  CHECK(r.feed("step 1 loss 2.5\n") == "step 1 loss 2.5\n");
  CHECK(r.pending_bytes() == 0);
  CHECK(r.feed("token: super") == "token: ");
  CHECK(r.pending_bytes() == 5);
  CHECK(r.feed("sec") == "");
  CHECK(r.feed("ret!\n") == "[REDACTED]!\n");
  CHECK(r.feed("token: supe") == "token: ");
  CHECK(r.finish() == "supe");  // an unfinished prefix is not the secret
}

TEST_CASE("redact ignores values shorter than the minimum and counts them") {
  Redactor r({"abc", "", "abcd"});
  CHECK(r.ignored_values() == 2);
  std::string out = r.feed("abc abcd abc");
  out += r.finish();
  CHECK(out == "abc [REDACTED] abc");
}

TEST_CASE("redact prefers the longest form at a position") {
  // The padded base64 form must win over its unpadded prefix, leaving no '=' behind.
  const std::string v = "pass1";  // base64 "cGFzczE=" (one pad)
  CHECK(air::redact("x cGFzczE= y", {v}) == "x [REDACTED] y");
  // Two secrets where one is a prefix of the other.
  CHECK(air::redact("k=abcdefgh;", {"abcd", "abcdefgh"}) == "k=[REDACTED];");
}

TEST_CASE("redact at randomized split points equals the one-shot result and never leaks") {
  std::mt19937 rng(12345);
  const std::vector<std::string> secrets = {"hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "p@ss w/rd%42",
                                            "\x01\x02\xff binary \n value"};
  const std::string filler_chars = " \n\t#!,;:()[]{}<>|";  // none starts a form of these secrets
  for (int round = 0; round < 200; ++round) {
    std::string text, expected;
    int pieces = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int p = 0; p < pieces; ++p) {
      std::string filler;
      int fl = std::uniform_int_distribution<int>(0, 30)(rng);
      for (int k = 0; k < fl; ++k)
        filler += filler_chars[std::uniform_int_distribution<size_t>(0, filler_chars.size() - 1)(rng)];
      text += filler;
      expected += filler;
      const auto& s = secrets[std::uniform_int_distribution<size_t>(0, secrets.size() - 1)(rng)];
      auto forms = Redactor::forms_of(s);
      // Plain forms only here: a base64 core embedded in filler is a different (longer-stream) case.
      std::vector<std::string> whole = {s, air::base64_encode(s), air::base64_encode(s, air::Base64Alphabet::kUrl),
                                        air::percent_encode(s), air::percent_encode(s, air::PercentStyle::kForm)};
      const auto& f = whole[std::uniform_int_distribution<size_t>(0, whole.size() - 1)(rng)];
      REQUIRE(std::find(forms.begin(), forms.end(), f) != forms.end());
      text += f;
      expected += "[REDACTED]";
    }
    Redactor r(secrets);
    std::string out = feed_randomly(r, text, rng);
    REQUIRE(out == expected);
    for (const auto& s : secrets) REQUIRE(out.find(s) == std::string::npos);
  }
}

TEST_CASE("redact passes text without secrets through unchanged at any split") {
  std::mt19937 rng(7);
  std::string text;
  for (int i = 0; i < 5000; ++i) text += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
  Redactor r({"0123456789abcdef"});
  std::string out = feed_randomly(r, text, rng);
  // Random bytes could contain a 4-char base64 core only by chance; this seed does not.
  CHECK(out == text);
  Redactor none({});
  CHECK(none.feed("anything") == "anything");
  CHECK(none.finish().empty());
}

namespace {

// The definition, written plainly: left to right, at each position the longest form that starts there
// becomes the marker; otherwise the byte is kept.
std::string redact_by_definition(const std::string& text, const std::vector<std::string>& values) {
  std::vector<std::string> forms;
  for (const auto& v : values)
    if (v.size() >= Redactor::kMinSecretLength)
      for (auto& f : Redactor::forms_of(v)) forms.push_back(std::move(f));
  std::string out;
  for (size_t i = 0; i < text.size();) {
    size_t best = 0;
    for (const auto& f : forms)
      if (f.size() > best && text.compare(i, f.size(), f) == 0) best = f.size();
    if (best) {
      out += Redactor::kMarker;
      i += best;
    } else {
      out += text[i++];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("redaction of long streams equals the plain definition (the skip table never skips a form)") {
  std::mt19937 rng(20261203);
  // Short and long values, values sharing prefixes and blocks, a value that is its own overlap.
  const std::vector<std::vector<std::string>> value_sets = {
      {"hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"}, {"abcd"}, {"abcd", "abcdefgh", "cdab"}, {"aaaaaa"},
      {"tok-1234", "x y z w", "lime"}, {std::string(300, 'q') + "end"}};
  const std::string alphabet = "abcdefghqxyz-_ 0123456789AQWE\n";
  for (const auto& values : value_sets) {
    for (int round = 0; round < 20; ++round) {
      std::string text;
      size_t len = std::uniform_int_distribution<size_t>(5000, 40000)(rng);
      while (text.size() < len) {
        if (std::uniform_int_distribution<int>(0, 60)(rng) == 0) {
          auto forms = Redactor::forms_of(values[rng() % values.size()]);
          const std::string& f = forms.empty() ? values[0] : forms[rng() % forms.size()];
          // a whole form, or a prefix of one (an almost-match the skip must not be fooled by)
          text += rng() % 3 ? f : f.substr(0, rng() % f.size());
        } else {
          text += alphabet[rng() % alphabet.size()];
        }
      }
      INFO("values[0] " << values[0] << ", round " << round);
      std::string expected = redact_by_definition(text, values);
      CHECK(air::redact(text, values) == expected);
      Redactor streamed(values);
      std::string got;
      for (size_t at = 0; at < text.size();) {  // large reads, as the agent makes (so the skip table is used)
        size_t step = std::uniform_int_distribution<size_t>(1, 9000)(rng);
        got += streamed.feed(std::string_view(text).substr(at, step));
        at += step;
      }
      got += streamed.finish();
      CHECK(got == expected);
    }
  }
}
