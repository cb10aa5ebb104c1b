// The node agent's setup steps: its diagnostics log, the command's environment, and the code snapshot.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <ostream>

#include "core/base/error.h"
#include "core/base/time.h"
#include "core/secrets/redact.h"
#include "core/base/sha256.h"
#include "core/snapshot/snapshot.h"
#include "core/client/client.h"
#include "core/volumes/path.h"
#include "core/client/config.h"
#include "launcher/agent/code_cache.h"
#include "launcher/agent/node_agent.h"

extern char** environ;


namespace air::launcher {

namespace fs = std::filesystem;

namespace {

std::string iso_now() { return format_utc(unix_now_ms(), TimeFormat::kIsoMillis); }

// True when fd 2 already writes to the file at path (the workspace may point the agent's stderr at
// DIR/agent.log): then each message is written once.
bool stderr_is(const std::string& path) {
  struct stat a {}, b {};
  return fstat(2, &a) == 0 && stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool is_hex_digest(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

AgentLog::AgentLog(const std::string& path, std::ostream* err) : err_(err) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ >= 0 && err_ && stderr_is(path)) err_ = nullptr;
}

AgentLog::~AgentLog() {
  if (fd_ >= 0) ::close(fd_);
}

void AgentLog::set_redaction(std::vector<std::string> values) {
  std::lock_guard lock(mu_);
  redact_ = std::move(values);
}

void AgentLog::info(const std::string& raw) {
  std::lock_guard lock(mu_);
  const std::string message = redact_.empty() ? raw : air::redact(raw, redact_);
  if (fd_ >= 0) {
    std::string line = iso_now() + " " + message + "\n";
    ssize_t ignored = ::write(fd_, line.data(), line.size());
    (void)ignored;
  }
  if (err_) *err_ << "air node: " << message << std::endl;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

std::vector<std::string> build_command_env(const api::NodeSpec& spec, const NodeAgentOptions& o, const CommandPaths& p,
                                           const std::vector<std::string>& inherited) {
  std::map<std::string, std::string> env;
  for (const auto& e : inherited) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[e.substr(0, eq)] = e.substr(eq + 1);
  }
  // The agent's credentials are not the command's: a command printing its environment must not leak them.
  env.erase("AIR_NODE_TOKEN");
  env.erase("AIR_TOKEN");
  // Nor where the workspace keeps its state, nor the workspace's own client settings (docs/security.md).
  for (const char* name : {"AIR_HOME", "AIR_CONFIG_FILE", "AIR_HOST", "DATABRICKS_TOKEN", "DATABRICKS_HOST",
                           "DATABRICKS_CONFIG_FILE", "DATABRICKS_CONFIG_PROFILE", "SSH_AUTH_SOCK"})
    env.erase(name);
  for (const auto& [k, v] : spec.env) env[k] = v;
  auto n = [](long v) { return std::to_string(v); };
  env["NUM_NODES"] = env["PET_NNODES"] = n(spec.num_nodes);
  env["NODE_RANK"] = env["PET_NODE_RANK"] = n(spec.node_rank);
  env["LOCAL_WORLD_SIZE"] = env["PET_NPROC_PER_NODE"] = n(spec.local_world_size);
  env["MASTER_ADDR"] = env["PET_MASTER_ADDR"] = spec.master_addr;
  env["MASTER_PORT"] = env["PET_MASTER_PORT"] = n(spec.master_port);
  env["CODE_SOURCE_PATH"] = p.code_dir;
  env["HYPERPARAMETERS_PATH"] = p.hyperparams_path;
  env["AIR_RUN_ID"] = spec.run_id.empty() ? o.run_id : spec.run_id;
  env["AIR_ATTEMPT"] = n(spec.attempt > 0 ? spec.attempt : o.attempt);
  if (!o.gpus.empty()) env["CUDA_VISIBLE_DEVICES"] = o.gpus;
  std::string path = env.count("PATH") ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
  if (!p.bin_dir.empty()) path = p.bin_dir + (path.empty() ? "" : ":" + path);
  env["PATH"] = path;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

namespace {

// A verified copy of the archive: the workspace's own blob store where this agent can read it (a node of
// the local backend: same machine, same AIR_HOME; the agent, unlike the command, may read it), else a
// download (from the workspace's store, or from volume_path through the Files API) to DIR/snapshot.tar.zst.
// Either way its SHA-256 is checked against the digest the spec names.
std::string verified_archive(Client& client, const std::string& digest, const std::string& volume_path,
                             const std::string& workdir, AgentLog& log) {
  if (volume_path.empty()) {
    std::string blob = air_home() + "/blobs/sha256/" + digest.substr(0, 2) + "/" + digest;
    if (::access(blob.c_str(), R_OK) == 0) {
      std::string got;
      try {
        got = air::sha256_file(blob);
      } catch (const Error&) {
      }
      if (got == digest) {
        log.info("snapshot " + digest.substr(0, 12) + " from the workspace's store on this machine");
        return blob;
      }
    }
  }
  std::string archive = workdir + "/snapshot.tar.zst";
  std::string unverified = archive + ".unverified";  // until its SHA-256 matches
  log.info("downloading snapshot " + digest.substr(0, 12) + (volume_path.empty() ? "" : " from " + volume_path));
  try {
    std::string from = volume_path.empty() ? std::string(api::kPrefix) + "/snapshots/" + digest
                                           : air::files_api_url(air::parse_volume_path(volume_path));
    client.get_to_file(from, unverified, {}, 10 * 60 * 1000);
  } catch (const Error& e) {  // get_to_file removed what it had written
    throw Error("cannot download snapshot " + digest.substr(0, 12) + ": " + e.what());
  }
  std::string got = air::sha256_file(unverified);
  if (got != digest) {
    std::remove(unverified.c_str());
    throw Error("snapshot download is corrupt: expected SHA-256 " + digest.substr(0, 12) + ", got " +
                got.substr(0, 12));
  }
  if (std::rename(unverified.c_str(), archive.c_str()) != 0) {
    throw Error("cannot write " + archive + ": " + std::strerror(errno));
  }
  return archive;
}

}  // namespace

bool fetch_and_unpack_snapshot(Client& client, const std::string& digest, const std::string& volume_path,
                               const std::string& workdir, const std::string& code_dir, AgentLog& log,
                               const air::UnpackLimits& limits, const std::string& shared_cache) {
  if (!is_hex_digest(digest)) throw Error("the node spec names an invalid snapshot digest '" + digest + "'");
  std::error_code ec;
  fs::remove_all(code_dir, ec);
  log.info("snapshot " + digest.substr(0, 12) + ": preparing the code");
  std::string archive;  // obtained once, only when something has to be unpacked
  bool fetch_failed = false;
  auto get_archive = [&]() -> const std::string& {
    if (archive.empty()) {
      fetch_failed = true;
      archive = verified_archive(client, digest, volume_path, workdir, log);
      fetch_failed = false;
    }
    return archive;
  };
  if (!shared_cache.empty()) {
    try {
      CodeCachePlacement p = place_cached_code(shared_cache, digest, get_archive, code_dir, limits);
      log.info(std::string("code ready: ") + (p.unpacked ? "unpacked into the node's code cache, " : "from the node's code cache, ") +
               std::to_string(p.links) + " read-only files linked into " + code_dir);
      return true;
    } catch (const Error& e) {
      if (fetch_failed) throw;
      // The cache could not serve (an entry evicted while we linked from it, another file system, an archive
      // it refused): this node unpacks its own copy, and a refused archive is refused again with its reason.
      log.info(std::string("the node's code cache could not serve this snapshot (") + e.what() +
               "); unpacking a private copy");
      fs::remove_all(code_dir, ec);
    }
  }
  air::unpack_snapshot(get_archive(), code_dir, limits);
  log.info("code ready: unpacked into " + code_dir);
  return false;
}

}  // namespace air::launcher
