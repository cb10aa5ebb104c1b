// Our HTTP/1.1 server core: one epoll thread owns every socket (an idle or slow connection costs a file
// descriptor, never a thread) and a small bounded pool runs the handlers. Why our own: docs/server.md.
//
// The route-facing interface mirrors cpp-httplib's, so a route ports by renaming httplib:: to http:::
//
//   http::Server srv;
//   srv.Get(R"(/api/x/([a-z]+))", [](const http::Request& req, http::Response& res) {
//     req.matches[1];  req.get_header_value("Authorization");  req.get_param_value("limit");  req.body;
//     res.status = 200;  res.set_header("X-A", "1");  res.set_content(text, "application/json");
//   });
//   Route methods: Get (also answers HEAD), Post, Put, Delete, Patch. Patterns are std::regex on the path
//   (full match); the first registered route that matches wins.
//
// Per-route options (the last argument, RouteOptions): max_body is enforced from Content-Length before
// any body byte is read (413), and counted while a chunked body arrives; `gate` runs after the headers
// and before the body (an authentication check: it may answer by setting res.status and returning false,
// or by throwing, which goes to the exception handler). `Expect: 100-continue` is answered after the gate.
//
// Streaming a request body to a sink (uploads): register with a ContentReader handler; the body is then
// not buffered: read([](const char* data, size_t n) { ...; return true; }) delivers it in pieces
// (Content-Length or chunked); a sink returning false stops reading (the connection is then closed).
//
// Responses: set_content (a string); set_content_provider(length, type, provider) streams a body of known
// length from provider(offset, max, sink) and honours Range (206/416) for GET; set_chunked_content_provider
// (type, provider) streams a chunked body of unknown length: provider(sink) may write, call sink.done(),
// or write nothing and return true to be called again when Server::wake() runs or after a short tick (log
// follow, server-sent events): a waiting response holds no thread. Providers run on the I/O thread and
// must not block. Long polls use res.defer(deadline, poll): poll(res) runs on the pool now and again on
// wake()/ticks until it returns true or the deadline passes (then its last answer is sent).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace air::server::http {

struct CaseLess {
  bool operator()(const std::string& a, const std::string& b) const;
};
using Headers = std::multimap<std::string, std::string, CaseLess>;
using Params = std::multimap<std::string, std::string>;

struct Request {
  std::string method, path, target, version;  // target: the path with its query string, as sent
  Headers headers;
  Params params;
  std::string body;         // empty for streamed (ContentReader) routes
  std::smatch matches;      // the route pattern's groups, into `path`
  std::string remote_addr;
  std::string caller;       // who sent it, as Server::set_identify's function named it before the gate ran
  bool identified = false;

  bool has_header(const std::string& key) const { return headers.count(key) > 0; }
  std::string get_header_value(const std::string& key, const char* dflt = "") const;
  bool has_param(const std::string& key) const { return params.count(key) > 0; }
  std::string get_param_value(const std::string& key) const;
};

// Where a provider writes. write() never blocks: the bytes are queued on the connection.
class DataSink {
 public:
  virtual ~DataSink() = default;
  virtual void write(const char* data, size_t n) = 0;
  void write(const std::string& s) { write(s.data(), s.size()); }
  virtual void done() = 0;  // chunked: the body is complete
};

// Fixed length: (offset, at most n bytes) -> wrote something; false aborts the connection.
using ContentProvider = std::function<bool(uint64_t offset, uint64_t n, DataSink& sink)>;
// Chunked: false aborts; writing nothing and returning true waits for wake() or the next tick.
using ChunkedProvider = std::function<bool(DataSink& sink)>;

struct Response {
  int status = 200;
  Headers headers;
  std::string body;

  void set_header(const std::string& key, const std::string& value);
  void set_content(std::string content, const std::string& content_type);
  void set_content_provider(uint64_t length, const std::string& content_type, ContentProvider p);
  void set_chunked_content_provider(const std::string& content_type, ChunkedProvider p);
  void defer(std::chrono::steady_clock::time_point deadline, std::function<bool(Response&)> poll);

