// Rank 0's metrics to an MLflow tracking server (MLFLOW_TRACKING_URI, MLFLOW_RUN_ID, MLFLOW_TRACKING_TOKEN):
// points are queued by the training loop and sent as runs/log-batch from a background thread, so a slow or
// dead server never blocks or stops training; a failure is reported once. Plain http through core/client's
// HTTP/1.1 client (air_http1: one connection kept alive), the same one the CLI and the agents use.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/client/http1.h"

namespace air::train {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string path_prefix;  // "" or "/something" (no trailing slash)
};

// Parses "http://host[:port][/prefix]"; throws air::Error for anything else (https included).
HttpUrl parse_http_url(const std::string& url);

class MlflowLogger {
 public:
  struct Options {
    std::string tracking_uri, run_id, token;
    std::chrono::milliseconds request_timeout{5000};
    size_t max_batch = 1000;     // MLflow's limit of metrics per runs/log-batch
    size_t max_queued = 200000;  // beyond this the oldest points are dropped (a server that is down)
  };
  // Null when MLFLOW_TRACKING_URI or MLFLOW_RUN_ID is unset. An unusable URI warns (to `warn`) and
  // returns null: training goes on without MLflow.
  static std::unique_ptr<MlflowLogger> from_environment(std::ostream& warn);

  MlflowLogger(Options o, const HttpUrl& url, std::ostream& warn);
  ~MlflowLogger();  // flushes for at most 10 s, then gives up on what is left
  MlflowLogger(const MlflowLogger&) = delete;
  MlflowLogger& operator=(const MlflowLogger&) = delete;

  // Queues one step's metrics; never blocks on the network.
  void log_step(int64_t step, const std::vector<std::pair<std::string, double>>& metrics);
  // Waits until everything queued so far was sent (or failed), at most `max_wait`. True when all was sent.
  bool flush(std::chrono::milliseconds max_wait);
  int64_t points_sent() const;

 private:
  struct Point {
    std::string key;
    double value;
    int64_t timestamp_ms, step;
  };
  void run();
  void warn_once(const std::string& what);

  Options o_;
  HttpUrl url_;
  http1::Connection conn_;  // used by the sending thread only
  std::ostream& warn_;
  mutable std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<Point> queue_;
  bool stop_ = false, busy_ = false, warned_ = false;
  int64_t sent_ = 0;
  std::thread thread_;
};

}  // namespace air::train
