// code_source.snapshot.git against real repositories made with the git binary: a commit ships exactly its
// tracked files (not the working tree, whatever .gitignore says), a branch its committed head and only when
// clean under the included paths, include_paths restricts the export, and a commit's archive is stable.
#include <catch2/catch.hpp>

#include <algorithm>

#include "core/snapshot/git.h"
#include "core/snapshot/snapshot.h"
#include "tests/core/snapshot/test_util.h"

using air::test::read_file;
using air::test::run_shell;
using air::test::shell_quote;
using air::test::TempDir;
using air::test::write_file;

namespace {

// A repository with two commits on main; returns the first commit's id.
std::string make_repo(const std::string& dir) {
  std::string g = "git -C " + shell_quote(dir) + " -c user.name=t -c user.email=t@t ";
  run_shell("git init -q -b main " + shell_quote(dir));
  write_file(dir + "/train.py", "print('v1')\n");
  write_file(dir + "/data/cfg.yaml", "lr: 1\n");
  write_file(dir + "/.gitignore", "*.ckpt\n");
  write_file(dir + "/model.ckpt", "tracked on purpose\n");
  run_shell(g + "add train.py data .gitignore && " + g + "add -f model.ckpt && " + g + "commit -q -m one");
  std::string first = run_shell(g + "rev-parse HEAD");
  first.pop_back();
  write_file(dir + "/train.py", "print('v2')\n");
  run_shell(g + "commit -q -am two");
  return first;
}

std::vector<std::string> paths(const air::SnapshotManifest& m) {
  std::vector<std::string> out;
  for (const auto& f : m.files) out.push_back(f.path);
  return out;
}

}  // namespace

TEST_CASE("git snapshot: commit ships that commit's tracked files, not the working tree") {
  TempDir repo, cache;
  std::string first = make_repo(repo.path());
  write_file(repo / "train.py", "print('uncommitted edit')\n");
  write_file(repo / "untracked.txt", "not in any commit\n");
  auto src = air::export_git_snapshot(repo.path(), "", first.substr(0, 7), {}, cache.path());
  CHECK(src.mode == "commit");
  CHECK(src.commit == first);
  CHECK(read_file(src.dir + "/train.py") == "print('v1')\n");
  auto m = air::manifest_of_export(src, {});
  // model.ckpt is tracked though .gitignore matches it: git archive semantics, ignore rules irrelevant.
  CHECK(paths(m) == std::vector<std::string>{".gitignore", "data/cfg.yaml", "model.ckpt", "train.py"});
  // The same commit gives the same archive bytes, so the content-addressed upload sends nothing again.
  auto a = air::write_snapshot_archive(m, cache / "a.tar.zst");
  auto again = air::export_git_snapshot(repo.path(), "", first, {}, cache.path());
  CHECK(again.dir == src.dir);
  auto b = air::write_snapshot_archive(air::manifest_of_export(again, {}), cache / "b.tar.zst");
  CHECK(a.sha256 == b.sha256);
}

TEST_CASE("git snapshot: include_paths restricts the export") {
  TempDir repo, cache;
  make_repo(repo.path());
  std::string head = run_shell("git -C " + shell_quote(repo.path()) + " rev-parse HEAD");
  head.pop_back();
  auto src = air::export_git_snapshot(repo.path(), "", head, {"data"}, cache.path());
  CHECK(paths(air::manifest_of_export(src, {"data"})) == std::vector<std::string>{"data/cfg.yaml"});
}

TEST_CASE("git snapshot: branch ships its committed head and refuses uncommitted changes under the paths") {
  TempDir repo, cache;
  make_repo(repo.path());
  auto src = air::export_git_snapshot(repo.path(), "main", "", {}, cache.path());
  CHECK(src.mode == "branch");
  CHECK(read_file(src.dir + "/train.py") == "print('v2')\n");
  write_file(repo / "data/cfg.yaml", "lr: 2\n");
  std::string err = air::test::error_of([&] { air::export_git_snapshot(repo.path(), "main", "", {}, cache.path()); });
  CHECK(err == "uncommitted changes under " + repo.path() +
                   " would not be included: git.branch deploys the committed HEAD of \"main\". Commit your changes, "
                   "or use git.commit to pin a commit\n     M data/cfg.yaml");
  // Changes outside include_paths do not matter.
  CHECK_NOTHROW(air::export_git_snapshot(repo.path(), "main", "", {"train.py"}, cache.path()));
}

TEST_CASE("git snapshot: a folder that is not a repository, an unknown commit or branch are clear errors") {
  TempDir plain, repo, cache;
  write_file(plain / "a.py", "x\n");
  CHECK(air::test::error_of([&] { air::export_git_snapshot(plain.path(), "", "abc123", {}, cache.path()); }) ==
        "git.* is set but " + plain.path() + " is not a git repository");
  make_repo(repo.path());
  CHECK(air::test::error_of([&] { air::export_git_snapshot(repo.path(), "", "deadbeef", {}, cache.path()); }) ==
        "git.commit deadbeef does not exist in the repository at " + repo.path());
  CHECK(air::test::error_of([&] { air::export_git_snapshot(repo.path(), "nope", "", {}, cache.path()); }) ==
        "git.branch \"nope\" is not a local branch of the repository at " + repo.path());
}

TEST_CASE("git snapshot: a root_path inside the repository exports that folder as the root") {
  TempDir repo, cache;
  make_repo(repo.path());
  auto src = air::export_git_snapshot(repo / "data", "main", "", {}, cache.path());
  CHECK(paths(air::manifest_of_export(src, {})) == std::vector<std::string>{"cfg.yaml"});
}
