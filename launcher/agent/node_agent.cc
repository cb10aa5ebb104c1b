// run_node_agent: the node agent from spec to final report. The main thread reads the command's pipes
// into the spool; the shipper thread ships the spool; the status thread heartbeats and hears "stop".
#include "launcher/agent/node_agent.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/client/config.h"
#include "core/base/error.h"
#include "core/client/client.h"
#include "launcher/agent/hyperparams.h"
#include "launcher/agent/log_shipper.h"
#include "core/logs/framing.h"
#include "launcher/agent/status.h"
#include "launcher/agent/system_metrics.h"
#include "launcher/agent/setup.h"
#include "launcher/process.h"
#include "launcher/agent/slurm_env.h"

namespace air::launcher {

using logs::LogTail;
using logs::RedactingFramer;
using logs::unix_time_ms;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// A duration in milliseconds from the environment (tests shorten waits), else the default.
int64_t env_ms(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long n = std::strtoll(v, &end, 10);
  return end && *end == 0 && n >= 0 ? n : fallback;
}

std::atomic<int> g_signal{0};
std::atomic<int> g_wake_fd{-1};

void on_signal(int sig) {
  g_signal.store(sig);
  int fd = g_wake_fd.load();
  if (fd >= 0) {
    char b = static_cast<char>(sig);
    ssize_t ignored = ::write(fd, &b, 1);
    (void)ignored;
  }
}

// Installs the agent's signal handlers for its lifetime, and restores the old ones after.
class SignalScope {
 public:
  SignalScope(bool enabled, int wake_fd) : enabled_(enabled) {
    g_signal.store(0);
    if (!enabled_) return;
    g_wake_fd.store(wake_fd);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe_);
  }
  ~SignalScope() {
    if (!enabled_) return;
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    g_wake_fd.store(-1);
  }

 private:
  static constexpr int kSignals[3] = {SIGTERM, SIGINT, SIGHUP};
  bool enabled_;
  struct sigaction old_[3] {}, old_pipe_ {};
};

struct WakePipe {
  int fds[2] = {-1, -1};
  WakePipe() {
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("cannot create a pipe");
  }
  ~WakePipe() {
    close(fds[0]);
    close(fds[1]);
  }
  void drain() {
    char buf[64];
    while (::read(fds[0], buf, sizeof buf) > 0) {
    }
  }
};

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return fs::path(buf).parent_path().string();
}

std::string node_path(const NodeAgentOptions& o, const std::string& what) {
  return api::node_path(o.run_id, o.attempt, o.node, what);
}

api::NodeSpec parse_spec(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) throw Error("the workspace sent a node spec that is not a JSON object");
  try {
    return j.get<api::NodeSpec>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the node spec has a field of the wrong type (") + e.what() + ")",
                "the workspace and this agent speak different versions of the API");
  }
}

