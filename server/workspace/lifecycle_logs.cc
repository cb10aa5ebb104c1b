// The attempt lifecycle's log routes: a node appends numbered chunks (idempotent by offset), readers read by
// offset or tail (a follower's long poll is the HTTP server's deferred response: server/api/nodes.cc).
// Stored by server/store/logs.{h,cc}.
#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "core/wire/run_state.h"
#include "server/workspace/lifecycle.h"
#include "server/workspace/errors.h"

namespace air::server {

AppendResult Lifecycle::append_log(const std::string& id, int attempt, int node, uint64_t offset,
                                   std::string_view data) {
  {
    std::lock_guard<std::mutex> g(runs_.mu());
    check_node(runs_.find(id), attempt, node);
    if (!data.empty()) runtime_[{id, attempt, node}].last_output_ms = now();
  }
  try {
    return logs_.append({id, attempt, node}, offset, data);
  } catch (const LogWriteError& e) {
    // The agent keeps the lines in its spool and retries; 507 tells it (and a reader of its log) why.
    if (e.err == ENOSPC || e.err == EDQUOT)
      throw HttpError(507, "DISK_FULL",
                      fmt::format("the workspace's disk is full: node {}'s log cannot be stored ({}); free space "
                                  "under the workspace's home, the node keeps the lines and retries",
                                  node, std::strerror(e.err)));
    throw HttpError(500, "LOG_WRITE_FAILED", e.what());
  }
}

void Lifecycle::note_metrics(const std::string& id, int attempt) {
  std::lock_guard<std::mutex> g(runs_.mu());
  const RunRecord* r = runs_.get(id);
  if (r == nullptr) return;
  for (const auto& a : r->info.attempts)
    if (a.number == attempt)
      for (const auto& n : a.nodes) runtime_[{id, attempt, n.rank}].last_output_ms = now();
}

LogRead Lifecycle::read_log(const std::string& id, int attempt, int node, std::optional<uint64_t> offset,
                            std::optional<uint64_t> tail_lines, uint64_t max_bytes) {
  auto ended = [&] {
    std::lock_guard<std::mutex> g(runs_.mu());
    const RunRecord& r = runs_.find(id);
    check_node(r, attempt, node);
    for (const auto& a : r.info.attempts)
      if (a.number == attempt) return over(r, a) || over(r);
    return true;
  };
  bool done = ended();
  LogKey key{id, attempt, node};
  uint64_t from = offset ? *offset : tail_lines ? logs_.tail_offset(key, *tail_lines) : 0;
  LogRead out;
  out.chunk = logs_.read(key, from, max_bytes);
  out.path = logs_.path(key);
  // "done" is decided before the data is read, so a reader that sees done and reaches the end has it all.
  out.done = done;
  return out;
}

}  // namespace air::server
