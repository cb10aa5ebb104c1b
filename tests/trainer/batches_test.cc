// Data: Alpaca reading and errors, the reference prompt format, response-only targets, padded and packed
// rows, seeded order, and rank sharding that keeps the global batch the same at any world size.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/trainer/model/test_util.h"
#include "trainer/batches.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

std::vector<Example> examples(int n) {
  auto enc = testing::byte_encoder();
  std::vector<Example> out;
  for (int i = 0; i < n; ++i)
    out.push_back(make_example({"Say " + std::to_string(i), i % 3 ? "" : "ctx", std::string(1 + i % 5, 'x')}, enc));
  return out;
}

std::string write_file(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("air_data_test_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

TEST_CASE("data: the prompt format is the reference script's") {
  REQUIRE(format_prompt({"Add.", "2 and 3", "5"}) == "### Instruction:\nAdd.\n\n### Input:\n2 and 3\n\n### Response:\n");
  REQUIRE(format_prompt({"Hi.", "", "Hello"}) == "### Instruction:\nHi.\n\n### Response:\n");
}

TEST_CASE("data: an example is bos + prompt + response + eos, trained from the response on") {
  auto enc = testing::byte_encoder();
  Example e = make_example({"Hi.", "", "ok"}, enc);
  const std::string prompt = "### Instruction:\nHi.\n\n### Response:\n";
  REQUIRE(e.ids.size() == 1 + prompt.size() + 2 + 1);
  REQUIRE(e.ids.front() == 1);
  REQUIRE(e.ids.back() == 2);
  REQUIRE(e.prompt_len == static_cast<int64_t>(1 + prompt.size()));
  REQUIRE(e.ids[static_cast<size_t>(e.prompt_len)] == 'o' + 3);
}

TEST_CASE("data: padded rows mask the prompt and the padding (-100) and shift targets by one") {
  auto enc = testing::byte_encoder();
  Example e = make_example({"Q", "", "ab"}, enc);
  DataOptions o;
  o.max_seq_len = 48;
  o.micro_batch_size = 1;
  DataLoader dl({e}, o);
  StepBatch s = dl.next();
  const MicroBatch& mb = s.micro.at(0);
  const int64_t n = static_cast<int64_t>(e.ids.size());
  REQUIRE(mb.real_tokens == n);
  REQUIRE(mb.target_tokens == 3);  // 'a', 'b', eos
  REQUIRE(s.global_target_tokens == 3);
  for (int64_t t = 0; t < 48; ++t) {
    int64_t expect = (t >= e.prompt_len - 1 && t < n - 1) ? e.ids[static_cast<size_t>(t + 1)] : -100;
    REQUIRE(mb.targets[0][t].item<int64_t>() == expect);
    REQUIRE(mb.input_ids[0][t].item<int64_t>() == (t < n ? e.ids[static_cast<size_t>(t)] : 0));
    REQUIRE(mb.positions[0][t].item<int64_t>() == t);
  }
  REQUIRE_FALSE(mb.segments.defined());
}

TEST_CASE("data: packed rows restart positions per example and never predict across examples") {
  auto ex = examples(12);
  DataOptions o;
  o.max_seq_len = 128;
  o.micro_batch_size = 2;
  o.packing = true;
  DataLoader dl(ex, o);
  REQUIRE(dl.rows_per_epoch() < 12);
  MicroBatch mb = dl.next().micro.at(0);
  auto seg = mb.segments, pos = mb.positions, tgt = mb.targets;
  for (int64_t b = 0; b < 2; ++b) {
    int examples_in_row = 0;
    for (int64_t t = 0; t < 128; ++t) {
      int s = seg[b][t].item<int>();
      if (t == 0 || s != seg[b][t - 1].item<int>()) {
        REQUIRE(pos[b][t].item<int64_t>() == 0);
        if (s > 0) ++examples_in_row;
      }
      // The last token of an example (its eos) has no target: the next token belongs to another example.
      if (t + 1 < 128 && seg[b][t + 1].item<int>() != s) REQUIRE(tgt[b][t].item<int64_t>() == -100);
      if (s == 0) REQUIRE(tgt[b][t].item<int64_t>() == -100);
    }
    REQUIRE(examples_in_row >= 2);
  }
}

TEST_CASE("data: the order depends only on the seed") {
  DataOptions o;
  o.max_seq_len = 64;
  o.micro_batch_size = 4;
  DataLoader a(examples(20), o), b(examples(20), o);
  o.seed = 43;
  DataLoader c(examples(20), o);
  at::Tensor x = a.next().micro[0].input_ids, y = b.next().micro[0].input_ids, z = c.next().micro[0].input_ids;
  REQUIRE(at::equal(x, y));
  REQUIRE_FALSE(at::equal(x, z));
}

TEST_CASE("data: ranks read disjoint rows and the global batch is the same at any world size") {
  for (bool packing : {false, true}) {
    DataOptions one;
    one.max_seq_len = 64;
    one.micro_batch_size = 6;
    one.packing = packing;
    DataLoader single(examples(40), one);
    StepBatch ref = single.next();
    std::multiset<std::vector<int64_t>> ref_rows;
    for (int64_t r = 0; r < 6; ++r) {
      at::Tensor row = ref.micro[0].input_ids[r].contiguous();
      ref_rows.insert(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + 64));
    }
    for (int world : {2, 3}) {
      std::multiset<std::vector<int64_t>> got;
      for (int rank = 0; rank < world; ++rank) {
        DataOptions o = one;
        o.world_size = world;
        o.rank = rank;
        o.micro_batch_size = 1;
        o.grad_accum = 6 / world;
        DataLoader dl(examples(40), o);
        StepBatch s = dl.next();
        REQUIRE(s.global_target_tokens == ref.global_target_tokens);
        REQUIRE(s.global_real_tokens == ref.global_real_tokens);
        for (const auto& mb : s.micro) {
          at::Tensor row = mb.input_ids[0].contiguous();
          got.insert(std::vector<int64_t>(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + 64));
        }
      }
      REQUIRE(got == ref_rows);
    }
  }
}

TEST_CASE("data: an epoch boundary reshuffles and keeps going") {
  DataOptions o;
  o.max_seq_len = 32;
  o.micro_batch_size = 3;
  DataLoader dl(examples(5), o);
  StepBatch s1 = dl.next(), s2 = dl.next();
  REQUIRE(s1.epoch == 0);
  REQUIRE(s2.epoch == 0);  // rows 3..5 (the last spills into epoch 1)
  REQUIRE(dl.position().epoch == 1);
}

TEST_CASE("data: Alpaca JSON and JSONL are read, and bad records are named") {
  auto json = write_file("a.json", R"([{"instruction":"i","input":"","output":"o"},{"instruction":"j","output":"p"}])");
  auto recs = read_alpaca(json);
  REQUIRE(recs.size() == 2);
  REQUIRE(recs[1].instruction == "j");
  REQUIRE(recs[1].input.empty());
  auto jsonl = write_file("b.jsonl", "{\"instruction\":\"i\",\"output\":\"o\"}\n\n{\"instruction\":\"i\"}\n");
  REQUIRE_THROWS_WITH(read_alpaca(jsonl), Catch::Contains("b.jsonl:3: missing 'output'"));
  auto bad = write_file("c.json", R"([{"instruction":"i","output":7}])");
  REQUIRE_THROWS_WITH(read_alpaca(bad), Catch::Contains("record 0: 'output' must be a string"));
  auto broken = write_file("d.json", "[{");
  REQUIRE_THROWS_WITH(read_alpaca(broken), Catch::Contains("not valid JSON"));
  for (const auto& p : {json, jsonl, bad, broken}) fs::remove(p);
}

TEST_CASE("data: the repository's example dataset reads and every record has a response") {
  auto recs = read_alpaca(std::string(AIR_SOURCE_DIR) + "/examples/data/alpaca_tiny.json");
  REQUIRE(recs.size() >= 150);
  for (const auto& r : recs) {
    REQUIRE_FALSE(r.instruction.empty());
    REQUIRE_FALSE(r.output.empty());
  }
}