// GET spec, retrying while the workspace is unreachable or failing (5xx); a 4xx is final.
api::NodeSpec fetch_spec(Client& client, const NodeAgentOptions& o, AgentLog& log) {
  auto deadline = Clock::now() + o.spec_timeout;
  auto backoff = std::chrono::milliseconds(100);
  bool said = false;
  while (true) {
    HttpResponse r = client.send("GET", node_path(o, "spec"), {}, {}, 30000);
    if (r.ok()) return parse_spec(r.body);
    if (r.status >= 400 && r.status < 500) throw Error("cannot fetch the node spec: " + describe(r));
    if (Clock::now() + backoff > deadline || g_signal.load()) {
      throw Error("cannot fetch the node spec from " + o.server + ": " + describe(r));
    }
    if (!said) log.info("waiting for the workspace at " + o.server + " (" + describe(r) + ")");
    said = true;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

struct Outcome {
  int wait_status = 0;
  bool stopped = false;     // by the workspace
  int interrupted = 0;      // the agent's own signal
};

struct Pipeline {
  LogSpool& spool;
  LogShipper& shipper;
  LogTail& tail;
  AgentLog& log;
  std::vector<std::string> secrets;  // values redacted from the command's output before framing
  StepWatcher* steps = nullptr;      // the last step line's number (straggler alert)
  void add(std::string_view framed) {
    if (framed.empty()) return;
    if (steps) steps->feed(framed);
    if (!spool.append(framed) && !spool_failed) {
      spool_failed = true;
      spool_error = std::strerror(errno);
      log.info("cannot write the log spool " + spool.path() + ": " + spool_error);
    }
    tail.add(framed);
    shipper.notify();
  }
  bool spool_failed = false;
  std::string spool_error;
};

// Reads both pipes until the command and everything in its group are gone; handles stop and signals.
Outcome supervise(ChildProcess& child, Pipeline& pipe, StatusReporter& status, WakePipe& wake,
                  std::chrono::milliseconds grace) {
  Outcome out;
  RedactingFramer framers[2] = {RedactingFramer('o', pipe.secrets), RedactingFramer('e', pipe.secrets)};
  std::string buf(256 * 1024, '\0'), framed;
  bool term_sent = false, leader_done = false;
  Clock::time_point kill_at{}, eof_deadline{};
  auto close_stream = [&](int i) {
    framed.clear();
    framers[i].flush(unix_time_ms(), framed);
    pipe.add(framed);
    i == 0 ? child.close_stdout() : child.close_stderr();
  };
  auto terminate = [&](const char* why) {
    if (term_sent) return;
    pipe.log.info(why);
    child.signal_group(SIGTERM);
    term_sent = true;
    kill_at = Clock::now() + grace;
  };
  while (true) {
    // The leader's exit wakes the loop too (its pidfd), not only the next 100 ms tick.
    pollfd fds[4] = {{child.stdout_fd(), POLLIN, 0}, {child.stderr_fd(), POLLIN, 0}, {wake.fds[0], POLLIN, 0},
                     {leader_done ? -1 : child.exit_fd(), POLLIN, 0}};
    int rc = poll(fds, 4, 100);
    if (rc < 0 && errno != EINTR) throw Error(std::string("poll failed: ") + std::strerror(errno));
    for (int i = 0; i < 2 && rc > 0; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        framed.clear();
        framers[i].feed(std::string_view(buf.data(), static_cast<size_t>(n)), unix_time_ms(), framed);
        pipe.add(framed);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_stream(i);
      }
    }
    wake.drain();
    if (int sig = g_signal.load(); sig && !out.interrupted) {
      out.interrupted = sig;
      terminate(sig == SIGINT ? "interrupted (SIGINT): stopping the command" : "interrupted: stopping the command");
    }
    if (status.stop_requested() && !out.stopped && !leader_done) {
      out.stopped = true;
      terminate("stopping the command (SIGTERM to its process group)");
    }
    if (!leader_done && child.try_wait()) {
      leader_done = true;
      // Leftovers of the command (background jobs) get the same grace as a stop, then SIGKILL.
      if (!child.members().empty()) terminate("the command exited; stopping what it left running");
      eof_deadline = Clock::now() + grace + std::chrono::seconds(1);
    }
    if (term_sent && Clock::now() >= kill_at && !child.members().empty()) {
      pipe.log.info("the command's process group outlived the grace period; sending SIGKILL");
      child.kill_group_and_reap();
    }
    if (leader_done && child.members().empty()) {
      child.kill_group_and_reap();  // the guardian
      // Whatever is still buffered in the pipes is read before they are closed.
      if (child.stdout_fd() < 0 && child.stderr_fd() < 0) break;
      // A process outside the group (setsid) may still hold a pipe: do not wait for it forever.
      if (Clock::now() >= eof_deadline) {
        if (child.stdout_fd() >= 0) close_stream(0);
        if (child.stderr_fd() >= 0) close_stream(1);
        break;
      }
    }
  }
  out.wait_status = child.wait_status().value_or(0);
  return out;
}

SystemMetricsOptions system_metrics_options(const NodeAgentOptions& o, const api::NodeSpec& spec, const std::string& dir) {
  SystemMetricsOptions m;
  m.node = o.node;
  m.mlflow_run_id = spec.mlflow_run_id;
  m.interval = std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, spec.system_metrics_interval_s) * 1000));
  // The node's GPUs: those the workspace gave it, else those its batch system did.
  const char* inherited = std::getenv("CUDA_VISIBLE_DEVICES");
  m.gpus = !o.gpus.empty() ? o.gpus : inherited ? inherited : "";
  m.disk_path = dir;
  return m;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) {
    return "command killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) +
           "), exit code " + std::to_string(exit_code_from_wait_status(status));
  }
  return "command exited with code " + std::to_string(exit_code_from_wait_status(status));
}