  // Used by the server.
  uint64_t provider_length = 0;
  ContentProvider provider;
  ChunkedProvider chunked;
  std::chrono::steady_clock::time_point deadline;
  std::function<bool(Response&)> poll;
};

using ContentSink = std::function<bool(const char* data, size_t n)>;
using ContentReader = std::function<bool(const ContentSink&)>;
using Handler = std::function<void(const Request&, Response&)>;
using ReaderHandler = std::function<void(const Request&, Response&, const ContentReader&)>;
using Gate = std::function<bool(const Request&, Response&)>;
using ExceptionHandler = std::function<void(const Request&, Response&, std::exception_ptr)>;
// Renders the errors the server itself answers (400, 404, 405, 408, 413, 431, ...).
using ErrorHandler = std::function<void(Response&, int status, const std::string& message)>;

// Told of every request a route answered (after its handler, or after its gate refused it): the audit log.
using Observer = std::function<void(const Request&, const Response&)>;
// Names the caller of a request once its headers are in, before its gate and handler run (a handler that
// revokes the very token it was called with is still logged as its caller): Request::caller.
using Identify = std::function<std::string(const Request&)>;

struct RouteInfo {
  std::string method, pattern;  // as registered
};

struct RouteOptions {
  uint64_t max_body = 1 << 20;
  Gate gate;
};

struct Limits {
  size_t max_header_bytes = 16 << 10;  // request line + headers
  size_t max_headers = 64;
  int header_timeout_ms = 10000;        // from a request's first byte to its blank line: else 408
  int idle_timeout_ms = 120000;         // a keep-alive connection with no request in flight
  int body_timeout_ms = 30000;          // no body byte for this long: 408
  int write_timeout_ms = 60000;         // a reader that takes nothing for this long is cut
  size_t max_connections = 20000;
  int workers = 16;  // handlers may wait on the disk (log appends pace their writeback): room for the rest
  int drain_timeout_ms = 8000;  // stop(): requests in flight get this long to be answered
};

struct TlsFiles {
  std::string cert, key;  // PEM; both empty: plain HTTP
};

class Server {
 public:
  explicit Server(Limits limits = {}, TlsFiles tls = {});
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Get(const std::string& pattern, Handler h, RouteOptions o = {});
  void Post(const std::string& pattern, Handler h, RouteOptions o = {});
  void Put(const std::string& pattern, Handler h, RouteOptions o = {});
  void Put(const std::string& pattern, ReaderHandler h, RouteOptions o = {});
  void Post(const std::string& pattern, ReaderHandler h, RouteOptions o = {});
  void Delete(const std::string& pattern, Handler h, RouteOptions o = {});
  void Patch(const std::string& pattern, Handler h, RouteOptions o = {});
  void set_exception_handler(ExceptionHandler h);
  void set_error_handler(ErrorHandler h);
  void set_observer(Observer o);  // before listen()
  void set_identify(Identify f);  // before listen()
  // Every registered route, in registration order (the security test walks them all).
  std::vector<RouteInfo> routes() const;

  // Binds without SO_REUSEPORT (two servers never share a port). port 0: any free port. Returns the
  // bound port, or -1 with errno set.
  int bind(const std::string& host, int port);
  // Serves until stop(); call after bind(). stop() drains: no new connections, idle ones and long polls
  // closed, requests in flight answered (Connection: close), at most Limits::drain_timeout_ms.
  void listen();
  void stop();  // thread-safe
  void wake();  // thread-safe: re-polls waiting responses now
  bool tls() const;

  struct Impl;

 private:
  void add(const std::string& method, const std::string& pattern, Handler h, ReaderHandler rh, RouteOptions o);
  std::unique_ptr<Impl> impl_;
};

// Parses "bytes=a-b" against a body of `size` bytes. Returns false when the header is absent or not a
// single byte range (then the whole body is sent); sets unsatisfiable when no byte of it exists (416).
bool parse_range(const std::string& header, uint64_t size, uint64_t& first, uint64_t& last, bool& unsatisfiable);

}  // namespace air::server::http
