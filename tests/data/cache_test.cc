// The tokenized-data cache: miss then hit (nothing tokenized the second time), new entries for a changed
// template, data or setting, and a writer killed before its rename leaves no entry (a real child process).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/error.h"
#include "trainer/data/cache.h"
#include "trainer/tokenizer/tokenizer.h"

using namespace air::train;
namespace fs = std::filesystem;

namespace {

const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ '<' + m['role'] + '>\\n' + m['content'] + eos_token + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<assistant>\\n' }}{% endif %}";

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("air-cache-test-" + std::to_string(::getpid()));
  std::string tok_path = std::string(AIR_TEST_DATA_DIR) + "/../examples/tiny_model/tokenizer.json";
  std::shared_ptr<const Tokenizer> tok = std::make_shared<const Tokenizer>(Tokenizer::from_file(tok_path));
  TextEncoder enc;
  std::string data;
  Fixture() {
    fs::remove_all(dir);
    fs::create_directories(dir / "cache");
    enc.tokenizer = tok;
    enc.encode = [t = tok](const std::string& s) { return t->encode(s, false); };
    enc.bos = tok->token_to_id("<|begin_of_text|>");
    enc.eos = *tok->token_to_id("<|end_of_text|>");
    data = (dir / "conv.jsonl").string();
    std::ofstream out(data);
    for (int i = 0; i < 50; ++i)
      out << R"({"messages": [{"role": "user", "content": "question )" << i << R"("}, {"role": "assistant", "content": "answer )" << i
          << R"("}]})" << "\n";
  }
  ~Fixture() { fs::remove_all(dir); }
  ChatTemplate chat(const std::string& extra = "") const {
    return ChatTemplate::from_source(extra + kTemplate, "t", {{"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|end_of_text|>"}}, std::nullopt);
  }
  CacheSettings cache() const { return {(dir / "cache").string(), tok_path}; }
  size_t entries() const {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir / "cache"))
      n += e.is_directory() && e.path().filename().string().find(".tmp-") == std::string::npos;
    return n;
  }
};

}  // namespace

TEST_CASE("cache: a miss tokenizes and writes an entry - the next load reads it and tokenizes nothing") {
  Fixture f;
  ChatTemplate t = f.chat();
  ExampleBuilder b(f.enc, &t, TrainOn::kAssistant);
  DataSettings s;
  std::ostringstream log1, log2;
  CachedData first = load_examples_cached({f.data}, s, b, f.cache(), log1);
  CHECK(log1.str().find("data cache: miss, tokenized 50 records") != std::string::npos);
  CHECK(f.entries() == 1);
  CachedData second = load_examples_cached({f.data}, s, b, f.cache(), log2);
  CHECK(log2.str().find("data cache: hit") != std::string::npos);
  CHECK(log2.str().find("nothing tokenized") != std::string::npos);
  CHECK(log2.str().find("data: ") == std::string::npos);  // no file was read
  // Both read the entry through a mapping (the writer too, once it is in place), and hold exactly what
  // tokenizing without the cache gives.
  CHECK(first.examples.mapped());
  CHECK(second.examples.mapped());
  std::ostringstream log3;
  LoadedData direct = load_examples({f.data}, s, b, log3);
  REQUIRE(direct.examples.size() == 50);
  REQUIRE(second.examples.size() == direct.examples.size());
  REQUIRE(first.examples.size() == direct.examples.size());
  for (size_t i = 0; i < direct.examples.size(); ++i) {
    CHECK(second.examples.copy(i).ids == direct.examples[i].ids);
    CHECK(second.examples.copy(i).mask == direct.examples[i].mask);
    CHECK(first.examples.copy(i).ids == direct.examples[i].ids);
  }
  CHECK(second.stats.tokens == first.stats.tokens);
  CHECK(second.stats.trained_tokens == first.stats.trained_tokens);
}

