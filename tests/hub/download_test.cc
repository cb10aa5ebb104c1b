// The hub client against the fixture hub: the cache layout, reuse, resume, offline, and two processes.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "hub/cache.h"
#include "hub/hub.h"
#include "tests/hub/fixture.h"

using namespace air::hub;
using namespace air::hub::test;

namespace {

struct World {
  TempDir tmp;
  fs::path root = tmp.path / "repos";
  fs::path cache = tmp.path / "cache";
  std::string weights = random_bytes(3 << 20, 7);
  std::string config = R"({"hidden_size": 8})";
  World() {
    fs::path m = root / "models" / "org" / "tiny";
    write_file(m / "config.json", config);
    write_file(m / "tokenizer.json", "{}");
    write_file(m / "model.safetensors", weights);
    write_file(m / "README.md", "not needed for training");
    write_file(m / "original" / "consolidated.00.pth", "not needed either");
    write_file(root / "datasets" / "org" / "alpaca" / "data" / "train-00000-of-00001.parquet", random_bytes(1000, 3));
    write_file(root / "datasets" / "org" / "alpaca" / "README.md", "# card");
  }
  Options options(const Fixture& f, const std::string& token = "sekrit") const {
    Options o;
    o.endpoint = f.url;
    o.token = token;
    o.cache_dir = cache.string();
    o.backoff_ms = 10;
    return o;
  }
};

}  // namespace

