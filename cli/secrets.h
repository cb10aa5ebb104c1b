// `air secrets`: manage secret scopes and secrets like the databricks CLI (create-scope, put-secret,
// list-scopes, list-secrets, delete-secret, delete-scope). No command ever prints a secret value.
#pragma once
#include <functional>
#include <iosfwd>
#include <string>

#include "cli/verbs.h"
#include "core/secrets/client.h"

namespace CLI { class App; }

namespace air::cli {

// How `air secrets` finds the workspace (URL + token). The CLI's workspace resolution (profiles, the local
// daemon) installs its resolver with set_workspace_resolver; until then the default reads AIR_HOST and
// AIR_TOKEN (DATABRICKS_HOST / DATABRICKS_TOKEN also work, so the verb can manage a Databricks workspace).
using WorkspaceResolver = std::function<WorkspaceEndpoint(const Context&)>;
void set_workspace_resolver(WorkspaceResolver resolver);
bool has_workspace_resolver();
WorkspaceEndpoint resolve_workspace(const Context& ctx);

void setup_secrets(CLI::App& app, Context& ctx);

// Reads a secret value for put-secret: on a terminal (fd is a TTY) a prompt on `prompt` with echo off;
// otherwise all of `piped` (one trailing newline removed: `echo token | air secrets put-secret ...`).
std::string read_secret_value(int fd, std::istream& piped, std::ostream& prompt, const std::string& what);

// Tests: where put-secret reads a piped value and which fd it checks for a terminal (default std::cin, 0).
void set_secret_input(std::istream* in, int fd);

}  // namespace air::cli
