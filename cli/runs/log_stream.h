// Reading node logs from the workspace and printing them: used by `air logs` and `air run --watch`.
// The stored format is "<unix_ms> <o|e> <text>" per line; printing shows the text (with --timestamps an
// ISO time first, with several nodes a "[node N]" prefix) and marks lines that match fatal patterns.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "core/client/client.h"

namespace air::cli {

struct LogPoll {
  std::string data;         // whole lines (a partial last line only when the log is done)
  uint64_t offset = 0;      // where data starts
  uint64_t size = 0;        // the log's size
  bool done = false;        // the attempt ended: nothing more will come
  uint64_t end() const { return offset + data.size(); }
};

// One read: from `offset`, or the last `tail` lines when offset is unset. wait_ms > 0 long-polls.
LogPoll poll_log(Client& c, const std::string& run_id, int attempt, int node, std::optional<uint64_t> offset,
                 std::optional<uint64_t> tail, int wait_ms);

struct PrintOptions {
  bool timestamps = false;
  bool json = false;
  bool color = false;       // highlight fatal lines (terminal only)
  bool prefix_node = false; // "[node N] "
  int64_t since_ms = 0;     // drop lines older than this (0: keep all)
};

// Prints the complete lines of `data`, keeping an unfinished last line in `partial` for the next call.
// Returns the number of lines printed.
size_t print_log_lines(std::ostream& out, std::string& partial, std::string_view data, int node,
                       const PrintOptions& o, bool flush_partial);

}  // namespace air::cli
