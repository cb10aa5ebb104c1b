// bench/chat_data_memory.sh: the memory of each rank reading a large tokenized-data cache entry. Writes a
// synthetic entry (EXAMPLES examples of about MEAN_TOKENS tokens, with masks) once, then starts RANKS
// processes that each map it, build an epoch's rows (padded or packed, as the trainer's DataLoader does) and
// read every token and flag of their own rows - one epoch - and report their memory from /proc.
//   chat_data_memory_bench DIR EXAMPLES MEAN_TOKENS RANKS [SEQ_LEN (2048)] [packed|padded] [mapped|owned]
// owned: each rank copies the entry into its own memory first (what the cache did before it was mapped).
// Prints one line per rank: peak_rss (VmHWM), rss_anon (private), rss_file (mapped pages, shared), pss.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include "trainer/data/rows.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

// A field of /proc/self/status or smaps_rollup, in MiB.
double proc_mib(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  return -1;
}

void write_entry(const fs::path& dir, int64_t n, int64_t mean) {
  const fs::path tmp = dir.string() + ".tmp";
  fs::remove_all(tmp);
  ExampleSetWriter w(tmp.string());
  std::mt19937_64 rng(1);
  Example e;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t len = mean / 2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(mean + 1));
    e.ids.resize(static_cast<size_t>(len));
    e.mask.resize(static_cast<size_t>(len));
    for (int64_t t = 0; t < len; ++t) {
      e.ids[static_cast<size_t>(t)] = static_cast<int32_t>(rng() % 128000);
      e.mask[static_cast<size_t>(t)] = (t / 16) % 2;  // turns of 16 tokens, every other one trained
    }
    w.add(e);
  }
  w.finish();
  fs::rename(tmp, dir);
}

int rank_main(const fs::path& dir, int rank, int ranks, int64_t seq_len, bool packing, bool owned) {
  const auto t0 = std::chrono::steady_clock::now();
  ExampleSet set = ExampleSet::map_entry(dir.string());
  if (owned) {
    std::vector<Example> copy;
    copy.reserve(set.size());
    for (size_t i = 0; i < set.size(); ++i) copy.push_back(set.copy(i));
    set = ExampleSet(copy);
  }
  EpochRows rows(set, RowOptions{seq_len, packing, 42}, 0);
  std::vector<int64_t> buf(static_cast<size_t>(seq_len)), tgt(static_cast<size_t>(seq_len));
  int64_t tokens = 0, targets = 0, mine = 0;
  uint64_t check = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (static_cast<int>(r % static_cast<size_t>(ranks)) != rank) continue;
    ++mine;
    targets += row_target_tokens(set, rows[r], seq_len);
    int64_t off = 0;
    for (uint32_t i : rows[r]) {  // what DataLoader::materialize reads
      const ExampleRef e = set[i];
      const int64_t len = std::min<int64_t>(e.size, seq_len - off);
      for (int64_t t = 0; t < len; ++t) {
        buf[static_cast<size_t>(off + t)] = e.ids[t];
        tgt[static_cast<size_t>(off + t)] = t + 1 < len && e.trained(t + 1) ? e.ids[t + 1] : -100;
      }
      off += len;
      tokens += len;
    }
    check += static_cast<uint64_t>(buf[0] + tgt[static_cast<size_t>(off > 1 ? off - 2 : 0)]);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("rank %d rows %lld tokens %lld targets %lld seconds %.1f peak_rss_mib %.0f rss_anon_mib %.0f rss_file_mib %.0f pss_mib %.0f (check %llu)\n",
              rank, static_cast<long long>(mine), static_cast<long long>(tokens), static_cast<long long>(targets), secs,
              proc_mib("/proc/self/status", "VmHWM"), proc_mib("/proc/self/status", "RssAnon"),
              proc_mib("/proc/self/status", "RssFile"), proc_mib("/proc/self/smaps_rollup", "Pss"),
              static_cast<unsigned long long>(check % 1000));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: chat_data_memory_bench DIR EXAMPLES MEAN_TOKENS RANKS [SEQ_LEN] [packed|padded] [mapped|owned]\n";
    return 2;
  }
  try {
    const fs::path root = argv[1];
    const int64_t n = std::stoll(argv[2]), mean = std::stoll(argv[3]);
    const int ranks = std::stoi(argv[4]);
    const int64_t seq_len = argc > 5 ? std::stoll(argv[5]) : 2048;
    const bool packing = argc > 6 ? std::string(argv[6]) == "packed" : true;
    const bool owned = argc > 7 && std::string(argv[7]) == "owned";
    const fs::path dir = root / ("synthetic-" + std::to_string(n) + "x" + std::to_string(mean));
    if (!fs::is_directory(dir)) {
      const auto t0 = std::chrono::steady_clock::now();
      write_entry(dir, n, mean);
      std::printf("wrote %s in %.1f s (writer peak_rss_mib %.0f)\n", dir.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), proc_mib("/proc/self/status", "VmHWM"));
    }
    uint64_t bytes = 0;
    for (const auto& f : fs::directory_iterator(dir)) bytes += f.file_size();
    std::printf("entry %s: %lld examples, %.0f MiB on disk; %d ranks, seq_len %lld, %s, %s\n", dir.c_str(), static_cast<long long>(n),
                static_cast<double>(bytes) / (1 << 20), ranks, static_cast<long long>(seq_len), packing ? "packed" : "padded",
                owned ? "owned copies" : "mapped");
    std::fflush(stdout);
    std::vector<pid_t> kids;
    for (int r = 0; r < ranks; ++r) {
      pid_t p = fork();
      if (p < 0) throw std::runtime_error("fork failed");
      if (p == 0) std::_Exit(rank_main(dir, r, ranks, seq_len, packing, owned));
      kids.push_back(p);
    }
    int rc = 0;
    for (pid_t p : kids) {
      int status = 0;
      waitpid(p, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 1;
    }
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "chat_data_memory_bench: " << e.what() << "\n";
    return 1;
  }
}
