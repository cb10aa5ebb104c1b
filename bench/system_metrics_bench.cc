// The node agent's CPU cost of system metrics (issue 45): one sample (NVML, /proc, statvfs) and its POST
// to the MLflow API of a loopback HTTP server, timed on the calling thread's CPU clock; then the sampler
// thread itself at the given interval for a while, timed on the whole process's CPU (an upper bound: the
// loopback server's thread is counted too). Prints one table row per interval (bench/system_metrics.sh).
#include <httplib.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "launcher/agent/system_metrics.h"

using namespace air;

namespace {

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& v) { return static_cast<double>(v.tv_sec) * 1e3 + static_cast<double>(v.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::atoi(argv[1]) : 200;
  const double live_s = argc > 2 ? std::atof(argv[2]) : 10;
  httplib::Server srv;
  size_t posted = 0;
  srv.Post("/api/2.0/mlflow/runs/log-batch", [&](const httplib::Request&, httplib::Response& res) {
    ++posted;
    res.set_content("{}", "application/json");
  });
  int port = srv.bind_to_any_port("127.0.0.1");
  std::thread server([&] { srv.listen_after_bind(); });
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  launcher::SystemMetricsOptions o;
  o.mlflow_run_id = "bench";
  auto make = [&](std::chrono::milliseconds interval) {
    o.interval = interval;
    return std::make_unique<launcher::SystemMetrics>(std::make_unique<Client>(url, "tok"), o, nullptr);
  };
  // One sample and its POST, many times: the CPU each costs on the sampler's thread.
  auto m = make(std::chrono::milliseconds(1000));
  m->post(m->sample(), 0);  // the first connection and NVML's first call are not typical
  size_t metrics = 0;
  double t0 = thread_cpu_ms();
  auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < samples; ++i) {
    auto s = m->sample();
    metrics = s.size();
    m->post(s, i + 1);
  }
  double per_sample = (thread_cpu_ms() - t0) / samples;
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count() / samples;
  std::printf("per sample: %zu metrics, %d GPU(s), %.3f ms CPU (%.3f ms wall), over %d samples\n", metrics,
              m->gpu_count(), per_sample, wall, samples);
  std::printf("%-10s %-22s %-26s\n", "interval", "share of a core (est.)", "share of a core (measured)");
  for (int interval_ms : {1000, 10000}) {
    auto live = make(std::chrono::milliseconds(interval_ms));
    double p0 = process_cpu_ms();
    live->start();
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(live_s * 1000)));
    live->stop();
    double measured = 100.0 * (process_cpu_ms() - p0) / (live_s * 1000);
    std::printf("%-10s %-22s %-26s\n", (std::to_string(interval_ms / 1000) + " s").c_str(),
                (std::to_string(100.0 * per_sample / interval_ms).substr(0, 6) + " %").c_str(),
                (std::to_string(measured).substr(0, 6) + " % over " + std::to_string(static_cast<int>(live_s)) + " s").c_str());
  }
  srv.stop();
  server.join();
  std::printf("posted %zu batches\n", posted);
  return 0;
}
