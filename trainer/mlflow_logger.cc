// MLflow metrics from rank 0: a minimal HTTP/1.1 client over a socket and a queue drained by one thread.
#include "trainer/mlflow_logger.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace air::train {
namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Closes the socket however the request ends.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

void wait_ready(int fd, short events, Clock::time_point deadline, const std::string& what) {
  pollfd p{fd, events, 0};
  for (;;) {
    int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return;
    if (r == 0) throw Error(what + " timed out");
    if (errno != EINTR) throw Error(what + ": " + std::strerror(errno));
  }
}

int connect_to(const HttpUrl& url, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &res); rc != 0)
    throw Error("cannot resolve " + url.host + ": " + ::gai_strerror(rc));
  std::string last = "no address";
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    int s = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    if (::connect(s, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
      try {
        wait_ready(s, POLLOUT, deadline, "connecting to " + url.host + ":" + port);
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == 0) {
          fd = s;
          break;
        }
        last = std::strerror(err);
      } catch (const Error& e) {
        last = e.what();
      }
    } else {
      last = std::strerror(errno);
    }
    ::close(s);
  }
  ::freeaddrinfo(res);
  if (fd < 0) throw Error("cannot connect to " + url.host + ":" + port + ": " + last);
  return fd;
}

}  // namespace

HttpUrl parse_http_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    throw Error("MLFLOW_TRACKING_URI '" + url.substr(0, url.find("://") == std::string::npos ? 0 : url.find("://")) +
                "://...' is not an http:// URL; air-train's built-in client speaks plain http only");
  std::string rest = url.substr(scheme.size());
  HttpUrl u;
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) u.path_prefix = rest.substr(slash);
  while (!u.path_prefix.empty() && u.path_prefix.back() == '/') u.path_prefix.pop_back();
  if (hostport.find('@') != std::string::npos) throw Error("MLFLOW_TRACKING_URI must not carry credentials");
  const size_t colon = hostport.rfind(':');
  if (colon != std::string::npos && hostport.find(']') == std::string::npos) {
    try {
      size_t used = 0;
      u.port = std::stoi(hostport.substr(colon + 1), &used);
      if (used != hostport.size() - colon - 1 || u.port < 1 || u.port > 65535) throw 0;
    } catch (...) {
      throw Error("MLFLOW_TRACKING_URI has a bad port: '" + hostport.substr(colon + 1) + "'");
    }
    hostport.resize(colon);
  }
  if (hostport.size() > 2 && hostport.front() == '[' && hostport.back() == ']')
    hostport = hostport.substr(1, hostport.size() - 2);
  if (hostport.empty()) throw Error("MLFLOW_TRACKING_URI has no host");
  u.host = hostport;
  return u;
}

HttpReply http_post_json(const HttpUrl& url, const std::string& path, const std::string& body,
                         const std::string& bearer_token, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Socket s{connect_to(url, deadline)};
  std::string req = "POST " + url.path_prefix + path + " HTTP/1.1\r\nHost: " + url.host + ":" +
                    std::to_string(url.port) + "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\nUser-Agent: air-train\r\n";
  if (!bearer_token.empty()) req += "Authorization: Bearer " + bearer_token + "\r\n";
  req += "\r\n" + body;
  for (size_t off = 0; off < req.size();) {
    ssize_t n = ::send(s.fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      wait_ready(s.fd, POLLOUT, deadline, "sending to " + url.host);
    } else {
      throw Error(std::string("sending to ") + url.host + ": " + std::strerror(errno));
    }
  }
  std::string resp;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n > 0) {
      resp.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      wait_ready(s.fd, POLLIN, deadline, "waiting for " + url.host);
    } else {
      throw Error(std::string("reading from ") + url.host + ": " + std::strerror(errno));
    }
  }
  HttpReply r;
  if (resp.rfind("HTTP/1.", 0) != 0 || resp.size() < 12) throw Error("not an HTTP reply from " + url.host);
  r.status = std::atoi(resp.c_str() + 9);
  const size_t head_end = resp.find("\r\n\r\n");
  if (head_end != std::string::npos) r.body = resp.substr(head_end + 4);  // chunking: only shown in errors
  return r;
}

std::unique_ptr<MlflowLogger> MlflowLogger::from_environment(std::ostream& warn) {
  const char* uri = std::getenv("MLFLOW_TRACKING_URI");
  const char* run = std::getenv("MLFLOW_RUN_ID");
  if (!uri || !*uri || !run || !*run) return nullptr;
  Options o;
  o.tracking_uri = uri;
  o.run_id = run;
  if (const char* t = std::getenv("MLFLOW_TRACKING_TOKEN")) o.token = t;
  try {
    HttpUrl url = parse_http_url(o.tracking_uri);
    return std::make_unique<MlflowLogger>(std::move(o), url, warn);
  } catch (const Error& e) {
    warn << "air-train: warning: not logging to MLflow: " << e.what() << "\n" << std::flush;
    return nullptr;
  }
}

MlflowLogger::MlflowLogger(Options o, const HttpUrl& url, std::ostream& warn)
    : o_(std::move(o)), url_(url), warn_(warn), thread_([this] { run(); }) {}

MlflowLogger::~MlflowLogger() {
  flush(std::chrono::seconds(10));
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    queue_.clear();  // a server that did not take them in 10 s: leave, after at most the request in flight
  }
  wake_.notify_all();
  thread_.join();
}

void MlflowLogger::log_step(int64_t step, const std::vector<std::pair<std::string, double>>& metrics) {
  const int64_t ts = now_ms();
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : metrics) {
      if (!std::isfinite(v)) continue;  // MLflow's JSON has no NaN/Inf; the step line shows them
      queue_.push_back({k, v, ts, step});
    }
    while (queue_.size() > o_.max_queued) queue_.pop_front();
  }
  wake_.notify_one();
}

bool MlflowLogger::flush(std::chrono::milliseconds max_wait) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, max_wait, [this] { return queue_.empty() && !busy_; });
}

int64_t MlflowLogger::points_sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

void MlflowLogger::warn_once(const std::string& what) {
  std::lock_guard lock(mu_);
  if (warned_) return;
  warned_ = true;
  // The URI is printed without any path or query (it holds no secret, but keep the line short).
  warn_ << "air-train: warning: MLflow logging to " << url_.host << ":" << url_.port << " failed: " << what
        << "; training continues, later failures are not reported\n"
        << std::flush;
}

void MlflowLogger::run() {
  for (;;) {
    std::vector<Point> batch;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and nothing left
      while (!queue_.empty() && batch.size() < o_.max_batch) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      busy_ = true;
    }
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& p : batch)
      metrics.push_back({{"key", p.key}, {"value", p.value}, {"timestamp", p.timestamp_ms}, {"step", p.step}});
    const nlohmann::json body = {{"run_id", o_.run_id}, {"metrics", metrics}};
    bool ok = false;
    try {
      HttpReply r = http_post_json(url_, "/api/2.0/mlflow/runs/log-batch", body.dump(), o_.token, o_.request_timeout);
      ok = r.status >= 200 && r.status < 300;
      if (!ok) warn_once("HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200));
    } catch (const std::exception& e) {
      warn_once(e.what());
    }
    {
      std::lock_guard lock(mu_);
      if (ok) sent_ += static_cast<int64_t>(batch.size());
      busy_ = false;
    }
    idle_.notify_all();
  }
}

}  // namespace air::train
