// Flat example storage and an epoch's rows: an owned set and a mapped entry hold the same examples, a
// selection is a view, and the rows cover every example once, packed within max_seq_len, by seed.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>

#include "trainer/data/rows.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

std::vector<Example> some_examples(int n) {
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    Example e;
    for (int t = 0; t < 3 + (i * 7) % 11; ++t) e.ids.push_back(i * 100 + t);
    if (i % 3 == 0) e.prompt_len = 2;  // Alpaca-like: trained from prompt_len on
    else
      for (size_t t = 0; t < e.ids.size(); ++t) e.mask.push_back(t % 2);
    out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_CASE("example set: written, mapped and owned forms hold the same examples") {
  const fs::path dir = fs::temp_directory_path() / ("air-example-set-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto examples = some_examples(40);
  ExampleSetWriter w(dir.string());
  for (const auto& e : examples) w.add(e);
  w.finish();
  CHECK(w.examples() == 40);
  ExampleSet mapped = ExampleSet::map_entry(dir.string()), owned(examples);
  CHECK(mapped.mapped());
  CHECK_FALSE(owned.mapped());
  REQUIRE(mapped.size() == 40);
  REQUIRE(owned.size() == 40);
  for (size_t i = 0; i < examples.size(); ++i) {
    for (const ExampleSet* s : {&mapped, &owned}) {
      const Example c = s->copy(i);
      CHECK(c.ids == examples[i].ids);
      CHECK(c.mask == examples[i].mask);
      CHECK(c.prompt_len == examples[i].prompt_len);
      const ExampleRef r = (*s)[i];
      for (int64_t t = 0; t < r.size; ++t) CHECK(r.trained(t) == examples[i].trained(static_cast<size_t>(t)));
      CHECK(r.targets_within(5) == examples[i].targets_within(5));
    }
  }
  // A selection of a selection maps back to the original examples.
  ExampleSet odd = mapped.select({1, 3, 5, 7}), pick = odd.select({3, 0});
  REQUIRE(pick.size() == 2);
  CHECK(pick.copy(0).ids == examples[7].ids);
  CHECK(pick.copy(1).ids == examples[1].ids);
  fs::remove_all(dir);
}

TEST_CASE("rows: every example once per epoch, the order by seed and epoch, packed rows within max_seq_len") {
  ExampleSet set(some_examples(200));
  for (int mode : {0, 1, 2}) {  // padded, packed best fit, packed greedy
    const bool packing = mode > 0;
    RowOptions o{24, packing, 7, mode == 1};
    EpochRows a(set, o, 0), b(set, o, 0), c(set, o, 1);
    std::multiset<uint32_t> seen;
    std::vector<uint32_t> order_a, order_b, order_c;
    for (size_t r = 0; r < a.size(); ++r) {
      int64_t used = 0;
      for (uint32_t i : a[r]) {
        seen.insert(i);
        order_a.push_back(i);
        used += std::min<int64_t>(set.length(i), 24);
      }
      if (packing) CHECK(used <= 24);
      else CHECK(a[r].size() == 1);
      CHECK(row_real_tokens(set, a[r], 24) == used);
    }
    for (size_t r = 0; r < b.size(); ++r)
      for (uint32_t i : b[r]) order_b.push_back(i);
    for (size_t r = 0; r < c.size(); ++r)
      for (uint32_t i : c[r]) order_c.push_back(i);
    CHECK(seen.size() == 200);
    CHECK(std::set<uint32_t>(seen.begin(), seen.end()).size() == 200);
    CHECK(order_a == order_b);
    CHECK(order_a != order_c);
    if (packing) CHECK(a.size() < 200);
    else CHECK(a.size() == 200);
  }
}

TEST_CASE("rows: best-fit packing fills rows tighter than greedy, and as tight as the lengths allow") {
  // Lengths 3..13 over 200 examples: best fit leaves less room than greedy in shuffled order.
  ExampleSet set(some_examples(200));
  RowOptions bfd{24, true, 7, true}, greedy{24, true, 7, false};
  EpochRows a(set, bfd, 0), g(set, greedy, 0);
  int64_t total = 0;
  for (size_t i = 0; i < set.size(); ++i) total += std::min<int64_t>(set.length(i), 24);
  CHECK(a.size() < g.size());
  CHECK(packing_fill(set, a, 24) > packing_fill(set, g, 24));
  CHECK(packing_fill(set, a, 24) == Approx(static_cast<double>(total) / (24.0 * static_cast<double>(a.size()))));
  CHECK(static_cast<int64_t>(a.size()) <= (total + 23) / 24 + 2);  // within two rows of the bound
  // Lengths 6, 5, 4, 3, 2 in 10-token rows: best fit decreasing makes two full rows ({6,4}, {5,3,2}).
  std::vector<Example> five;
  for (int n : {3, 6, 2, 5, 4}) {
    Example e;
    for (int t = 0; t < n; ++t) e.ids.push_back(t + 1);
    e.prompt_len = 1;
    five.push_back(e);
  }
  ExampleSet fs5(five);
  EpochRows r(fs5, RowOptions{10, true, 1, true}, 0);
  REQUIRE(r.size() == 2);
  for (size_t k = 0; k < 2; ++k) CHECK(row_real_tokens(fs5, r[k], 10) == 10);
  CHECK(packing_fill(fs5, r, 10) == 1.0);
}
