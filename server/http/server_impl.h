// Internals of server/http_server*.cc: the pool, the server state, one connection's state and its byte transport (plain or TLS).
// Only the I/O thread touches a connection, except while a pool job owns it (phase kJob or kStream).
#pragma once
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "server/http/parse.h"
#include "server/http/server.h"

namespace air::server::http {

using Clock = std::chrono::steady_clock;

struct Route {
  std::string method;
  std::string pattern_text;
  std::regex pattern;
  Handler handler;
  ReaderHandler reader;
  RouteOptions options;
};

enum class Phase {
  kHandshake,  // TLS handshake
  kHead,       // waiting for (the rest of) a request head; idle between requests
  kBody,       // reading a buffered body
  kJob,        // a pool thread runs the gate or the handler
  kStream,     // a pool thread reads the body itself (ContentReader) and owns the socket
  kDeferred,   // a long poll waits for wake() or its deadline
  kWrite,      // sending a response
  kLinger,     // response sent, write side shut: unread input is discarded so that the peer gets the
               // response rather than a reset (bounded in time)
};

enum class IoResult { kOk, kAgain, kEof, kError };

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  Phase phase = Phase::kHead;
  std::string in, out;
  size_t out_off = 0;
  bool ssl_wants_write = false;

  // The request in progress.
  std::unique_ptr<Request> req;
  const Route* route = nullptr;
  bool keep_alive = true, chunked_body = false, gated = false, expect_continue = false, is_head = false;
  uint64_t content_length = 0;
  uint64_t body_filled = 0;  // bytes of a Content-Length body received (req->body is sized ahead of them)
  ChunkedDecoder decoder;
  bool body_complete = false, body_too_large = false;

  // The response in progress.
  std::unique_ptr<Response> res;
  uint64_t send_from = 0, send_to = 0;  // fixed-length provider window [from, to)
  bool streaming = false, provider_waiting = false, chunked_done = false;
  bool polling = false;  // a deferred poll is on the pool

  Clock::time_point deadline = Clock::time_point::max();
  int epoll_events = 0;

  ~Conn();
  // Non-blocking transfer; n receives the bytes moved.
  IoResult read_some(char* buf, size_t cap, size_t& n);
  IoResult write_some(const char* buf, size_t len, size_t& n);
  void reset_request();
};

inline const char* reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 416: return "Range Not Satisfiable";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 507: return "Insufficient Storage";
    default: return "Status";
  }
}

inline void default_error(Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(message + "\n", "text/plain");
}

class Pool {
 public:
  explicit Pool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> g(mu_);
      jobs_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        f = std::move(jobs_.front());
        jobs_.pop_front();
      }
      f();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};


struct Server::Impl {
  Limits limits;
  SSL_CTX* ssl_ctx = nullptr;
  std::vector<std::unique_ptr<Route>> routes;
  ExceptionHandler on_exception;
  Observer observer;
  Identify identify;
  ErrorHandler on_error = default_error;
  int listen_fd = -1, epfd = -1, evfd = -1;
  std::unordered_map<int, std::shared_ptr<Conn>> conns;
  std::mutex post_mu;
  std::vector<std::function<void()>> posted;
  std::atomic<bool> stopping{false}, woken{false}, draining{false};
  bool drain_started = false;
  Clock::time_point drain_deadline;
  std::unique_ptr<Pool> pool;
  Clock::time_point next_tick = Clock::now(), next_slow_tick = Clock::now();
  std::unordered_map<int, std::shared_ptr<Conn>> waiters;  // deferred polls and waiting chunked providers
  // Request bodies of finished requests, kept for the next ones (I/O thread only): a node's log chunks
  // (1 MiB each) then land in memory that is already mapped, instead of fresh pages faulted in and zeroed
  // for every request. Bounded: kSpareBodies buffers of at most kSpareBodyBytes.
  static constexpr size_t kSpareBodies = 16, kSpareBodyBytes = size_t{2} << 20;
  std::vector<std::string> spare_bodies;

  ~Impl();
  void post(std::function<void()> f);
  void run();
  void on_tick();
  void drain_step();
  void accept_all();
  void on_event(const std::shared_ptr<Conn>& c, uint32_t events);
  void do_handshake(const std::shared_ptr<Conn>& c);
  bool fill_input(const std::shared_ptr<Conn>& c);
  void advance(const std::shared_ptr<Conn>& c);
  void start_request(const std::shared_ptr<Conn>& c);
  void read_body(const std::shared_ptr<Conn>& c);
  // A Content-Length body: what is buffered, then (once the gate let it in) straight from the socket.
  // False: the connection was closed.
  bool read_fixed_body(const std::shared_ptr<Conn>& c);
  void end_request(Conn& c);  // reset_request, keeping the body's buffer for the next request
  void dispatch(const std::shared_ptr<Conn>& c, bool gate_only);
  void dispatch_stream(const std::shared_ptr<Conn>& c);
  void run_handler(Conn& c, Request& req, Response& res, const ContentReader* reader);
  void observe(const Request& req, const Response& res);
  void identify_caller(Request& req);
  void begin_response(const std::shared_ptr<Conn>& c);
  void poll_deferred(const std::shared_ptr<Conn>& c);
  void wake_waiters(bool all);
  void serialize(Conn& c);
  void pump_output(const std::shared_ptr<Conn>& c);
  void finish_response(const std::shared_ptr<Conn>& c);
  void fail(const std::shared_ptr<Conn>& c, int status, const std::string& message);
  void close_conn(const std::shared_ptr<Conn>& c);
  void update_interest(const std::shared_ptr<Conn>& c);
  bool stream_read(Conn& c, const ContentSink& sink);
};

}  // namespace air::server::http
