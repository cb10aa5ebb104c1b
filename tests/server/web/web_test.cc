// The run page's server side: metric downsampling (min/max/first/last per bucket of rows), the log line
// index (ranges of a growing file, search, error and fatal patterns), and the embedded page's files.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "server/web/log_lines.h"
#include "server/web/sample.h"
#include "server/web/ui.h"

namespace fs = std::filesystem;
using namespace air::server;

namespace {

struct TempFile {
  std::string path;
  TempFile() {
    char t[] = "/tmp/air-web-test-XXXXXX";
    int fd = ::mkstemp(t);
    ::close(fd);
    path = t;
  }
  ~TempFile() { fs::remove(path); }
  uint64_t append(const std::string& s) {
    std::ofstream(path, std::ios::app | std::ios::binary) << s;
    return fs::file_size(path);
  }
};

std::vector<SeriesPoint> series(size_t n) {
  std::vector<SeriesPoint> v;
  for (size_t i = 0; i < n; ++i) v.push_back({static_cast<int64_t>(i), std::sin(static_cast<double>(i) / 50.0), 0});
  return v;
}

}  // namespace

TEST_CASE("downsample keeps every row of a short series") {
  auto idx = downsample(series(100), 800);
  REQUIRE(idx.size() == 100);
  CHECK(idx.front() == 0);
  CHECK(idx.back() == 99);
}

TEST_CASE("downsample keeps each bucket's first, last, min and max: a single spike survives") {
  auto rows = series(200000);
  rows[123457].value = 50.0;   // a spike
  rows[7].value = -40.0;       // a dip
  auto idx = downsample(rows, 800);
  CHECK(idx.size() <= 1600);
  CHECK(idx.size() >= 800);
  CHECK(idx.front() == 0);
  CHECK(idx.back() == rows.size() - 1);
  CHECK(std::find(idx.begin(), idx.end(), size_t{123457}) != idx.end());
  CHECK(std::find(idx.begin(), idx.end(), size_t{7}) != idx.end());
  CHECK(std::is_sorted(idx.begin(), idx.end()));
  CHECK(std::adjacent_find(idx.begin(), idx.end()) == idx.end());
}

TEST_CASE("downsample buckets by row, so many values at one step are not collapsed") {
  std::vector<SeriesPoint> rows;
  for (int i = 0; i < 1000; ++i) rows.push_back({5, static_cast<double>(i % 7 == 0 ? 100 : i % 10), 0});
  auto idx = downsample(rows, 100);
  CHECK(idx.size() > 50);
  bool peak = false;
  for (size_t i : idx) peak |= rows[i].value == 100;
  CHECK(peak);
}

TEST_CASE("downsample ignores NaN for min and max but keeps the bucket") {
  std::vector<SeriesPoint> rows;
  for (int i = 0; i < 40; ++i) rows.push_back({i, i == 3 ? std::nan("") : static_cast<double>(i), 0});
  auto idx = downsample(rows, 4);  // 2 buckets
  CHECK(idx == std::vector<size_t>{0, 19, 20, 39});
}

TEST_CASE("line index reads ranges of a growing log and counts complete lines only") {
  TempFile f;
  LogLineIndex ix;
  uint64_t size = f.append("1700000000000 o zero\n1700000000001 o one\n1700000000002 e two\npartial");
  CHECK(ix.total_lines(f.path, size) == 3);
  auto r = ix.read(f.path, size, 1, 5);
  CHECK(r.start == 1);
  CHECK(r.lines == std::vector<std::string>{"1700000000001 o one", "1700000000002 e two"});
  size = f.append(" end\n1700000000004 o four\n");
  r = ix.read(f.path, size, 3, 10);
  CHECK(r.total_lines == 5);
  CHECK(r.lines == std::vector<std::string>{"partial end", "1700000000004 o four"});
  CHECK(ix.read(f.path, size, 99, 10).lines.empty());
}

TEST_CASE("line index finds text forward and backward, errors and fatal lines") {
  TempFile f;
  std::string s;
  for (int i = 0; i < 50000; ++i) {
    std::string text = i == 100 ? "step 100 loss 2.5" : i == 30000 ? "RuntimeError: CUDA out of memory. Tried to allocate"
                     : i == 40000 ? "[Rank 1] Watchdog: NCCL operation timed out after 600000 ms" : "step " + std::to_string(i);
    s += "1700000000000 o " + text + "\n";
  }
  uint64_t size = f.append(s);
  LogLineIndex ix;
  CHECK(ix.find(f.path, size, 0, true, LineMatch::kText, "LOSS") == 100);
  CHECK(ix.find(f.path, size, 101, true, LineMatch::kText, "loss") == -1);
  CHECK(ix.find(f.path, size, 49999, false, LineMatch::kText, "loss") == 100);
  CHECK(ix.find(f.path, size, 0, true, LineMatch::kText, "1700000000000") == -1);  // the time prefix is not text
  CHECK(ix.find(f.path, size, 0, true, LineMatch::kError, "") == 30000);
  CHECK(ix.find(f.path, size, 30001, true, LineMatch::kFatal, "") == 40000);
  CHECK(line_matches("torch.OutOfMemoryError: CUDA out of memory", LineMatch::kFatal));
  CHECK(line_matches("NCCL watchdog thread terminated: Timeout", LineMatch::kFatal));
  CHECK_FALSE(line_matches("step 5 loss 1.0", LineMatch::kError));
}

TEST_CASE("the page's files are embedded: index.html loads app.js as a module, no other origin") {
  const WebAsset* index = find_web_asset("index.html");
  REQUIRE(index != nullptr);
  std::string html(reinterpret_cast<const char*>(index->data), index->size);
  CHECK(html.find("src=\"/web/app.js\"") != std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // nothing from elsewhere
  for (const char* name : {"app.js", "api.js", "logview.js", "metric_chart.js", "charts_panel.js", "run_page.js", "runs_page.js", "style.css"})
    CHECK(find_web_asset(name) != nullptr);
  CHECK(find_web_asset("../CMakeLists.txt") == nullptr);
}
