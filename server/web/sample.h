// Downsampling of a metric series for the run page's charts: each bucket of rows keeps its first, last,
// minimum and maximum point, so spikes survive and the line's shape is exact at chart resolution.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace air::server {

struct SeriesPoint {
  int64_t step = 0;
  double value = 0;  // may be NaN or +-infinity
  int64_t timestamp = 0;
};

// The indexes (ascending) of the rows of `rows` to draw with about `points` pixels: every row when there
// are at most `points`; else `points / 2` buckets of consecutive rows (by row, not by step, so many values
// logged at one step are not collapsed into one), each giving its first, min, max and last row.
std::vector<size_t> downsample(const std::vector<SeriesPoint>& rows, size_t points);

}  // namespace air::server
