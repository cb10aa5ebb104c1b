// safetensors: round trips in every dtype we use, sharded writing with an index, and clear errors for
// truncated, corrupt and inconsistent files.

#include "tests/trainer/catch_torch.h"  // first: Catch2's CHECK, not libtorch's
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trainer/checkpoint/safetensors.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("air_st_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_raw(const fs::path& p, const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  std::ofstream(p, std::ios::binary) << out << header << data;
}

}  // namespace

TEST_CASE("safetensors: round trip of bf16, fp16, fp32 and int64 tensors") {
  fs::path d = temp_dir("rt");
  std::vector<std::pair<std::string, at::Tensor>> ts = {
      {"a.bf16", at::randn({3, 5}).to(at::kBFloat16)},
      {"b.f16", at::randn({7}).to(at::kHalf)},
      {"c.f32", at::randn({2, 3, 4})},
      {"d.i64", at::arange(10, at::kLong)},
      {"e.scalar", at::scalar_tensor(3.5)}};
  write_safetensors((d / "x.safetensors").string(), ts);
  auto f = SafetensorsFile::open((d / "x.safetensors").string());
  REQUIRE(f->entries().size() == ts.size());
  REQUIRE(f->metadata().at("format") == "pt");
  for (auto& [name, t] : ts) {
    at::Tensor back = f->get(name);
    REQUIRE(back.scalar_type() == t.scalar_type());
    REQUIRE(at::equal(back, t));
  }
  // The header is padded so the data section starts 8-byte aligned, as transformers writes it.
  std::string bytes = read_all(d / "x.safetensors");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[static_cast<size_t>(i)])) << (8 * i);
  REQUIRE((8 + hlen) % 8 == 0);
  fs::remove_all(d);
}

TEST_CASE("safetensors: a sharded writer splits by size and writes an index the reader follows") {
  fs::path d = temp_dir("shard");
  std::vector<TensorSpec> specs;
  std::vector<at::Tensor> values;
  for (int i = 0; i < 5; ++i) {
    specs.push_back({"w" + std::to_string(i), at::kBFloat16, {10, 10}});
    values.push_back(at::randn({10, 10}));
  }
  ShardedWriter w(d.string(), specs, 450);  // 200 bytes each: two per shard
  for (int i = 0; i < 5; ++i) w.write(specs[static_cast<size_t>(i)].name, values[static_cast<size_t>(i)]);
  w.finish();
  REQUIRE(w.num_shards() == 3);
  REQUIRE(fs::exists(d / "model-00003-of-00003.safetensors"));
  auto ws = WeightSet::open_dir(d.string());
  REQUIRE(ws.names().size() == 5);
  REQUIRE(at::equal(ws.get("w4"), values[4].to(at::kBFloat16)));
  REQUIRE(ws.file_of("w0").find("model-00001-of-00003.safetensors") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("safetensors: the writer refuses out-of-order tensors and wrong shapes") {
  fs::path d = temp_dir("order");
  ShardedWriter w(d.string(), {{"a", at::kFloat, {2}}, {"b", at::kFloat, {3}}}, 1000);
  REQUIRE_THROWS_WITH(w.write("b", at::zeros({3})), Catch::Contains("'b' written out of order"));
  REQUIRE_THROWS_WITH(w.write("a", at::zeros({3})), Catch::Contains("'a' has shape [3], expected [2]"));
  w.write("a", at::zeros({2}));
  REQUIRE_THROWS_WITH(w.finish(), Catch::Contains("only 1 of 2"));
  fs::remove_all(d);
}

TEST_CASE("safetensors: truncated and corrupt files give errors naming the file and tensor") {
  fs::path d = temp_dir("bad");
  const std::string p = (d / "m.safetensors").string();
  write_safetensors(p, {{"layer.weight", at::randn({16, 16})}});
  std::string good = read_all(p);

  std::ofstream(p, std::ios::binary) << good.substr(0, good.size() - 10);
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains(p + ": tensor 'layer.weight'") && Catch::Contains("truncated"));

  std::ofstream(p, std::ios::binary) << good.substr(0, 5);
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("too short"));

  std::string huge = good;
  huge[5] = '\x7f';
  std::ofstream(p, std::ios::binary) << huge;
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("header length"));

  write_raw(p, "{not json", "");
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("not a JSON object"));

  write_raw(p, R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})", std::string(8, '\0'));
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("tensor 't'") && Catch::Contains("needs 16 bytes"));

  write_raw(p, R"({"t":{"dtype":"Q4","shape":[4],"data_offsets":[0,4]}})", std::string(4, '\0'));
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("unsupported dtype 'Q4'"));

  write_raw(p, R"({"t":{"dtype":"F32","shape":[1]}})", std::string(4, '\0'));
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("needs dtype, shape and data_offsets"));
  fs::remove_all(d);
}

TEST_CASE("safetensors: an index that names a missing shard or tensor is an error") {
  fs::path d = temp_dir("index");
  write_safetensors((d / "model-00001-of-00002.safetensors").string(), {{"a", at::zeros({2})}});
  std::ofstream(d / "model.safetensors.index.json")
      << R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  REQUIRE_THROWS_WITH(WeightSet::open_dir(d.string()), Catch::Contains("model-00002-of-00002.safetensors (for tensor 'b') but the file is missing"));
  std::ofstream(d / "model.safetensors.index.json") << R"({"weight_map":{"c":"model-00001-of-00002.safetensors"}})";
  REQUIRE_THROWS_WITH(WeightSet::open_dir(d.string()), Catch::Contains("holds tensor 'c' but it does not"));
  fs::remove(d / "model.safetensors.index.json");
  fs::remove(d / "model-00001-of-00002.safetensors");
  REQUIRE_THROWS_WITH(WeightSet::open_dir(d.string()), Catch::Contains("expected model.safetensors"));
  fs::remove_all(d);
}

TEST_CASE("safetensors: a shape whose byte count overflows 64 bits is refused, not wrapped to 0 bytes") {
  fs::path d = temp_dir("overflow");
  const std::string p = (d / "m.safetensors").string();
  // 2^62 x 4 elements of 4 bytes wrap to 0 bytes in 64 bits: the old check accepted them over no data.
  write_raw(p, R"({"t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", "");
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("tensor 't'") && Catch::Contains("is too large"));
  std::ofstream(p, std::ios::binary | std::ios::trunc).close();
  REQUIRE_THROWS_WITH(SafetensorsFile::open(p), Catch::Contains("0 bytes, too short"));
  fs::remove_all(d);
}
