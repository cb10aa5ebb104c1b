// The hub's refusals as one line and a hint each: no token, a wrong token, a gated repo, a missing repo,
// revision or file, and an unreachable hub after retries.
#include <catch2/catch.hpp>

#include "hub/hub.h"
#include "hub/internal.h"
#include "tests/hub/fixture.h"

using namespace air::hub;
using namespace air::hub::test;

namespace {

struct Refusal {
  std::string message, hint;
};

Refusal refusal(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const HubError& e) {
    return {e.what(), e.hint()};
  }
  FAIL("no HubError");
  return {};
}

struct Gated {
  TempDir tmp;
  fs::path root = tmp.path / "repos";
  Gated() {
    write_file(root / "models" / "meta-llama" / "Llama-3.1-8B" / "config.json", "{}");
    write_file(root / "models" / "org" / "open" / "config.json", "{}");
  }
  Options options(const Fixture& f, const std::string& token) const {
    Options o;
    o.endpoint = f.url;
    o.token = token;
    o.cache_dir = (tmp.path / "cache").string();
    o.backoff_ms = 5;
    o.retries = 1;
    return o;
  }
};

}  // namespace

TEST_CASE("hub errors: 401 without a token points at the YAML's secrets") {
  Gated g;
  Fixture hub(g.root, {"--token", "sekrit"});
  auto r = refusal([&] { download_snapshot(parse_repo("org/open", RepoType::kModel), is_model_training_file, g.options(hub, "")); });
  CHECK(r.message == "the hub refused model org/open without a token (HTTP 401): it is private, gated or does not exist");
  CHECK(r.hint == "put HF_TOKEN in the YAML's secrets (e.g. HF_TOKEN: my_scope/hf_token, stored with `air secrets put-secret`), or set HF_TOKEN");
  auto bad = refusal([&] { download_snapshot(parse_repo("org/open", RepoType::kModel), is_model_training_file, g.options(hub, "wrong")); });
  CHECK(bad.message == "the hub refused the token for model org/open (HTTP 401): the repo does not exist or the token is invalid");
  CHECK(bad.message.find("wrong") == std::string::npos);  // never the token itself
}

TEST_CASE("hub errors: 403 gated says where to accept the licence") {
  Gated g;
  Fixture hub(g.root, {"--token", "sekrit", "--gated", "meta-llama/Llama-3.1-8B"});
  auto r = refusal([&] {
    download_snapshot(parse_repo("meta-llama/Llama-3.1-8B", RepoType::kModel), is_model_training_file, g.options(hub, "sekrit"));
  });
  CHECK(r.message == "model meta-llama/Llama-3.1-8B is gated and this token has no access to it (HTTP 403)");
  CHECK(r.hint == "accept the licence at " + hub.url + "/meta-llama/Llama-3.1-8B with the account the token belongs to");
  auto anon = refusal([&] {
    download_snapshot(parse_repo("meta-llama/Llama-3.1-8B", RepoType::kModel), is_model_training_file, g.options(hub, ""));
  });
  CHECK(anon.message == "model meta-llama/Llama-3.1-8B is gated and no token was given (HTTP 401)");
  CHECK(anon.hint == "accept its licence at " + hub.url + "/meta-llama/Llama-3.1-8B, then give air-train a token: put HF_TOKEN in the "
                     "YAML's secrets (e.g. HF_TOKEN: my_scope/hf_token)");
}

TEST_CASE("hub errors: 404 names the repo, the revision or the file") {
  Gated g;
  Fixture hub(g.root);
  Options o = g.options(hub, "");
  auto repo = refusal([&] { download_snapshot(parse_repo("org/missing", RepoType::kDataset), FileFilter{}, o); });
  CHECK(repo.message == "dataset org/missing not found on " + hub.url + " (HTTP 404)");
  CHECK(repo.hint == "check the name (org/name) at " + hub.url + "/datasets/org/missing; datasets live under /datasets/");
  auto rev = refusal([&] { download_snapshot(parse_repo("org/open@v9", RepoType::kModel), FileFilter{}, o); });
  CHECK(rev.message == "revision 'v9' of model org/open not found (HTTP 404)");
  auto file = refusal([&] { file_metadata(parse_repo("org/open", RepoType::kModel), "main", "model.safetensors", o); });
  CHECK(file.message == "file model.safetensors not found in model org/open (HTTP 404)");
  CHECK(file.hint == "see the repo's files at " + hub.url + "/org/open/tree/main");
}

TEST_CASE("hub errors: an unreachable hub fails after the retries, with a hint") {
  TempDir tmp;
  Options o;
  o.endpoint = "http://127.0.0.1:9";
  o.cache_dir = tmp.path.string();
  o.retries = 2;
  o.backoff_ms = 5;
  auto r = refusal([&] { download_snapshot(parse_repo("org/open", RepoType::kModel), FileFilter{}, o); });
  CHECK(r.message.rfind("network error: resolving model org/open failed after 3 attempts: ", 0) == 0);
  CHECK(r.hint == "check the network and HF_ENDPOINT (http://127.0.0.1:9); with the files cached, HF_HUB_OFFLINE=1 uses the cache alone");
}

TEST_CASE("repo ids: org/name[@revision], and what is not one") {
  Repo r = parse_repo("meta-llama/Llama-3.1-8B@v1.0", RepoType::kModel);
  CHECK(r.id == "meta-llama/Llama-3.1-8B");
  CHECK(r.revision == "v1.0");
  CHECK(r.folder_name() == "models--meta-llama--Llama-3.1-8B");
  CHECK(looks_like_repo_id("tatsu-lab/alpaca"));
  CHECK_FALSE(looks_like_repo_id("examples/tiny_model/extra"));
  CHECK_FALSE(looks_like_repo_id("./data/x"));
  CHECK_FALSE(looks_like_repo_id("/abs/path"));
  CHECK_FALSE(looks_like_repo_id("alpaca.json"));
}
