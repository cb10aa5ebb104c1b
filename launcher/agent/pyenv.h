// Python environments for `environment.dependencies` on the local backend: one virtual environment per
// distinct (interpreter, version, dependencies) under $AIR_HOME/envs/<sha256>, built once with
// `python3 -m venv` + pip, reused by later runs, and built once even when several nodes ask at the same time.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace air::launcher {

struct PyEnvSpec {
  std::string version;                    // environment.version (part of the key; not a Python version)
  std::vector<std::string> dependencies;  // pip requirement strings, passed to pip as given
  std::string python = "python3";         // interpreter that creates the venv (looked up on PATH)
  std::string work_dir;                   // where pip runs, so relative paths ("./pkg") resolve; "" = cwd
};

struct PyEnvResult {
  bool ok = false;
  bool built_now = false;  // false when an existing environment was reused
  std::string key;         // sha256 hex of the normalized spec
  std::string env_dir;     // $AIR_HOME/envs/<key>
  std::string bin_dir;     // env_dir/bin: put first on the command's PATH
  std::string output;      // venv's and pip's combined output when this call built (or failed to build)
  std::string summary;     // one line for `get run` when !ok
};

// The text whose SHA-256 names the environment: interpreter path and version, environment.version, and the
// dependencies in order (a local path is made absolute against work_dir, so two projects' "./pkg" differ).
std::string normalized_pyenv_spec(const PyEnvSpec& spec);

// Finds or builds the environment. `on_output` (optional) receives venv/pip output as it is produced, so
// the agent can ship it to the node log. Never throws for a failed install: ok=false, output and summary say
// why. Throws air::Error only when $AIR_HOME/envs cannot be used at all.
PyEnvResult ensure_python_env(const PyEnvSpec& spec, const std::string& air_home,
                              const std::function<void(std::string_view)>& on_output = {});

// PATH with bin_dir first, and VIRTUAL_ENV, for the command's environment.
std::map<std::string, std::string> python_env_vars(const PyEnvResult& env, const std::string& current_path);

}  // namespace air::launcher
