// StatusReporter: heartbeats and the final report (see launcher/agent/status.h).
#include "launcher/agent/status.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace air::launcher {

namespace {

// The status reply (api::NodeStatusReply) asks the node to stop; an unreadable reply does not.
bool reply_says_stop(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return false;
  try {
    return j.get<api::NodeStatusReply>().action == "stop";
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

StatusReporter::StatusReporter(std::unique_ptr<Client> client, std::string path,
                               std::chrono::milliseconds interval, AgentLog& log, int wake_fd)
    : client_(std::move(client)), path_(std::move(path)), interval_(interval), log_(log), wake_fd_(wake_fd) {}

StatusReporter::~StatusReporter() { finish(); }

void StatusReporter::start(NodeState state) {
  current_.state = state;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) current_.host = host;  // shown on the run page
  changed_ = true;
  thread_ = std::thread([this] { loop(); });
}

void StatusReporter::set_running(int pid) {
  {
    std::lock_guard lock(mu_);
    current_.state = NodeState::kRunning;
    current_.pid = pid;
    changed_ = true;
  }
  cv_.notify_all();
}

void StatusReporter::finish() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<bool> StatusReporter::send(const api::NodeStatusReport& report) {
  HttpResponse r = client_->send("POST", path_, nlohmann::json(report).dump(), "application/json", 10000);
  if (r.status == 0 || r.status >= 500) {
    if (!unreachable_) {
      unreachable_ = true;
      log_.info("cannot report status to the workspace (" + describe(r) + "); the command keeps running");
    }
    return std::nullopt;
  }
  if (unreachable_) {
    unreachable_ = false;
    log_.info("reached the workspace again");
  }
  if (!r.ok()) {
    log_.info("the workspace refused a status report: " + describe(r));
    return false;
  }
  bool stop = reply_says_stop(r.body);
  if (stop && !stop_requested_.exchange(true)) {
    log_.info("the workspace asked this node to stop");
    char b = 's';
    ssize_t ignored = ::write(wake_fd_, &b, 1);
    (void)ignored;
  }
  return stop;
}

void StatusReporter::loop() {
  std::unique_lock lock(mu_);
  while (!done_) {
    api::NodeStatusReport report = current_;
    changed_ = false;
    lock.unlock();
    if (enrich_) enrich_(report);
    send(report);
    lock.lock();
    cv_.wait_for(lock, interval_, [&] { return done_ || changed_; });
  }
}

bool StatusReporter::send_final(const api::NodeStatusReport& report, std::chrono::steady_clock::time_point deadline) {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    if (send(report).has_value()) return true;
    if (std::chrono::steady_clock::now() + backoff > deadline) return false;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

}  // namespace air::launcher
