// Run-page routes under /api/air/v1 (server/web/api.h). Errors are thrown as HttpError and rendered by the
// server's exception handler, like every other route.
#include "server/web/api.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <list>
#include <mutex>

#include "core/wire/api.h"
#include "server/http/server.h"
#include "server/workspace/services.h"
#include "server/web/log_lines.h"
#include "server/web/sample.h"
#include "server/api/route.h"
#include "server/workspace/auth.h"
#include "server/workspace/errors.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/runs.h"

namespace air::server {

namespace {

using nlohmann::json;
using Req = http::Request;
using Res = http::Response;

const std::string kNode = R"(/runs/([A-Za-z0-9_-]+)/attempts/(\d{1,6})/nodes/(\d{1,6}))";

uint64_t param_u64(const Req& req, const char* name, uint64_t dflt) {
  if (!req.has_param(name)) return dflt;
  const std::string v = req.get_param_value(name);
  char* end = nullptr;
  unsigned long long n = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0')
    throw HttpError(400, "INVALID_ARGUMENT", fmt::format("query parameter {}={} is not a number", name, v));
  return n;
}

std::optional<double> param_double(const Req& req, const char* name) {
  if (!req.has_param(name) || req.get_param_value(name).empty()) return std::nullopt;
  const std::string v = req.get_param_value(name);
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (*end != '\0' || std::isnan(d))
    throw HttpError(400, "INVALID_ARGUMENT", fmt::format("query parameter {}={} is not a number", name, v));
  return d;
}

json number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

class WebApi {
 public:
  WebApi(http::Server& srv, WebParts parts) : srv_(srv), ws_(parts) {}

  void install() {
    get("/web/runs", [this](const Req& req, Res& res, const Principal& who) { runs(req, res, who); });
    // The node routes: the caller needs CAN_VIEW on the run (server/workspace/access.h).
    auto viewer = [this](void (WebApi::*f)(const Req&, Res&)) {
      return [this, f](const Req& req, Res& res, const Principal& who) {
        ws_.runs.require(who, req.matches[1].str(), RunLevel::kCanView);
        (this->*f)(req, res);
      };
    };
    get(kNode + "/lines", viewer(&WebApi::lines));
    get(kNode + "/find", viewer(&WebApi::find));
    get(kNode + "/download", viewer(&WebApi::download));
    get("/web/metric", [this](const Req& req, Res& res, const Principal& who) {
      // An MLflow run's metrics: CAN_VIEW on the air run it belongs to (admins: any MLflow run).
      std::string mlflow_run = req.get_param_value("run_id");
      auto air_run = mlflow_run.empty() ? std::nullopt : ws_.services.mlflow().air_run_of(mlflow_run);
      if (air_run) ws_.runs.require(who, *air_run, RunLevel::kCanView);
      else if (!who.admin && !mlflow_run.empty())
        throw HttpError(403, "PERMISSION_DENIED",
                        fmt::format("MLflow run {} belongs to no air run: only workspace admins may read it here", mlflow_run));
      metric(req, res);
    });
  }

 private:
  struct NodeLog {
    std::string path;
    uint64_t size = 0;
    bool done = false;
  };

  void get(const std::string& pattern, std::function<void(const Req&, Res&, const Principal&)> h) {
    srv_.Get(api::kPrefix + pattern, [this, h](const Req& req, Res& res) {
      std::string why;
      auto who = ws_.auth.authenticate(route::bearer(req), &why);
      if (!who) throw HttpError(401, "UNAUTHENTICATED", why);
      if (who->is_node()) throw HttpError(403, "PERMISSION_DENIED", "a node token may not use the run page's API");
      res.set_header("Cache-Control", "no-store");
      h(req, res, *who);
    });
  }

  // The log's path and size, checking that the run, attempt and node exist (read_log throws otherwise).
  NodeLog node_log(const Req& req) {
    return node_log(req.matches[1].str(), std::stoi(req.matches[2].str()), std::stoi(req.matches[3].str()));
  }
  NodeLog node_log(const std::string& id, int attempt, int node) {
    LogRead r = ws_.lifecycle.read_log(id, attempt, node, 0, std::nullopt, 1);
    NodeLog l;
    l.path = r.path;
    l.size = r.chunk.size;
    l.done = r.done;
    return l;
  }

