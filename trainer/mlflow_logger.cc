// MLflow metrics from rank 0: a queue drained by one thread, which posts through core/client/http1.h.
#include "trainer/mlflow_logger.h"

#include <cmath>
#include <cstdlib>
#include <ostream>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace air::train {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// http1's form of a parsed tracking URI.
http1::Url to_http1(const HttpUrl& u) {
  const std::string port = std::to_string(u.port);
  const std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  return {u.host, port, u.path_prefix, host + ":" + port};
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
    : o_(std::move(o)), url_(url), conn_(to_http1(url)), warn_(warn), thread_([this] { run(); }) {}

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
      const std::string text = body.dump();
      Transfer t;
      t.method = "POST";
      t.path = "/api/2.0/mlflow/runs/log-batch";
      t.body = text;
      t.content_type = "application/json";
      t.timeout_ms = static_cast<long>(o_.request_timeout.count());
      const int connects = conn_.connects();
      HttpResponse r = conn_.perform(t, o_.token);
      ok = r.ok();
      const std::string where = url_.host + ":" + std::to_string(url_.port);
      if (r.status == 0)  // no connection was made (http1 reconnects a kept-alive one that closed), or no reply
        warn_once((conn_.connects() == connects ? "cannot connect to " : "no reply from ") + where + ": " +
                  r.transport_error);
      else if (!ok)
        warn_once("HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200));
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
