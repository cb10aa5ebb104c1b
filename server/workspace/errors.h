// HttpError: a refusal with an HTTP status, thrown by the workspace's parts and rendered by the routes as
// {"error": {"code", "message", "diagnostics"}}.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "core/base/diagnostics.h"

namespace air::server {

struct HttpError : std::runtime_error {
  HttpError(int status, std::string code, std::string message, std::vector<Diagnostic> diags = {})
      : std::runtime_error(message), status(status), code(std::move(code)), diagnostics(std::move(diags)) {}
  int status;
  std::string code;
  std::vector<Diagnostic> diagnostics;
};

}  // namespace air::server