TEST_CASE("cache: a changed template, setting or data file makes a new entry") {
  Fixture f;
  ChatTemplate t = f.chat(), t2 = f.chat("{# v2 #}");
  DataSettings s;
  std::ostringstream log;
  load_examples_cached({f.data}, s, ExampleBuilder(f.enc, &t, TrainOn::kAssistant), f.cache(), log);
  load_examples_cached({f.data}, s, ExampleBuilder(f.enc, &t2, TrainOn::kAssistant), f.cache(), log);
  CHECK(f.entries() == 2);
  load_examples_cached({f.data}, s, ExampleBuilder(f.enc, &t, TrainOn::kAll), f.cache(), log);
  CHECK(f.entries() == 3);
  std::ofstream(f.data, std::ios::app) << R"({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]})" << "\n";
  load_examples_cached({f.data}, s, ExampleBuilder(f.enc, &t, TrainOn::kAssistant), f.cache(), log);
  CHECK(f.entries() == 4);
}

TEST_CASE("cache: a writer killed before its entry is complete leaves no entry, and the next one writes it") {
  Fixture f;
  ChatTemplate t = f.chat();
  ExampleBuilder b(f.enc, &t, TrainOn::kAssistant);
  DataSettings s;
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // dies where a kill would hurt most: the entry's files written, not yet renamed
    ::setenv("AIR_DATA_CACHE_FAULT", "before_rename", 1);
    std::ostringstream log;
    load_examples_cached({f.data}, s, b, f.cache(), log);
    std::_Exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(f.entries() == 0);
  std::ostringstream log;
  load_examples_cached({f.data}, s, b, f.cache(), log);
  CHECK(log.str().find("data cache: miss") != std::string::npos);
  CHECK(f.entries() == 1);
  for (const auto& e : fs::directory_iterator(f.dir / "cache"))  // the dead writer's folder is gone
    CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
}

TEST_CASE("cache: with data_cache_dir off the examples are owned, not mapped, and the same") {
  Fixture f;
  ChatTemplate t = f.chat();
  ExampleBuilder b(f.enc, &t, TrainOn::kAssistant);
  DataSettings s;
  std::ostringstream log;
  CachedData off = load_examples_cached({f.data}, s, b, CacheSettings{"", f.tok_path}, log);
  CachedData on = load_examples_cached({f.data}, s, b, f.cache(), log);
  CHECK_FALSE(off.examples.mapped());
  CHECK(f.entries() == 1);
  REQUIRE(off.examples.size() == on.examples.size());
  for (size_t i = 0; i < on.examples.size(); ++i) CHECK(off.examples.copy(i).ids == on.examples.copy(i).ids);
}

TEST_CASE("cache: a damaged entry is a clear error naming it") {
  Fixture f;
  ChatTemplate t = f.chat();
  ExampleBuilder b(f.enc, &t, TrainOn::kAssistant);
  DataSettings s;
  std::ostringstream log;
  load_examples_cached({f.data}, s, b, f.cache(), log);
  fs::path entry;
  for (const auto& e : fs::directory_iterator(f.dir / "cache"))
    if (e.is_directory()) entry = e.path();
  fs::resize_file(entry / "ids.bin", fs::file_size(entry / "ids.bin") - 8);
  try {
    load_examples_cached({f.data}, s, b, f.cache(), log);
    FAIL("no error");
  } catch (const air::Error& e) {
    CHECK(std::string(e.what()) == "cache entry " + entry.string() + " is damaged (mask and ids differ in length)");
    CHECK(e.hint() == "delete the entry's folder; the next start writes it again");
  }
}

TEST_CASE("cache: bad records leave no entry and no temporary folder") {
  Fixture f;
  std::ofstream(f.data, std::ios::app) << R"({"messages": [{"role": "user"}]})" << "\n";
  ChatTemplate t = f.chat();
  ExampleBuilder b(f.enc, &t, TrainOn::kAssistant);
  DataSettings s;
  std::ostringstream log;
  CHECK_THROWS_AS(load_examples_cached({f.data}, s, b, f.cache(), log), air::Error);
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(f.dir / "cache")) left += e.is_directory();
  CHECK(left == 0);
}
