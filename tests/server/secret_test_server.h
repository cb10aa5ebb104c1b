// A real cpp-httplib server on 127.0.0.1 (ephemeral port) for client tests. Every request goes to one
// handler with (method, path with query, body, bearer token); the reply's status and JSON are sent back.
#pragma once
#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "server/api/secrets.h"

namespace air::test {

using TestHandler = std::function<air::server::ApiReply(const std::string& method, const std::string& path,
                                                        const std::string& body, const std::string& token)>;

class LoopbackServer {
 public:
  explicit LoopbackServer(TestHandler handler) : handler_(std::move(handler)) {
    auto route = [this](const httplib::Request& req, httplib::Response& res) {
      std::string path = req.path;
      if (!req.params.empty()) {
        std::string query;
        for (const auto& [k, v] : req.params)
          query += (query.empty() ? "?" : "&") + httplib::detail::encode_query_param(k) + "=" +
                   httplib::detail::encode_query_param(v);
        path += query;
      }
      std::string auth = req.get_header_value("Authorization"), token;
      if (auth.rfind("Bearer ", 0) == 0) token = auth.substr(7);
      auto reply = handler_(req.method, path, req.body, token);
      res.status = reply.status;
      res.set_content(reply.body.dump(), "application/json");
    };
    server_.Get(".*", route);
    server_.Post(".*", route);
    server_.Delete(".*", route);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoopbackServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  TestHandler handler_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace air::test
