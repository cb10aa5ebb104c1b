// What the workspace verbs (run, get, logs, list, cancel) share: connecting to the configured or embedded
// workspace, and the formatting of times, durations and states.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "cli/verbs.h"
#include "core/wire/api.h"
#include "core/client/client.h"
#include "core/client/config.h"

namespace air::cli {

struct Session {
  WorkspaceTarget target;
  std::unique_ptr<Client> client;
};

// The configured workspace, or the embedded local one (started on demand).
Session connect(const Context& ctx);

api::RunInfo fetch_run(Client& c, const std::string& run_id);

std::string format_time(int64_t unix_ms);          // "2026-12-02 12:34:56 UTC", "-" for 0
std::string format_iso(int64_t unix_ms);           // "2026-12-02T12:34:56.789Z"
std::string format_duration(int64_t ms);           // "1h 2m 3s", "850ms"
int64_t run_duration_ms(const api::RunInfo& r, int64_t now_ms);
int64_t now_ms();
bool is_run_terminal(const std::string& state);
// Coloured on a terminal ("● SUCCEEDED" in green), plain otherwise.
std::string styled_state(const std::string& state, bool color);
bool stdout_is_tty();
bool stderr_is_tty();
// Whether output to fd (1 or 2) gets colour: --color always|never wins; else off when NO_COLOR is set to
// anything non-empty (no-color.org), else on for a terminal.
bool use_color(const Context& ctx, int fd);
// A run id as the user typed it: 1-64 of [A-Za-z0-9_-], else a usage error.
void check_run_id(const std::string& id);

}  // namespace air::cli
