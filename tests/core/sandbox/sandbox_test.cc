// The run sandbox's argv (what is bound, hidden, made) and the owners' account names; and, where bubblewrap
// works here, a real command in it: its own /proc, no workspace home, its node folder writable.
#include "core/sandbox/sandbox.h"

#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

using namespace air;
namespace fs = std::filesystem;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& words) { return joined(v).find(words) != std::string::npos; }

std::string run(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += q + "' ";
  }
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  char buf[4096];
  for (size_t n; p && (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (p) ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("sandbox argv: system read-only, own pid namespace and /proc, private /tmp, nothing else of /") {
  SandboxSpec s;
  s.node_dir = "/srv/air/runs/r1/attempt_1/node_0";
  s.read_only = {"/work/air/build/bin"};
  s.hidden = {"/srv/air"};
  s.cwd = s.node_dir + "/code";
  auto a = sandbox_argv(s);
  REQUIRE(a.front() == "bwrap");
  CHECK(a.back() == "--");
  CHECK(has(a, "--unshare-user --unshare-pid --unshare-ipc"));
  CHECK(has(a, "--ro-bind /usr /usr"));
  CHECK(has(a, "--ro-bind /etc /etc"));
  CHECK(has(a, "--proc /proc"));
  CHECK(has(a, "--perms 1777 --tmpfs /tmp"));
  CHECK_FALSE(has(a, "--bind /proc"));
  CHECK_FALSE(has(a, "/root"));
  CHECK_FALSE(has(a, "/home"));
  CHECK_FALSE(has(a, "--bind /srv "));
  CHECK_FALSE(has(a, "--new-session"));  // the agent signals the command's process group
  CHECK(has(a, "--bind /srv/air/runs/r1/attempt_1/node_0 /srv/air/runs/r1/attempt_1/node_0"));
  CHECK(has(a, "--ro-bind /work/air/build/bin /work/air/build/bin"));
  // The folders above a mount point are made 0755 before it (bwrap would make them 0700).
  CHECK(has(a, "--perms 0755 --dir /srv --perms 0755 --dir /srv/air --perms 0755 --dir /srv/air/runs"));
  // The sandbox's own root is read-only once everything is mounted (the mounts keep their own modes).
  CHECK(has(a, "--bind /srv/air/runs/r1/attempt_1/node_0 /srv/air/runs/r1/attempt_1/node_0 --remount-ro / "
               "--chdir /srv/air/runs/r1/attempt_1/node_0/code --"));
  // /srv is no system folder: the hidden home needs no tmpfs over it.
  CHECK_FALSE(has(a, "--tmpfs /srv/air"));
}

TEST_CASE("sandbox argv: a workspace home below a system folder is covered, volumes bound read-only or not") {
  SandboxSpec s;
  s.node_dir = "/opt/air/runs/r1/attempt_1/node_0";
  s.hidden = {"/opt/air", "/opt/air/volumes"};
  s.volumes_root = "/opt/air/volumes";
  s.volumes = {{"main/a/in", true}, {"main/a/out", false}};
  auto a = sandbox_argv(s);
  if (fs::is_directory("/opt") && !fs::is_symlink("/opt") && fs::exists("/opt/air")) {
    CHECK(has(a, "--ro-bind /opt /opt"));
    CHECK(has(a, "--tmpfs /opt/air"));
  }
  auto tmpfs = std::find(a.begin(), a.end(), "/opt/air");
  auto node = std::find(a.begin(), a.end(), s.node_dir);
  if (tmpfs != a.end()) CHECK(tmpfs < node);  // covered first, then the node's own folder bound on top
  CHECK(has(a, "--ro-bind /opt/air/volumes/main/a/in /Volumes/main/a/in"));
  CHECK(has(a, "--bind /opt/air/volumes/main/a/out /Volumes/main/a/out"));
  CHECK(has(a, "--perms 0755 --dir /Volumes --perms 0755 --dir /Volumes/main --perms 0755 --dir /Volumes/main/a"));
}

TEST_CASE("sandbox argv as root: no user namespace, the owner's account through setpriv, no capabilities") {
  UnixAccount bob{"air-u-bob", 1234, 1235};
  SandboxSpec s;
  s.node_dir = "/srv/air/runs/r1/attempt_1/node_0";
  s.run_as = &bob;
  auto a = sandbox_argv(s);
  CHECK_FALSE(has(a, "--unshare-user"));
  CHECK(has(a, "--unshare-pid"));
  CHECK(has(a, "-- setpriv --reuid=1234 --regid=1235 --clear-groups --inh-caps=-all --bounding-set=-all "
               "--no-new-privs -- env --default-signal=TERM,INT,HUP --"));
  CHECK(a.back() == "--");
}

TEST_CASE("owner_unix_account_name: air-u-<name>, a hash where the name had to change or be cut") {
  CHECK(owner_unix_account_name("alice") == "air-u-alice");
  CHECK(owner_unix_account_name("bob_2-x") == "air-u-bob_2-x");
  std::string mail = owner_unix_account_name("Alice@example.com");
  CHECK(mail.rfind("air-u-alice-example-com", 0) == 0);
  CHECK(mail.size() <= 32);
  CHECK(mail != owner_unix_account_name("alice@example.com"));  // two owners never share an account
  std::string longer = owner_unix_account_name(std::string(40, 'a'));
  CHECK(longer.size() <= 32);
  CHECK(longer != owner_unix_account_name(std::string(41, 'a')));
}

TEST_CASE("ensure_unix_account refuses to invent an account that is not air's own") {
  CHECK_THROWS_WITH(ensure_unix_account("no-such-user-xyz"),
                    "no unix account 'no-such-user-xyz' on this machine");
}

TEST_CASE("a command in the sandbox sees only its own processes and folders, and writes its node folder") {
  if (std::string why = probe_sandbox(); !why.empty()) {
    WARN("no sandbox on this machine: " << why);
    return;
  }
  fs::path tmp = fs::temp_directory_path() / ("air-sandbox-test-" + std::to_string(::getpid()));
  fs::path home = tmp / "home", node = home / "runs/r1/attempt_1/node_0";
  fs::create_directories(node / "code");
  std::ofstream(home / "server.json") << "{\"token\": \"secret-token\"}";
  SandboxSpec s;
  s.node_dir = node.string();
  s.hidden = {home.string()};
  s.cwd = (node / "code").string();
  UnixAccount nobody{"nobody", 65534, 65534};
  if (::geteuid() == 0) {
    s.run_as = &nobody;
    fs::permissions(node / "code", fs::perms::all);
  }
  auto a = sandbox_argv(s);
  a.insert(a.end(), {"sh", "-c",
                     "echo procs=$(ls /proc | grep -c '^[0-9]'); cat " + (home / "server.json").string() +
                         " 2>&1 | head -c 200; echo; ls -A " + home.string() + "; touch x && echo wrote; pwd"});
  std::string out = run(a);
  INFO(out);
  CHECK(out.find("secret-token") == std::string::npos);
  CHECK(out.find("\nruns\n") != std::string::npos);  // the home holds only the path to the node
  CHECK(out.find("wrote") != std::string::npos);
  CHECK(out.find((node / "code").string()) != std::string::npos);
  int procs = std::atoi(out.substr(out.find("procs=") + 6).c_str());
  CHECK(procs >= 1);
  CHECK(procs <= 5);
  fs::remove_all(tmp);
}

TEST_CASE("share_volume_folder: a volume's folders and files are every writer's, what is made inside too") {
  fs::path dir = fs::temp_directory_path() / ("air-share-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "old");
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  fs::permissions(dir / "old", fs::perms::owner_all);
  std::ofstream(dir / "old" / "f") << "x";
  fs::permissions(dir / "old" / "f", fs::perms::owner_read | fs::perms::owner_write);
  if (std::string why = share_volume_folder(dir.string()); !why.empty()) {
    WARN(why);  // this file system keeps no ACLs: nothing more to check
    CHECK(static_cast<int>(fs::status(dir).permissions() & fs::perms::all) == 0777);
    fs::remove_all(dir);
    return;
  }
  auto mode = [](const fs::path& p) { return static_cast<int>(fs::status(p).permissions() & fs::perms::all); };
  CHECK(mode(dir) == 0777);
  CHECK(mode(dir / "old") == 0777);                        // what was there is opened the first time
  CHECK(mode(dir / "old" / "f") == 0666);
  // What any process makes inside later inherits the default ACL, whatever its umask.
  mode_t old_mask = ::umask(077);
  fs::create_directories(dir / "new" / "sub");
  std::ofstream(dir / "new" / "sub" / "g") << "y";
  ::umask(old_mask);
  CHECK(mode(dir / "new") == 0777);
  CHECK(mode(dir / "new" / "sub") == 0777);
  CHECK(mode(dir / "new" / "sub" / "g") == 0666);
  // Later calls leave what the owner chose below alone (the usual case: one getxattr).
  fs::permissions(dir / "new" / "sub" / "g", fs::perms::owner_read | fs::perms::owner_write);
  CHECK(share_volume_folder(dir.string()).empty());
  CHECK(mode(dir / "new" / "sub" / "g") == 0600);
  fs::remove_all(dir);
}