  // ?start=L&count=C (or ?tail=C) [&wait_ms=W: when nothing is there from `start` yet, wait for growth].
  void lines(const Req& req, Res& res) {
    uint64_t count = std::min<uint64_t>(param_u64(req, "count", 200), 5000);
    auto wait = std::chrono::milliseconds(std::min<uint64_t>(param_u64(req, "wait_ms", 0), 30000));
    NodeLog l = node_log(req);
    uint64_t total = index_.total_lines(l.path, l.size);
    uint64_t start = req.has_param("tail") ? total - std::min(total, param_u64(req, "tail", 0)) : param_u64(req, "start", 0);
    send_lines(res, l, start, count);
    if (start >= total && wait.count() > 0 && !l.done) {
      // Nothing new yet: the answer waits (holding no thread) until the log grows, the run ends or the
      // wait is over; the server re-polls on every log append (Server::wake) and on its tick.
      const std::string id = req.matches[1].str();
      const int attempt = std::stoi(req.matches[2].str()), node = std::stoi(req.matches[3].str());
      const std::string token = route::bearer(req);
      res.defer(std::chrono::steady_clock::now() + wait, [this, id, attempt, node, start, count, token](Res& r) {
        // A token revoked (or expired) while the page waits ends the wait with 401.
        std::string why;
        if (!ws_.auth.authenticate(token, &why)) {
          r = Res();
          r.status = 401;
          r.set_content(json{{"error", {{"code", "UNAUTHENTICATED"}, {"message", why}, {"diagnostics", json::array()}}}}.dump(),
                        "application/json");
          return true;
        }
        NodeLog now = node_log(id, attempt, node);
        send_lines(r, now, start, count);
        return now.done || index_.total_lines(now.path, now.size) > start;
      });
    }
  }

  void send_lines(Res& res, const NodeLog& l, uint64_t start, uint64_t count) {
    LineRange r = index_.read(l.path, l.size, start, count);
    res.set_content(json{{"start", r.start}, {"total_lines", r.total_lines}, {"size", l.size}, {"done", l.done},
                         {"lines", r.lines}}.dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  }

  // ?q=TEXT or ?kind=error|fatal, &from=L, &dir=next|prev -> {"line": N or -1}.
  void find(const Req& req, Res& res) {
    NodeLog l = node_log(req);
    std::string kind = req.get_param_value("kind");
    LineMatch m = kind == "error" ? LineMatch::kError : kind == "fatal" ? LineMatch::kFatal : LineMatch::kText;
    std::string q = req.get_param_value("q");
    if (m == LineMatch::kText && q.empty()) throw HttpError(400, "INVALID_ARGUMENT", "give q=TEXT or kind=error|fatal");
    bool forward = req.get_param_value("dir") != "prev";
    int64_t line = index_.find(l.path, l.size, param_u64(req, "from", 0), forward, m, q);
    res.set_content(json{{"line", line}, {"total_lines", index_.total_lines(l.path, l.size)}}.dump(), "application/json");
  }

  // The whole stored log as a file (lines "<unix_ms> <o|e> <text>").
  void download(const Req& req, Res& res) {
    NodeLog l = node_log(req);
    auto in = std::make_shared<std::ifstream>(l.path, std::ios::binary);
    res.set_header("Content-Disposition",
                   fmt::format("attachment; filename=\"{}-attempt{}-node{}.log\"", req.matches[1].str(),
                               req.matches[2].str(), req.matches[3].str()));
    res.set_content_provider(l.size, "text/plain; charset=utf-8", [in](uint64_t off, uint64_t len, http::DataSink& sink) {
      std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(len, 1 << 20)));
      in->seekg(static_cast<std::streamoff>(off));
      in->read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (in->gcount() <= 0) return false;
      sink.write(buf.data(), static_cast<size_t>(in->gcount()));
      return true;
    });
  }

  // ?run_id=MLFLOW_RUN&key=K&points=P[&min_step=&max_step=] -> the rows in that step range, downsampled to
  // about P points; or ?after=R: the raw rows from row R on (live appends to an unsampled chart).
  void metric(const Req& req, Res& res) {
    std::string run = req.get_param_value("run_id"), key = req.get_param_value("key");
    if (run.empty() || key.empty()) throw HttpError(400, "INVALID_ARGUMENT", "give run_id and key");
    size_t points = static_cast<size_t>(std::clamp<uint64_t>(param_u64(req, "points", 1000), 2, 20000));
    auto lo = param_double(req, "min_step"), hi = param_double(req, "max_step");
    std::shared_ptr<const std::vector<SeriesPoint>> all = series(run, key);
    const std::vector<SeriesPoint>& rows = *all;
    std::vector<SeriesPoint> ranged;
    if (lo || hi)
      for (const auto& m : rows)
        if ((!lo || static_cast<double>(m.step) >= *lo) && (!hi || static_cast<double>(m.step) <= *hi)) ranged.push_back(m);
    const std::vector<SeriesPoint>& in = lo || hi ? ranged : rows;
    json pts = json::array();
    bool sampled = false;
    uint64_t after = param_u64(req, "after", 0);
    if (req.has_param("after")) {
      for (size_t i = after; i < in.size(); ++i) pts.push_back({in[i].step, number(in[i].value), in[i].timestamp});
    } else {
      auto pick = downsample(in, points);
      sampled = pick.size() < in.size();
      for (size_t i : pick) pts.push_back({in[i].step, number(in[i].value), in[i].timestamp});
    }
    res.set_content(json{{"key", key}, {"total_rows", rows.size()}, {"rows_in_range", in.size()},
                         {"sampled", sampled}, {"points", pts}}.dump(), "application/json");
  }