// The node's own folder (agent.log, the log spool, code/, final_status.json), created and made absolute.
std::string open_node_dir(const NodeAgentOptions& o) {
  if (o.server.empty() || o.run_id.empty() || o.workdir.empty()) {
    throw usage_error("air node needs --server, --run and --workdir");
  }
  if (o.token.empty()) {
    throw usage_error("AIR_NODE_TOKEN is not set", "the workspace starts node agents with their token in AIR_NODE_TOKEN");
  }
  std::error_code ec;
  fs::create_directories(o.workdir, ec);
  if (ec) throw Error("cannot create the node's working directory " + o.workdir + ": " + ec.message());
  std::string dir = fs::absolute(o.workdir).lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// A line of the agent's own in the node log (the user reads that, not agent.log), redacted like the rest.
void note_in_node_log(Pipeline& pipeline, const std::string& text) {
  RedactingFramer note('e', pipeline.secrets);
  std::string framed;
  note.feed("air node: " + text + "\n", unix_time_ms(), framed);
  note.flush(unix_time_ms(), framed);
  pipeline.add(framed);
}

// The secrets' values (name -> value); from here on they are redacted from every log line and message.
std::map<std::string, std::string> resolve_secrets(const api::NodeSpec& spec, const NodeAgentOptions& o,
                                                   Pipeline& pipeline) {
  auto secrets = resolve_node_secrets(spec, o);
  for (const auto& [name, value] : secrets) pipeline.secrets.push_back(value);
  pipeline.log.set_redaction(pipeline.secrets);
  if (!secrets.empty()) pipeline.log.info("resolved " + std::to_string(secrets.size()) + " secret(s)");
  if (Redactor(pipeline.secrets).ignored_values() > 0)
    pipeline.log.info("warning: a secret shorter than 4 bytes cannot be redacted from the log");
  return secrets;
}

// The snapshot unpacked into CODE_SOURCE_PATH (an empty folder when the workload has none). Where the command
// runs as the owner's account, the node's code cache serves it (read-only links, launcher/agent/code_cache.h):
// returns true then.
bool unpack_code(Client& client, const api::NodeSpec& spec, const NodeAgentOptions& o, bool as_other,
                 const std::string& dir, const std::string& code_dir, AgentLog& log) {
  if (spec.snapshot_digest.empty()) {
    fs::create_directories(code_dir);
    return false;
  }
  air::UnpackLimits limits;
  if (spec.max_unpack_bytes > 0) limits.max_total_bytes = spec.max_unpack_bytes;
  if (spec.max_unpack_entries > 0) limits.max_entries = spec.max_unpack_entries;
  // One cache per account: links show their count (st_nlink), which must not tell one user about another's runs.
  const bool plain_name = o.run_as.find('/') == std::string::npos && o.run_as != "." && o.run_as != "..";
  std::string cache = as_other && plain_name ? air_home() + "/cache/code/" + o.run_as : "";
  return fetch_and_unpack_snapshot(client, spec.snapshot_digest, spec.snapshot_path, dir, code_dir, log, limits, cache);
}

// environment.dependencies as a venv; pip's output goes to the node log like the command's, redacted.
std::map<std::string, std::string> python_env(const api::NodeSpec& spec, const CommandPaths& paths,
                                              const std::vector<std::string>& env, Pipeline& pipeline) {
  RedactingFramer pip_out('e', pipeline.secrets);
  std::string framed;
  auto on_output = [&](std::string_view d) {
    framed.clear();
    pip_out.feed(d, unix_time_ms(), framed);
    pipeline.add(framed);
  };
  auto flush = [&] {
    framed.clear();
    pip_out.flush(unix_time_ms(), framed);
    pipeline.add(framed);
  };
  if (!spec.dependencies.empty()) pipeline.log.info("preparing the Python environment for environment.dependencies");
  std::map<std::string, std::string> py;
  try {
    py = prepare_python_env(spec, paths.code_dir, air_home(), env_value(env, "PATH"), on_output);
  } catch (...) {
    flush();  // pip's last words belong in the log before the failure is reported
    throw;
  }
  flush();
  return py;
}

// Everything between the spec and the command (the run flow's step 5): Slurm's placement, secrets, code,
// hyperparameters, the environment (rendezvous, venv, MLflow, secrets) and the sandbox with /Volumes.
SpawnOptions prepare_command(const NodeAgentOptions& o, api::NodeSpec& spec, Client& client, const std::string& dir,
                             Pipeline& pipeline, StatusReporter& status) {
  AgentLog& log = pipeline.log;
  if (o.slurm) {
    apply_slurm_spec(spec, environment_map());
    log.info("Slurm node " + std::to_string(spec.node_rank) + " of " + std::to_string(spec.num_nodes) +
             ", MASTER_ADDR " + spec.master_addr);
  }
  std::map<std::string, std::string> secrets = resolve_secrets(spec, o, pipeline);
  CommandPaths paths{dir + "/code", dir + "/hyperparameters.yaml", o.bin_dir.empty() ? self_dir() : o.bin_dir};
  const std::string no_sandbox = sandbox_unavailable(o);
  paths.code_shared = unpack_code(client, spec, o, runs_as_other_account(o, no_sandbox), dir, paths.code_dir, log);
  write_hyperparameters(paths.hyperparams_path, spec.parameters_yaml);
  SpawnOptions spawn;
  spawn.env = build_command_env(spec, o, paths, current_environment());
  auto py = python_env(spec, paths, spawn.env, pipeline);
  const std::string venv = py.count("VIRTUAL_ENV") ? py["VIRTUAL_ENV"] : "";
  overlay_env(spawn.env, py);
  overlay_env(spawn.env, mlflow_env(spec, o));
  overlay_env(spawn.env, secrets);
  for (auto& [name, value] : secrets) std::fill(value.begin(), value.end(), '\0');
  if (status.stop_requested()) throw Error("stopped by workspace");
  if (g_signal.load()) throw Error("node agent interrupted before the command started");
  SandboxSetup box = prepare_sandbox(spec, o, no_sandbox, dir, paths, venv, spawn.env, log);
  if (!box.notice.empty()) note_in_node_log(pipeline, box.notice);
  spawn.argv = box.argv_prefix;
  spawn.wrapped = box.notice.empty();  // in the sandbox
  spawn.argv.insert(spawn.argv.end(), {"bash", "-c", spec.command});
  spawn.cwd = paths.code_dir;
  spawn.guardian_grace = o.stop_grace;
  spawn.guardian_later = true;
  return spawn;
}

// Runs the command in its own process group until it and its group are gone; fills the final report and
// returns the agent's exit code.
int run_command(const SpawnOptions& spawn, Pipeline& pipeline, StatusReporter& status, WakePipe& wake,
                std::chrono::milliseconds grace, api::NodeStatusReport& final) {
  ChildProcess child(spawn);
  status.set_running(child.pid());
  pipeline.log.info("command started (pid " + std::to_string(child.pid()) + ")");
  child.start_guardian();  // after the report (spawn.guardian_later)
  Outcome out = supervise(child, pipeline, status, wake, grace);
  // In the sandbox the leader is bwrap, which exits 128 + N when the command was killed by signal N: said
  // as the signal it was (a command that itself exits 129..192 is reported the same way).
  if (spawn.wrapped && WIFEXITED(out.wait_status) && WEXITSTATUS(out.wait_status) > 128 &&
      WEXITSTATUS(out.wait_status) < 128 + 32)
    out.wait_status = WEXITSTATUS(out.wait_status) - 128;
  pipeline.log.info(describe_exit(out.wait_status));
  final.exit_code = exit_code_from_wait_status(out.wait_status);
  if (out.interrupted) {
    final.message = std::string("node agent interrupted by ") + sigabbrev_np(out.interrupted);
    return kExitInterrupted;
  }
  if (out.stopped) {
    final.message = "stopped by workspace";
    return kExitFailed;
  }
  final.message = describe_exit(out.wait_status);
  if (*final.exit_code != 0) return kExitFailed;
  final.state = NodeState::kSucceeded;
  return kExitOk;
}

// The final status, spooled first so that it survives a workspace that is gone (agent.log and
// final_status.json in the node's folder).
void spool_final_status(const std::string& dir, const api::NodeStatusReport& final) {
  std::ofstream f(dir + "/final_status.json", std::ios::trunc);
  f << nlohmann::json{{"state", to_string(final.state)},
                      {"exit_code", final.exit_code ? nlohmann::json(*final.exit_code) : nlohmann::json()},
                      {"message", final.message}}
           .dump()
    << "\n";
}

// Every line must reach the workspace before the final report: a restarted workspace needs them too. A
// signalled agent exits within 5 s whatever the workspace does (its lines stay in the spool). Returns the
// deadline the drain ran to; says in the final message what could not be shipped.
Clock::time_point drain_logs(const NodeAgentOptions& o, LogSpool& spool, LogShipper& shipper, Pipeline& pipeline,
                             bool signalled, api::NodeStatusReport& final) {
  auto drain_deadline = Clock::now() + (signalled ? std::chrono::milliseconds(2000) : o.drain_timeout);
  // A workspace that answers "disk full" (507) for disk_full_grace is not waited for any longer: the run
  // ends, saying so, and the lines stay in the spool. An unreachable workspace is waited for (it may be
  // restarting), up to drain_timeout.
  const auto disk_full_grace = std::chrono::milliseconds(env_ms("AIR_AGENT_DISK_FULL_GRACE_MS", 20000));
  bool drained = false, full = false;
  while (!(drained = shipper.drain(std::min(drain_deadline, Clock::now() + std::chrono::milliseconds(500))))) {
    if (Clock::now() >= drain_deadline) break;
    if (shipper.out_of_space_for() >= disk_full_grace) {
      full = true;
      break;
    }
  }
  if (!drained) {
    uint64_t left = spool.size() - shipper.acked();
    pipeline.log.info(std::to_string(left) + " bytes of log could not be shipped; they are in " + spool.path());
    final.message += "; " + std::to_string(left) + " bytes of log not " +
                     (full ? "stored: the workspace's disk is full (kept on the node in " + spool.path() + ")"
                           : "shipped (kept on the node)");
  }
  if (pipeline.spool_failed)
    final.message += "; the node's log spool could not be written (" + pipeline.spool_error +
                     "): output after byte " + std::to_string(spool.size()) + " was lost";
  return drain_deadline;
}

}  // namespace

