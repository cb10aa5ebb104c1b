// Drawing a mixture of datasets by weight (mixture.h says how).
#include "trainer/data/mixture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/base/error.h"
#include "trainer/data/rows.h"

namespace air::train {

Mixture mix_datasets(const std::vector<MixturePart>& parts, uint64_t seed) {
  double total_weight = 0;
  size_t total = 0;
  for (const auto& p : parts) {
    if (!(p.weight > 0) || !std::isfinite(p.weight))
      throw Error("dataset " + p.name + ": weight must be a positive number", "set its weight: to the share of the mixture it should have");
    total_weight += p.weight;
    total += p.examples.size();
  }
  if (total == 0) throw Error("the datasets have no usable records");
  std::vector<ExampleSet> sets;
  for (const auto& p : parts) sets.push_back(p.examples);
  Mixture m;
  std::vector<uint32_t> pick;
  size_t first = 0;  // the part's first example in the concatenation
  for (size_t i = 0; i < parts.size(); ++i) {
    const size_t n = parts[i].examples.size();
    if (n == 0) throw Error("dataset " + parts[i].name + " has no usable records", "remove it from datasets:, or fix its records");
    const auto k = std::max<int64_t>(1, std::llround(static_cast<double>(total) * parts[i].weight / total_weight));
    for (int64_t r = 0; r < k / static_cast<int64_t>(n); ++r)
      for (size_t j = 0; j < n; ++j) pick.push_back(static_cast<uint32_t>(first + j));
    if (const size_t rest = static_cast<size_t>(k % static_cast<int64_t>(n)); rest > 0) {
      std::vector<uint32_t> order(n);
      for (size_t j = 0; j < n; ++j) order[j] = static_cast<uint32_t>(j);
      seeded_shuffle(order, seed * 1000033ull + 7919ull * (i + 1));
      order.resize(rest);
      std::sort(order.begin(), order.end());  // kept in file order; the epoch shuffles them
      for (uint32_t j : order) pick.push_back(static_cast<uint32_t>(first + j));
    }
    m.drawn.push_back(k);
    char line[256];
    std::snprintf(line, sizeof line, "%s%s: %zu examples, weight %g -> %lld (%.1f%%, %.2fx)", m.describe.empty() ? "mixture: " : "; ",
                  parts[i].name.c_str(), n, parts[i].weight, static_cast<long long>(k),
                  100.0 * parts[i].weight / total_weight, static_cast<double>(k) / static_cast<double>(n));
    m.describe += line;
    first += n;
  }
  m.examples = ExampleSet::concat(sets).select(std::move(pick));
  return m;
}

}  // namespace air::train
