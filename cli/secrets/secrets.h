// `air secrets`: manage secret scopes and secrets like the databricks CLI (create-scope, put-secret,
// list-scopes, list-secrets, delete-secret, delete-scope). No command ever prints a secret value.
#pragma once
#include <iosfwd>
#include <string>

#include "cli/verbs.h"
#include "core/secrets/client.h"

namespace CLI { class App; }

namespace air::cli {

void setup_secrets(CLI::App& app, Context& ctx);

// Reads a secret value for put-secret: on a terminal (fd is a TTY) a prompt on `prompt` with echo off;
// otherwise all of `piped` (one trailing newline removed: `echo token | air secrets put-secret ...`).
std::string read_secret_value(int fd, std::istream& piped, std::ostream& prompt, const std::string& what);

// Tests: where put-secret reads a piped value and which fd it checks for a terminal (default std::cin, 0).
void set_secret_input(std::istream* in, int fd);

}  // namespace air::cli
