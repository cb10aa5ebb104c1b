// Min/max/first/last bucketing of metric rows (server/web/sample.h).
#include "server/web/sample.h"

#include <algorithm>
#include <cmath>

namespace air::server {

std::vector<size_t> downsample(const std::vector<SeriesPoint>& rows, size_t points) {
  const size_t n = rows.size();
  std::vector<size_t> out;
  if (n <= std::max<size_t>(points, 1)) {
    out.resize(n);
    for (size_t i = 0; i < n; ++i) out[i] = i;
    return out;
  }
  const size_t buckets = std::max<size_t>(points / 2, 1);
  out.reserve(buckets * 4);
  for (size_t b = 0; b < buckets; ++b) {
    size_t lo = b * n / buckets, hi = (b + 1) * n / buckets;
    if (lo >= hi) continue;
    size_t mn = lo, mx = lo;
    bool any = false;
    for (size_t i = lo; i < hi; ++i) {
      double v = rows[i].value;
      if (std::isnan(v)) continue;
      if (!any || v < rows[mn].value) mn = i;
      if (!any || v > rows[mx].value) mx = i;
      any = true;
    }
    size_t pick[4] = {lo, std::min(mn, mx), std::max(mn, mx), hi - 1};
    for (size_t p : pick)
      if (out.empty() || out.back() < p) out.push_back(p);
  }
  return out;
}

}  // namespace air::server