// The run flow of one node (shared/design.md, step 5): fetch the spec, start reporting and shipping,
// prepare the command, run it, then ship every line and report how it ended.
int run_node_agent(const NodeAgentOptions& o) {
  const std::string dir = open_node_dir(o);
  AgentLog log(dir + "/agent.log", o.err);
  log.info("node " + std::to_string(o.node) + " of run " + o.run_id + " attempt " + std::to_string(o.attempt) +
           " (pid " + std::to_string(getpid()) + ")");
  WakePipe wake;
  SignalScope signals(o.handle_signals, wake.fds[1]);

  Client client(o.server, o.token);
  api::NodeSpec spec;
  try {
    spec = fetch_spec(client, o, log);
  } catch (const Error& e) {
    log.info(e.what());
    return kExitFailed;
  }
  StatusReporter status(std::make_unique<Client>(o.server, o.token), node_path(o, "status"),
                        o.heartbeat_interval, log, wake.fds[1]);
  // System metrics and step lines (launcher/agent/system_metrics.h): reported with every heartbeat.
  SystemMetrics system(std::make_unique<Client>(o.server, o.token), system_metrics_options(o, spec, dir), &log);
  std::optional<StepWatcher> steps;
  try {
    steps.emplace(spec.step_pattern);
  } catch (const Error& e) {
    log.info(std::string(e.what()) + "; using the default step pattern");
    steps.emplace("");
  }
  status.set_enricher([&system, &steps](api::NodeStatusReport& r) {
    system.fill(r);
    r.step = steps->step();
  });
  system.start();
  status.start(NodeState::kStarting);
  LogSpool spool(dir + "/log.spool", spec.max_log_bytes);
  ShipperOptions so;
  so.path = node_path(o, "logs");
  so.log = [&log](const std::string& m) { log.info(m); };
  LogShipper shipper(spool, std::make_unique<Client>(o.server, o.token), so);
  shipper.start();
  LogTail tail;
  Pipeline pipeline{spool, shipper, tail, log, {o.token}, &*steps, false, {}};

  api::NodeStatusReport final;
  final.state = NodeState::kFailed;
  int exit_code = kExitFailed;
  try {
    SpawnOptions spawn = prepare_command(o, spec, client, dir, pipeline, status);
    exit_code = run_command(spawn, pipeline, status, wake, o.stop_grace, final);
  } catch (const Error& e) {
    final.message = e.what();
    log.info(e.what());
    if (g_signal.load()) exit_code = kExitInterrupted;
  }
  if (final.state == NodeState::kFailed) final.last_lines = tail.last_lines(20);
  final.message = redact(final.message, pipeline.secrets);

  spool_final_status(dir, final);
  const bool signalled = g_signal.load() != 0;
  auto drain_deadline = drain_logs(o, spool, shipper, pipeline, signalled, final);
  shipper.stop();
  system.stop();
  status.finish();
  auto report_deadline = signalled ? Clock::now() + std::chrono::milliseconds(1500)
                                   : std::max(drain_deadline, Clock::now() + std::chrono::seconds(10));
  if (!status.send_final(final, report_deadline)) log.info("could not deliver the final status to the workspace");
  log.info("done: " + to_string(final.state));
  return exit_code;
}

}  // namespace air::launcher
