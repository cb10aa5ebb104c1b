// Downloads one file of a hub repo with air_hub into an empty cache and prints the time and MB/s
// (bench/hub_download.sh runs it against the hub fixture beside `curl -o`).
// usage: hub_bench ENDPOINT CACHE_DIR ORG/NAME FILE
#include <chrono>
#include <cstdio>
#include <iostream>

#include "hub/hub.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: hub_bench ENDPOINT CACHE_DIR ORG/NAME FILE\n";
    return 2;
  }
  air::hub::Options o;
  o.endpoint = argv[1];
  o.cache_dir = argv[2];
  const std::string file = argv[4];
  try {
    auto t0 = std::chrono::steady_clock::now();
    auto s = air::hub::download_snapshot(air::hub::parse_repo(argv[3], air::hub::RepoType::kModel),
                                         [&](const std::string& f) { return f == file; }, o);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%.3f s %.1f MB/s %llu bytes\n", secs, static_cast<double>(s.bytes_downloaded) / 1e6 / secs,
                static_cast<unsigned long long>(s.bytes_downloaded));
  } catch (const air::hub::HubError& e) {
    std::cerr << "hub_bench: error: " << e.what() << "\n  hint: " << e.hint() << "\n";
    return 1;
  }
}
