// How the verbs print times, durations and states, and whether they colour them: one file for every
// formatter of the CLI's human output (the -o json envelopes are output.h's).
#pragma once
#include <cstdint>
#include <string>

#include "cli/verbs.h"
#include "core/wire/api.h"

namespace air::cli {

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

}  // namespace air::cli
