// Optimal-string-alignment distance: small inputs (YAML keys), so a plain O(n*m) table is enough.
#include "core/base/edit_distance.h"

#include <algorithm>
#include <cctype>

namespace air {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

int edit_distance(std::string_view a, std::string_view b, int max_distance) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (size_t i = 1; i <= n; ++i) {
    int row_best = d[i][0];
    for (size_t j = 1; j <= m; ++j) {
      int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      int v = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) v = std::min(v, d[i - 2][j - 2] + 1);
      d[i][j] = v;
      row_best = std::min(row_best, v);
    }
    if (max_distance > 0 && row_best > max_distance) return max_distance + 1;
  }
  return d[n][m];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  for (const auto& c : candidates) {
    if (iequals(word, c)) return c;
  }
  const int limit = std::clamp(static_cast<int>(word.size()) / 3, 1, 3);
  std::string best;
  int best_distance = limit + 1;
  for (const auto& c : candidates) {
    int dist = edit_distance(word, c, limit);
    if (dist < best_distance) {
      best_distance = dist;
      best = c;
    }
  }
  return best;
}

}  // namespace air
