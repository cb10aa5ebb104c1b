// Exports a commit's tree with `git archive` + `tar -x` into a cache folder keyed by the commit, so that a
// commit-pinned run ships that commit and nothing of the working tree, and an unchanged one costs nothing.
#include "core/snapshot/git.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/base/error.h"
#include "core/base/sha256.h"

extern char** environ;

namespace air {

namespace fs = std::filesystem;

namespace {

struct Output {
  int status = -1;  // exit code; -1 when it could not run or died of a signal
  std::string out;
};

// Runs argv (PATH lookup, no shell) with stdin and stderr on /dev/null; collects stdout.
Output run(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw Error("cannot create a pipe to run " + argv[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  Output o;
  if (rc != 0) {
    ::close(p[0]);
    throw Error(argv[0] + " cannot be run: " + std::strerror(rc), "install " + argv[0]);
  }
  char buf[65536];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    o.out.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::vector<std::string> git(const std::string& root, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", root});
  return args;
}

std::string resolve(const std::string& root, const std::string& branch, const std::string& commit) {
  std::string spec = commit.empty() ? "refs/heads/" + branch : commit;
  Output o = run(git(root, {"rev-parse", "--verify", "--quiet", spec + "^{commit}"}));
  if (o.status == 0) return first_line(o.out);
  if (!commit.empty())
    throw usage_error(fmt::format("git.commit {} does not exist in the repository at {}", commit, root),
                      "fetch it first (git fetch), or check the id with git log --oneline");
  throw usage_error(fmt::format("git.branch \"{}\" is not a local branch of the repository at {}", branch, root),
                    "git branch --list shows the local branches");
}

// The reference's rule: a branch ships its committed head, so changes not committed would silently be left
// out; refuse them (only under include_paths when they are set).
void refuse_uncommitted(const std::string& root, const std::string& branch,
                        const std::vector<std::string>& include_paths) {
  std::vector<std::string> args = {"status", "--porcelain", "--"};
  if (include_paths.empty()) args.push_back(".");
  for (const auto& p : include_paths) args.push_back(p);
  Output o = run(git(root, args));
  if (o.status != 0) throw Error("git status failed in " + root);
  if (o.out.empty()) return;
  std::string files;
  size_t shown = 0, start = 0;
  for (; start < o.out.size() && shown < 5; ++shown) {
    size_t nl = o.out.find('\n', start);
    files += "\n    " + o.out.substr(start, nl - start);
    start = nl == std::string::npos ? o.out.size() : nl + 1;
  }
  throw usage_error(fmt::format("uncommitted changes under {} would not be included: git.branch deploys the "
                                "committed HEAD of \"{}\". Commit your changes, or use git.commit to pin a "
                                "commit{}",
                                root, branch, files),
                    "git status shows them; git stash sets them aside");
}

}  // namespace

GitSnapshotSource export_git_snapshot(const std::string& root, const std::string& branch, const std::string& commit,
                                      const std::vector<std::string>& include_paths, const std::string& cache_dir) {
  Output top = run(git(root, {"rev-parse", "--show-toplevel"}));
  if (top.status != 0)
    throw usage_error(fmt::format("git.* is set but {} is not a git repository", root),
                      "remove code_source's git key to ship the folder as it is");
  std::string toplevel = first_line(top.out);
  GitSnapshotSource src;
  src.mode = commit.empty() ? "branch" : "commit";
  src.ref = commit.empty() ? branch : commit;
  src.commit = resolve(root, branch, commit);
  if (!branch.empty()) refuse_uncommitted(root, branch, include_paths);
  // root may be a folder inside the repository: export that folder's tree, as the snapshot's root.
  std::string prefix = first_line(run(git(root, {"rev-parse", "--show-prefix"})).out);
  std::string key = prefix;
  for (const auto& p : include_paths) key += "\n" + p;
  src.dir = fmt::format("{}/{}-{}", cache_dir, src.commit, sha256_hex(key).substr(0, 16));
  std::error_code ec;
  if (fs::is_directory(src.dir, ec)) return src;  // a commit never changes: the export is reused
  fs::create_directories(cache_dir);
  std::string tmp = fmt::format("{}.tmp.{}", src.dir, ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  // From the top level: in a subfolder git would apply that folder's prefix once more inside the tree.
  std::vector<std::string> archive =
      git(toplevel, {"archive", "--format=tar", "-o", tmp + ".tar", src.commit + ":" + prefix});
  if (!include_paths.empty()) archive.push_back("--");
  for (const auto& p : include_paths) archive.push_back(p);
  bool ok = run(archive).status == 0 && run({"tar", "-xf", tmp + ".tar", "-C", tmp}).status == 0;
  fs::remove(tmp + ".tar", ec);
  if (!ok) {
    fs::remove_all(tmp, ec);
    throw Error(fmt::format("cannot export commit {} of {} (git archive | tar -x failed)", src.commit, root),
                include_paths.empty() ? "" : "check that every include_paths entry exists in that commit");
  }
  fs::rename(tmp, src.dir, ec);
  if (ec) fs::remove_all(tmp, ec);  // another CLI exported the same commit at the same time: theirs is kept
  return src;
}

SnapshotManifest manifest_of_export(const GitSnapshotSource& src, const std::vector<std::string>& include_paths) {
  return scan_snapshot(src.dir, include_paths, false);
}

}  // namespace air
