// Helper for bench/snapshot.sh: generates a synthetic project tree, and times air's snapshot of it
// (scan + archive + digest, through the cache) in-process.
//   snapshot_bench generate DIR TOTAL_MB FILES [SEED]
//   snapshot_bench snapshot ROOT CACHE_DIR
//     prints "<seconds> <scan_seconds> <files> <bytes> <archive_bytes> <reused> <sha256> <cpu_seconds>"
//   snapshot_bench unpack ARCHIVE DEST
//     prints "<seconds> <cpu_seconds>" of unpack_snapshot (what a node's agent does before its command)
// cpu_seconds is user + system time of every thread (zstd's workers included).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/snapshot/snapshot.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Text that compresses like source code and prose: Zipf-distributed words from a fixed vocabulary,
// with punctuation, indentation and newlines. Random bytes stand for weights, images, archives.
class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {
    std::uniform_int_distribution<int> len(2, 10), letter(0, 25);
    for (int i = 0; i < 8000; ++i) {
      std::string w;
      for (int n = len(rng_); n > 0; --n) w += static_cast<char>('a' + letter(rng_));
      vocab_.push_back(w);
    }
    for (size_t i = 0; i < vocab_.size(); ++i) weights_.push_back(1.0 / static_cast<double>(i + 1));
  }

  std::string text(size_t bytes) {
    std::discrete_distribution<size_t> word(weights_.begin(), weights_.end());
    std::uniform_int_distribution<int> shape(0, 99);
    std::string out;
    out.reserve(bytes + 16);
    while (out.size() < bytes) {
      out += vocab_[word(rng_)];
      int s = shape(rng_);
      out += s < 8 ? "\n    " : s < 14 ? ", " : s < 18 ? "(" : s < 22 ? ");\n" : s < 25 ? " = " : " ";
    }
    out.resize(bytes);
    return out;
  }

  std::string random_bytes(size_t bytes) {
    std::string out(bytes, '\0');
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t v = rng_();
      std::memcpy(out.data() + i, &v, std::min<size_t>(8, bytes - i));
    }
    return out;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::vector<std::string> vocab_;
  std::vector<double> weights_;
};

int generate(const std::string& dir, double total_mb, size_t files, uint64_t seed) {
  Generator g(seed);
  // Sizes: log-normal, scaled so they add up to the total; every fourth byte is random.
  std::lognormal_distribution<double> size_dist(9.0, 1.5);
  std::vector<double> raw(files);
  double sum = 0;
  for (auto& r : raw) sum += (r = size_dist(g.rng()));
  double total = total_mb * 1e6;
  double random_budget = total / 4, random_written = 0;
  for (size_t i = 0; i < files; ++i) {
    size_t bytes = static_cast<size_t>(raw[i] / sum * total);
    bool random = random_written < random_budget && i % 4 == 3;
    std::string sub = "pkg" + std::to_string(i % 40) + "/mod" + std::to_string(i % 7) + "/";
    std::string path = dir + "/" + sub + (random ? "blob" : "file") + std::to_string(i) + (random ? ".bin" : ".py");
    std::filesystem::create_directories(dir + "/" + sub);
    std::ofstream out(path, std::ios::binary);
    std::string data = random ? g.random_bytes(bytes) : g.text(bytes);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (random) random_written += static_cast<double>(bytes);
  }
  return 0;
}

int snapshot(const std::string& root, const std::string& cache) {
  auto t0 = Clock::now();
  air::SnapshotManifest m = air::scan_snapshot(root, {});
  double scan = seconds_since(t0);
  bool reused = false;
  air::SnapshotArchive a = air::snapshot_with_cache(m, cache, &reused);
  double total = seconds_since(t0);
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::printf("%.4f %.4f %zu %llu %llu %d %s %.4f\n", total, scan, m.files.size(),
              static_cast<unsigned long long>(m.total_bytes), static_cast<unsigned long long>(a.bytes), reused ? 1 : 0,
              a.sha256.c_str(), cpu);
  return 0;
}

double cpu_seconds() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int unpack(const std::string& archive, const std::string& dest) {
  double c0 = cpu_seconds();
  auto t0 = Clock::now();
  air::unpack_snapshot(archive, dest);
  std::printf("%.4f %.4f\n", seconds_since(t0), cpu_seconds() - c0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "generate" && (argc == 5 || argc == 6))
      return generate(argv[2], std::atof(argv[3]), std::strtoull(argv[4], nullptr, 10),
                      argc == 6 ? std::strtoull(argv[5], nullptr, 10) : 1);
    if (mode == "snapshot" && argc == 4) return snapshot(argv[2], argv[3]);
    if (mode == "unpack" && argc == 4) return unpack(argv[2], argv[3]);
  } catch (const air::Error& e) {
    std::fprintf(stderr, "snapshot_bench: error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: snapshot_bench generate DIR TOTAL_MB FILES [SEED] | snapshot ROOT CACHE_DIR | unpack ARCHIVE DEST\n");
  return 2;
}
