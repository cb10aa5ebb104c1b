// Our HTTP/1.1 client for plain http:// workspaces (the local one on loopback, a cluster's on its own
// network): what the workspace client needs and nothing else — one keep-alive connection, Content-Length
// and chunked bodies, streamed uploads and downloads, one deadline per exchange. No TLS, proxies, redirects
// or cookies: those URLs go to libcurl (core/client/transport.h). Why: loading libcurl (34 shared libraries
// and OpenSSL's start) was ~6.3 ms of the CLI's 9.3 ms of CPU for `air run`, and the same again in every
// node agent (docs/performance.md, "Submit to RUNNING").
#pragma once
#include <string>

#include "core/client/transport.h"

namespace air::http1 {

struct Url {
  std::string host;    // as written (an IPv6 address without its brackets)
  std::string port;    // "80" when the URL names none
  std::string prefix;  // the URL's path, without a trailing '/': prepended to every request's path
  std::string host_header;  // "host[:port]" as the Host header carries it
};
// "http://host[:port][/prefix]"; false for anything else (another scheme, user info, a query, a bad port).
bool parse_url(const std::string& url, Url& out);

class Connection : public Transport {
 public:
  explicit Connection(Url url) : url_(std::move(url)) {}
  ~Connection() override;
  HttpResponse perform(const Transfer& t, const std::string& token) override;
  int connects() const { return connects_; }  // TCP connections opened so far (tests: keep-alive)

 private:
  struct Exchange;
  enum class Step { kDone, kRetry };
  Step attempt(const Transfer& t, const std::string& head, Exchange& x, HttpResponse& r);
  void close();

  Url url_;
  int fd_ = -1;
  int connects_ = 0;
};

}  // namespace air::http1
