// One exception type for every user-facing failure; caught in one place (cli/app.cc) and rendered as
// `air: error: <message>` plus an optional `hint:` line. Exit codes follow docs/cli.md.
#pragma once
#include <stdexcept>
#include <string>

namespace air {

enum ExitCode : int { kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitInterrupted = 130 };

class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, std::string hint = {}, int exit_code = kExitFailed)
      : std::runtime_error(std::move(message)), hint_(std::move(hint)), exit_code_(exit_code) {}
  const std::string& hint() const { return hint_; }
  int exit_code() const { return exit_code_; }

 private:
  std::string hint_;
  int exit_code_;
};

// Bad input or usage: exit code 2.
inline Error usage_error(std::string message, std::string hint = {}) {
  return Error(std::move(message), std::move(hint), kExitUsage);
}

}  // namespace air
