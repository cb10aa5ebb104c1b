// A small workspace for the launcher tests: the agent endpoints of the contract on loopback (cpp-httplib),
// with the log-append semantics (idempotent by offset, 409 LOG_GAP) and knobs to fail or drop requests,
// and to go down and come back on the same port.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/codec.h"

namespace air::test {

class TestWorkspace {
 public:
  explicit TestWorkspace(std::string token = "tok-secret-123") : token_(std::move(token)) { start(0); }
  ~TestWorkspace() { down(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& token() const { return token_; }

  // Stops listening (connections are refused) until up() is called.
  void down() {
    std::unique_ptr<httplib::Server> s;
    std::thread t;
    {
      std::lock_guard lock(server_mu_);
      s = std::move(server_);
      t = std::move(thread_);
    }
    if (s) s->stop();
    if (t.joinable()) t.join();
  }
  void up() { start(port_); }

  struct Node {
    nlohmann::json spec = nlohmann::json::object();
    std::string log;
    std::vector<nlohmann::json> statuses;
    bool stop = false;
    int log_posts = 0;
    int partial_bodies = 0;  // bodies that did not end with '\n'
    std::vector<std::pair<uint64_t, int64_t>> arrivals;  // (log size after an append, unix ms) for latency
  };

  // All state is behind mu.
  std::mutex mu;
  std::map<std::string, Node> nodes;          // key "run/attempt/node"
  std::map<std::string, std::string> blobs;   // digest -> bytes
  std::map<std::string, std::string> secrets; // "scope/key" -> value, served at /api/2.0/secrets/get
  int fail_log_posts_before_store = 0;        // next N log posts: 500, nothing stored
  int fail_log_posts_after_store = 0;         // next N log posts: stored, then 500 (a lost reply)
  int fail_every_nth_log_post = 0;            // every Nth post fails (alternating before/after store)
  std::atomic<int> requests{0};

  Node& node(const std::string& run, int attempt, int n) {
    return nodes[run + "/" + std::to_string(attempt) + "/" + std::to_string(n)];
  }

  Node snapshot_of(const std::string& run, int attempt, int n) {
    std::lock_guard lock(mu);
    return node(run, attempt, n);
  }

 private:
  void start(int port) {
    auto s = std::make_unique<httplib::Server>();
    s->set_tcp_nodelay(true);  // otherwise each reply waits on the client's delayed ACK (~40 ms)
    s->set_keep_alive_timeout(1);  // stop() waits for idle keep-alive connections to time out
    routes(*s);
    if (port == 0) {
      port_ = s->bind_to_any_port("127.0.0.1");
    } else {
      // The old socket may linger for a moment after stop().
      for (int i = 0; i < 100 && !s->bind_to_port("127.0.0.1", port); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    httplib::Server* raw = s.get();
    std::lock_guard lock(server_mu_);
    server_ = std::move(s);
    thread_ = std::thread([raw] { raw->listen_after_bind(); });
    while (!raw->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    requests++;
    if (req.get_header_value("Authorization") == "Bearer " + token_) return true;
    res.status = 401;
    res.set_content(R"({"error":{"code":"UNAUTHENTICATED","message":"bad token"}})", "application/json");
    return false;
  }

  static std::string key(const httplib::Request& req) {
    return std::string(req.matches[1]) + "/" + std::string(req.matches[2]) + "/" + std::string(req.matches[3]);
  }

  void routes(httplib::Server& s) {
    const std::string node_re = R"(/api/air/v1/runs/([^/]+)/attempts/(\d+)/nodes/(\d+))";
    s.Get(node_re + "/spec", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      std::lock_guard lock(mu);
      auto it = nodes.find(key(req));
      if (it == nodes.end()) {
        res.status = 404;
        res.set_content(R"({"error":{"code":"NOT_FOUND","message":"no such node"}})", "application/json");
        return;
      }
      res.set_content(it->second.spec.dump(), "application/json");
    });
    s.Post(node_re + "/status", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      std::lock_guard lock(mu);
      Node& n = nodes[key(req)];
      n.statuses.push_back(nlohmann::json::parse(req.body, nullptr, false));
      res.set_content(nlohmann::json{{"action", n.stop ? "stop" : "continue"}}.dump(), "application/json");
    });
    s.Post(node_re + "/logs", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      append_log(req, res);
    });
    s.Get("/api/2.0/secrets/get", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      std::lock_guard lock(mu);
      auto it = secrets.find(req.get_param_value("scope") + "/" + req.get_param_value("key"));
      if (it == secrets.end()) {
        res.status = 404;
        res.set_content(R"({"error_code":"RESOURCE_DOES_NOT_EXIST","message":"no such secret"})", "application/json");
        return;
      }
      res.set_content(nlohmann::json{{"key", req.get_param_value("key")}, {"value", air::base64_encode(it->second)}}.dump(),
                      "application/json");
    });
    s.Get(R"(/api/air/v1/snapshots/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      std::lock_guard lock(mu);
      auto it = blobs.find(req.matches[1]);
      if (it == blobs.end()) {
        res.status = 404;
        return;
      }
      res.set_content(it->second, "application/octet-stream");
    });
  }

  void append_log(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    Node& n = nodes[key(req)];
    n.log_posts++;
    bool fail_before = false, fail_after = false;
    if (fail_log_posts_before_store > 0) {
      fail_log_posts_before_store--;
      fail_before = true;
    } else if (fail_log_posts_after_store > 0) {
      fail_log_posts_after_store--;
      fail_after = true;
    } else if (fail_every_nth_log_post > 0 && n.log_posts % fail_every_nth_log_post == 0) {
      (n.log_posts / fail_every_nth_log_post) % 2 ? fail_before = true : fail_after = true;
    }
    if (fail_before) {
      res.status = 500;
      return;
    }
    uint64_t offset = std::stoull(req.get_param_value("offset"));
    uint64_t cur = n.log.size();
    const std::string& body = req.body;
    if (!body.empty() && body.back() != '\n') n.partial_bodies++;
    if (offset > cur) {
      res.status = 409;
      res.set_content(nlohmann::json{{"error", {{"code", "LOG_GAP"}, {"message", "gap"}}}, {"size", cur}}.dump(),
                      "application/json");
      return;
    }
    if (offset + body.size() > cur) {
      n.log.append(body, cur - offset, std::string::npos);
      n.arrivals.emplace_back(n.log.size(), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count());
    }
    if (fail_after) {
      res.status = 500;
      return;
    }
    res.set_content(nlohmann::json{{"size", n.log.size()}}.dump(), "application/json");
  }

  std::string token_;
  int port_ = 0;
  std::mutex server_mu_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

}  // namespace air::test
