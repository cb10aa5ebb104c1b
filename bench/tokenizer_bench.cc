// Tokenizer throughput on one core: loads a tokenizer.json, encodes the given text files (first pass with
// a cold piece cache, then warm passes) and decodes the ids; prints a table in MB per CPU second, and a last
// line "ours LOAD_S COLD_S WARM_S MB TOKENS" for bench/tokenizer_bench.sh.
// usage: tokenizer_bench TOKENIZER_JSON TEXT_FILE...
#include <time.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/tokenizer/tokenizer.h"

namespace {

// CPU time of this thread: the figure stays honest on a machine shared with other jobs.
struct Clock {
  using time_point = double;
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
};

double seconds_since(double start) { return Clock::now() - start; }

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Splits the text into documents of about 4 KiB at line ends, like a data loader feeding records.
std::vector<std::string> documents(const std::string& text) {
  std::vector<std::string> docs;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.size(), pos + 4096);
    size_t nl = text.find('\n', end);
    end = nl == std::string::npos ? text.size() : nl + 1;
    docs.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return docs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenizer_bench TOKENIZER_JSON TEXT_FILE...\n";
    return 2;
  }
  try {
    std::string text;
    for (int i = 2; i < argc; ++i) text += read_all(argv[i]);
    auto docs = documents(text);
    double mb = static_cast<double>(text.size()) / 1e6;

    auto t0 = Clock::now();
    auto tok = air::train::Tokenizer::from_file(argv[1]);
    double load_s = seconds_since(t0);

    size_t tokens = 0;
    t0 = Clock::now();
    std::vector<std::vector<int32_t>> all;
    for (const auto& d : docs) {
      all.push_back(tok.encode(d));
      tokens += all.back().size();
    }
    double cold_s = seconds_since(t0);

    constexpr int kWarmPasses = 3;
    size_t warm_tokens = 0;
    t0 = Clock::now();
    for (int pass = 0; pass < kWarmPasses; ++pass) {
      for (const auto& d : docs) warm_tokens += tok.encode(d).size();
    }
    double warm_s = seconds_since(t0) / kWarmPasses;
    if (warm_tokens != tokens * kWarmPasses) throw std::runtime_error("warm passes gave different token counts");

    t0 = Clock::now();
    size_t decoded = 0;
    for (const auto& ids : all) decoded += tok.decode(ids).size();
    double decode_s = seconds_since(t0);
    if (decoded != text.size()) std::cerr << "warning: decoded size differs (invalid UTF-8 in the input?)\n";

    std::printf("tokenizer      %s (vocabulary %d)\n", argv[1], tok.vocab_size());
    std::printf("text           %.2f MB in %zu documents, %zu tokens (%.2f bytes/token)\n", mb, docs.size(),
                tokens, static_cast<double>(text.size()) / static_cast<double>(tokens));
    std::printf("%-28s %10s %10s\n", "measure (one core)", "CPU s", "MB/s");
    std::printf("%-28s %10.3f %10s\n", "load tokenizer.json", load_s, "-");
    std::printf("%-28s %10.3f %10.1f\n", "encode, first pass", cold_s, mb / cold_s);
    std::printf("%-28s %10.3f %10.1f\n", "encode, warm cache", warm_s, mb / warm_s);
    std::printf("%-28s %10.3f %10.1f\n", "decode", decode_s, mb / decode_s);
    // For bench/tokenizer_bench.sh's table beside the peer (bench/tokenizer_peer.mjs prints the same fields).
    std::printf("ours %.3f %.3f %.3f %.3f %zu\n", load_s, cold_s, warm_s, mb, tokens);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "tokenizer_bench: " << e.what() << "\n";
    return 1;
  }
}
