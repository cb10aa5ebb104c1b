// A mixture of datasets: shares by weight, every example of a part used before any repeats, the draw fixed
// by seed, views over the parts' storage.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/base/error.h"
#include "trainer/data/dataset.h"
#include "trainer/data/mixture.h"

using namespace air::train;

namespace {

// n examples whose first id says which part and which example they are.
ExampleSet part(int which, int n) {
  std::vector<Example> v;
  for (int i = 0; i < n; ++i) {
    Example e;
    e.ids = {which * 1000 + i, 1, 2};
    e.mask = {0, 1, 1};
    v.push_back(e);
  }
  return ExampleSet(v);
}

std::map<int, std::vector<int>> drawn(const ExampleSet& s) {
  std::map<int, std::vector<int>> out;
  for (size_t i = 0; i < s.size(); ++i) out[s[i].ids[0] / 1000].push_back(s[i].ids[0] % 1000);
  return out;
}

}  // namespace

TEST_CASE("mixture: weights are the shares of the examples, a small part repeats whole, a large one is sampled") {
  // 100 + 20 examples, weights 1 and 3: 120 drawn, 30 from a (sampled), 90 from b (4 full passes + 10).
  Mixture m = mix_datasets({{"a", part(1, 100), 1}, {"b", part(2, 20), 3}}, 42);
  REQUIRE(m.examples.size() == 120);
  CHECK(m.drawn == std::vector<int64_t>{30, 90});
  auto d = drawn(m.examples);
  REQUIRE(d[1].size() == 30);
  REQUIRE(d[2].size() == 90);
  CHECK(std::set<int>(d[1].begin(), d[1].end()).size() == 30);  // sampled without repetition
  std::map<int, int> times;
  for (int i : d[2]) ++times[i];
  CHECK(times.size() == 20);
  for (auto [i, k] : times) CHECK((k == 4 || k == 5));  // every example 4 times, 10 of them a 5th
  CHECK(m.describe == "mixture: a: 100 examples, weight 1 -> 30 (25.0%, 0.30x); b: 20 examples, weight 3 -> 90 (75.0%, 4.50x)");
  // Masks come through the views.
  CHECK(m.examples[0].trained(1));
  CHECK_FALSE(m.examples[0].trained(0));
}

TEST_CASE("mixture: the draw is fixed by the seed, and another seed draws other examples") {
  auto a = mix_datasets({{"a", part(1, 50), 1}, {"b", part(2, 50), 1}}, 7);
  auto b = mix_datasets({{"a", part(1, 50), 1}, {"b", part(2, 50), 1}}, 7);
  auto c = mix_datasets({{"a", part(1, 50), 1}, {"b", part(2, 50), 1}}, 8);
  CHECK(drawn(a.examples) == drawn(b.examples));
  // Equal weights and sizes: everything once, whatever the seed.
  CHECK(drawn(a.examples) == drawn(c.examples));
  auto d = mix_datasets({{"a", part(1, 50), 1}, {"b", part(2, 50), 3}}, 7);
  auto e = mix_datasets({{"a", part(1, 50), 1}, {"b", part(2, 50), 3}}, 8);
  CHECK(drawn(d.examples)[1] != drawn(e.examples)[1]);  // a is sampled (25 of 50): the seed decides which
}

TEST_CASE("mixture: a weight that is not positive, or an empty part, is an error naming the dataset") {
  CHECK_THROWS_WITH(mix_datasets({{"a", part(1, 5), 0}}, 1), "dataset a: weight must be a positive number");
  CHECK_THROWS_WITH(mix_datasets({{"a", part(1, 5), 1}, {"b", ExampleSet(std::vector<Example>{}), 1}}, 1),
                    "dataset b has no usable records");
}

TEST_CASE("progress: the terminal line while tokenizing has counts, rate and ETA") {
  CHECK(progress_line(16384, 1.0 / 6, 2.0) == "tokenizing: 16,384 records (16%), 8,192 records/s, ETA 10s");
  CHECK(progress_line(1000, 0.001, 1.0) == "tokenizing: 1,000 records (0%), 1,000 records/s, ETA 16m39s");
  CHECK(progress_line(10, 0.000001, 1.0) == "tokenizing: 10 records (0%), 10 records/s, ETA 277h46m");
  CHECK(progress_line(5, 1.0, 1.0) == "tokenizing: 5 records (100%), 5 records/s");
}
