// The agent's status channel: a thread that reports the node's state to the workspace right away on a
// change and every heartbeat interval otherwise, and notices the workspace's "stop".
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/client/client.h"
#include "launcher/agent/node_agent.h"

namespace air::launcher {

class StatusReporter {
 public:
  // wake_fd: written to (one byte) when the workspace says stop, to wake the agent's poll loop.
  StatusReporter(std::unique_ptr<Client> client, std::string path, std::chrono::milliseconds interval,
                 AgentLog& log, int wake_fd);
  ~StatusReporter();
  // Called on every heartbeat's copy of the report before it is sent (the node's GPU and step figures);
  // set before start().
  void set_enricher(std::function<void(api::NodeStatusReport&)> f) { enrich_ = std::move(f); }
  void start(NodeState state);
  void set_running(int pid);
  bool stop_requested() const { return stop_requested_.load(); }
  // Ends the heartbeats (the final report is sent by send_final).
  void finish();
  // Sends a terminal report, retrying transport failures and 5xx until the deadline; true when delivered.
  bool send_final(const api::NodeStatusReport& report, std::chrono::steady_clock::time_point deadline);
  // One report now; nullopt when it did not reach the workspace. Sets stop_requested on "stop".
  std::optional<bool> send(const api::NodeStatusReport& report);

 private:
  void loop();
  std::unique_ptr<Client> client_;
  std::string path_;
  std::chrono::milliseconds interval_;
  AgentLog& log_;
  int wake_fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  api::NodeStatusReport current_;
  std::function<void(api::NodeStatusReport&)> enrich_;
  bool changed_ = false, done_ = false, unreachable_ = false;
  std::atomic<bool> stop_requested_{false};
  std::thread thread_;
};

}  // namespace air::launcher