  // One metric's rows, ordered by step then time. Kept between requests (the 32 most recently used series):
  // a request reads only the rows after the cached ones, re-reading the last cached row to check that
  // nothing was inserted before it (then it reads the series again). So a 200,000-point series is read from
  // SQLite once, not on every zoom or refresh.
  std::shared_ptr<const std::vector<SeriesPoint>> series(const std::string& run, const std::string& key) {
    std::lock_guard<std::mutex> g(series_mu_);
    auto it = std::find_if(series_.begin(), series_.end(), [&](const auto& e) { return e.run == run && e.key == key; });
    if (it == series_.end()) {
      series_.push_front({run, key, std::make_shared<std::vector<SeriesPoint>>()});
      if (series_.size() > 32) series_.pop_back();
    } else {
      series_.splice(series_.begin(), series_, it);
    }
    auto& cached = series_.front().rows;
    try {
      auto& store = ws_.services.mlflow();
      auto fresh = store.metric_history(run, key, cached->empty() ? 0 : cached->size() - 1);
      auto grown = std::make_shared<std::vector<SeriesPoint>>();
      if (!cached->empty()) {
        const SeriesPoint& last = cached->back();
        bool same = !fresh.empty() && fresh[0].step == last.step && fresh[0].timestamp == last.timestamp &&
                    (fresh[0].value == last.value || (std::isnan(fresh[0].value) && std::isnan(last.value)));
        if (same && fresh.size() == 1) return cached;  // nothing new
        if (same) {
          *grown = *cached;
          fresh.erase(fresh.begin());
        } else {
          fresh = store.metric_history(run, key);
        }
      }
      grown->reserve(grown->size() + fresh.size());
      for (const auto& m : fresh) grown->push_back({m.step, m.value, m.timestamp});
      cached = grown;
      return grown;
    } catch (const MlflowError& e) {
      series_.pop_front();
      throw HttpError(404, "NOT_FOUND", e.what());
    }
  }

  // The runs list (newest first) with the latest value of each run's loss, for the runs table.
  // Every run the caller may view (?mine=1: its own only).
  void runs(const Req& req, Res& res, const Principal& who) {
    int limit = static_cast<int>(std::min<uint64_t>(param_u64(req, "limit", 200), 1000));
    api::RunList list = ws_.runs.list(limit, req.get_param_value("all_status") != "0", who, req.get_param_value("mine") != "1");
    json out = json::array();
    for (auto& r : list.runs) {
      ws_.services.add_metrics(r, true);
      json j = r;
      j.erase("attempts");
      j["latest_loss"] = nullptr;
      if (!r.attempts.empty()) {
        for (const auto& m : r.attempts.back().metrics)
          if (m.key == "loss" || (j["latest_loss"].is_null() && m.key.find("loss") != std::string::npos))
            j["latest_loss"] = number(m.value);
        j["nodes"] = r.attempts.back().nodes;
      }
      out.push_back(std::move(j));
    }
    res.set_content(json{{"runs", out}}.dump(), "application/json");
  }

  http::Server& srv_;
  WebParts ws_;
  LogLineIndex index_;
  struct CachedSeries {
    std::string run, key;
    std::shared_ptr<const std::vector<SeriesPoint>> rows;
  };
  std::mutex series_mu_;
  std::list<CachedSeries> series_;  // most recently used first
};

}  // namespace

void install_web_api(http::Server& srv, WebParts parts) {
  static std::vector<std::unique_ptr<WebApi>> apis;  // the routes capture it: it lives as long as the process
  apis.push_back(std::make_unique<WebApi>(srv, parts));
  apis.back()->install();
}

}  // namespace air::server