TEST_CASE("downloads a model's training files into huggingface_hub's cache layout") {
  World w;
  Fixture hub(w.root, {"--token", "sekrit", "--blob-host", "localhost"});
  Repo repo = parse_repo("org/tiny", RepoType::kModel);
  Snapshot s = download_snapshot(repo, is_model_training_file, w.options(hub));
  CHECK(s.files == std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"});
  CHECK(s.files_downloaded == 3);
  CHECK_FALSE(s.from_cache);
  fs::path repo_dir = w.cache / "models--org--tiny";
  CHECK(read_file(repo_dir / "refs" / "main") == s.commit);
  CHECK(s.dir == (repo_dir / "snapshots" / s.commit).string());
  fs::path link = repo_dir / "snapshots" / s.commit / "model.safetensors";
  REQUIRE(fs::is_symlink(link));
  CHECK(fs::read_symlink(link).string().rfind("../../blobs/", 0) == 0);
  CHECK(read_file(link) == w.weights);
  auto stats = hub.stats();
  CHECK(stats["blob_get"] == 1);
  CHECK(stats["blob_auth_rejected"] == 0);  // the token went to the hub only, not to the blob host

  // Again: everything is in the blobs already, nothing is downloaded.
  Snapshot again = download_snapshot(repo, is_model_training_file, w.options(hub));
  CHECK(again.files_downloaded == 0);
  CHECK(hub.stats()["blob_get"] == 1);

  // Offline: the same snapshot without a single request.
  hub.stop();
  Options off = w.options(hub);
  off.offline = true;
  Snapshot cached = download_snapshot(repo, is_model_training_file, off);
  CHECK(cached.from_cache);
  CHECK(cached.commit == s.commit);
  CHECK(cached.files == s.files);
}

TEST_CASE("a cache written by huggingface_hub is used offline as it is") {
  TempDir tmp;
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  fs::path repo = tmp.path / "datasets--tatsu-lab--alpaca";
  write_file(repo / "blobs" / "aaaa", "PAR1...");
  write_file(repo / "refs" / "main", commit);
  fs::create_directories(repo / "snapshots" / commit / "data");
  fs::create_symlink("../../../blobs/aaaa", repo / "snapshots" / commit / "data" / "train-00000-of-00001-a09b74b3ef9c3b56.parquet");
  Options o;
  o.cache_dir = tmp.path.string();
  o.offline = true;
  o.endpoint = "http://127.0.0.1:9";  // nothing listens: any request would fail
  Repo r = parse_repo("tatsu-lab/alpaca", RepoType::kDataset);
  auto s = download_snapshot(r, [](const std::string& f) { return f.find(".parquet") != std::string::npos; }, o);
  CHECK(s.commit == commit);
  CHECK(s.files == std::vector<std::string>{"data/train-00000-of-00001-a09b74b3ef9c3b56.parquet"});
  CHECK(read_file(fs::path(s.dir) / s.files[0]) == "PAR1...");
}

TEST_CASE("offline with nothing cached says so and how to fix it") {
  TempDir tmp;
  Options o;
  o.cache_dir = tmp.path.string();
  o.offline = true;
  try {
    download_snapshot(parse_repo("meta-llama/Llama-3.1-8B", RepoType::kModel), is_model_training_file, o);
    FAIL("no error");
  } catch (const HubError& e) {
    CHECK(std::string(e.what()) == "HF_HUB_OFFLINE is set and model meta-llama/Llama-3.1-8B@main is not in the hub cache (" +
                                       (tmp.path / "models--meta-llama--Llama-3.1-8B").string() + ")");
    CHECK(e.hint() == "unset HF_HUB_OFFLINE to download it, or fill the cache first (e.g. `huggingface-cli download meta-llama/Llama-3.1-8B`)");
  }
}

TEST_CASE("a download cut midway resumes with Range and is verified") {
  World w;
  Fixture hub(w.root, {"--cut-once", "1000000"});
  auto s = download_snapshot(parse_repo("org/tiny", RepoType::kModel), is_model_training_file, w.options(hub, ""));
  CHECK(read_file(fs::path(s.dir) / "model.safetensors") == w.weights);
  auto stats = hub.stats();
  CHECK(stats["cuts"] == 1);
  CHECK(stats["blob_range_get"] == 1);
  CHECK(stats["blob_get"] == 2);
  CHECK(s.bytes_downloaded == w.weights.size() + w.config.size() + 2);  // each byte once: the cut part is kept
}

TEST_CASE("two processes sharing a cache download each file once") {
  World w;
  Fixture hub(w.root);
  Options o = w.options(hub, "");
  Repo repo = parse_repo("org/tiny", RepoType::kModel);
  std::vector<pid_t> kids;
  for (int k = 0; k < 2; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      try {
        auto s = download_snapshot(repo, is_model_training_file, o);
        _exit(read_file(fs::path(s.dir) / "model.safetensors") == w.weights ? 0 : 3);
      } catch (...) {
        _exit(2);
      }
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto stats = hub.stats();
  CHECK(stats["blob_get"] == 1);
  CHECK(stats["resolve_get"] == 2);  // config.json and tokenizer.json, once each
}

TEST_CASE("dataset files of a split, named as the datasets library names them") {
  std::vector<std::string> files = {"README.md", "data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet",
                                    "data/test-00000-of-00001.parquet", "dataset_infos.json"};
  auto f = dataset_split_filter(files, "train");
  CHECK(f("data/train-00001-of-00002.parquet"));
  CHECK_FALSE(f("data/test-00000-of-00001.parquet"));
  CHECK_FALSE(f("dataset_infos.json"));
  auto g = dataset_split_filter({"alpaca_data.json", "README.md"}, "train");  // tatsu-lab's older layout
  CHECK(g("alpaca_data.json"));
  auto h = dataset_split_filter({"train.jsonl", "validation.jsonl"}, "train");
  CHECK(h("train.jsonl"));
  CHECK_FALSE(h("validation.jsonl"));
  // A cache holding only the train files has no validation split (it must be downloaded), and a cache
  // holding only the validation files has no train files.
  auto v = dataset_split_filter({"data/train-00000-of-00001.jsonl"}, "validation");
  CHECK_FALSE(v("data/train-00000-of-00001.jsonl"));
  auto t = dataset_split_filter({"data/validation-00000-of-00001.jsonl"}, "train");
  CHECK_FALSE(t("data/validation-00000-of-00001.jsonl"));
  auto u = dataset_split_filter({"data/validation-00000-of-00001.jsonl", "data/train-00000-of-00001.jsonl"}, "validation");
  CHECK(u("data/validation-00000-of-00001.jsonl"));
  CHECK_FALSE(u("data/train-00000-of-00001.jsonl"));
}
