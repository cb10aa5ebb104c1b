// Building venvs. The environment is built in place under an flock on envs/<key>.lock and marked complete
// last (a marker file renamed into place): venvs hard-code their own path in scripts' shebangs, so a venv
// built elsewhere and renamed would start console scripts (torchrun, accelerate) with a path that is gone.
#include "launcher/agent/pyenv.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/base/error.h"
#include "core/base/process.h"

namespace fs = std::filesystem;

namespace air::launcher {

namespace {

constexpr const char* kCompleteMarker = ".air-env-complete";

std::string sha256_hex(const std::string& text) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

// A program on PATH (core/base/process.h), or the name itself when none is found (exec then says so).
std::string on_path_or_name(const std::string& name) {
  std::string found = find_on_path(name);
  return found.empty() ? name : found;
}

// Runs argv (no shell) in `cwd`, merging stdout and stderr into `output` and `on_output`. Returns the exit
// status (128+signal when killed, 127 when it cannot start).
int run_captured(const std::vector<std::string>& argv, const std::string& cwd, std::string& output,
                 const std::function<void(std::string_view)>& on_output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  // The environment: ours, with pip quiet and Python unbuffered.
  std::vector<std::string> env_store = {"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PYTHONUNBUFFERED=1"};
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (kv.rfind("PIP_DISABLE_PIP_VERSION_CHECK=", 0) != 0 && kv.rfind("PIP_NO_INPUT=", 0) != 0 &&
        kv.rfind("PYTHONUNBUFFERED=", 0) != 0)
      env_store.emplace_back(kv);
  }
  SpawnSpec spec;
  spec.path = on_path_or_name(argv.at(0));
  spec.argv = argv;
  spec.env = std::move(env_store);
  spec.cwd = cwd;
  spec.stdout_fd = fds[1];
  spec.stderr_fd = fds[1];
  spec.exec_failure_message = "cannot execute the Python interpreter\n";
  pid_t pid;
  try {
    pid = spawn_process(spec);
  } catch (const SpawnError& e) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(fmt::format("cannot start {}: {}", argv[0], std::strerror(e.err)));
  }
  ::close(fds[1]);
  std::array<char, 8192> buf;
  while (true) {
    ssize_t n = ::read(fds[0], buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    std::string_view chunk(buf.data(), static_cast<size_t>(n));
    output.append(chunk);
    if (on_output) on_output(chunk);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// Cached per interpreter path: a pyenv shim takes seconds to answer on a loaded machine.
std::string python_version(const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, std::string> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(python); it != cache.end()) return it->second;
  std::string out;
  run_captured({python, "--version"}, "", out, {});
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return cache[python] = out;
}

bool looks_like_path(const std::string& dep) {
  return dep.rfind("./", 0) == 0 || dep.rfind("../", 0) == 0 || dep.rfind("/", 0) == 0 || dep == "." ||
         dep == "..";
}

std::string first_error_line(const std::string& output) {
  size_t pos = output.find("ERROR: ");
  if (pos == std::string::npos) return {};
  size_t end = output.find('\n', pos);
  return output.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error(fmt::format("cannot open lock file {}: {}", path, std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw Error(fmt::format("cannot lock {}: {}", path, std::strerror(errno)));
    }
  }
  ~FileLock() { ::close(fd_); }  // closing releases the lock

 private:
  int fd_ = -1;
};

// Builds the venv at `dir` (removed first). Returns false with the reason in `summary` on failure.
bool build_env(const PyEnvSpec& spec, const std::string& python, const fs::path& dir, PyEnvResult& r,
               const std::function<void(std::string_view)>& on_output) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  auto note = [&](const std::string& line) {
    r.output += line;
    if (on_output) on_output(line);
  };
  note(fmt::format("air: creating Python environment {} with {}\n", dir.string(), python));
  // --system-site-packages: dependencies add to the machine's Python (torch comes with the base image, as
  // on Databricks). --without-pip + the base interpreter's pip avoids a slow ensurepip when pip is there.
  int rc = run_captured({python, "-m", "venv", "--system-site-packages", "--without-pip", dir.string()}, spec.work_dir,
                        r.output, on_output);
  if (rc != 0) {
    r.summary = fmt::format("creating the Python environment failed: '{} -m venv' exited with code {}", python, rc);
    return false;
  }
  std::string env_python = (dir / "bin" / "python").string();
  std::string probe;
  if (run_captured({env_python, "-m", "pip", "--version"}, spec.work_dir, probe, {}) != 0) {
    rc = run_captured({env_python, "-m", "ensurepip", "--default-pip"}, spec.work_dir, r.output, on_output);
    if (rc != 0) {
      r.summary = fmt::format("creating the Python environment failed: ensurepip exited with code {}", rc);
      return false;
    }
  }
  if (spec.dependencies.empty()) return true;
  std::vector<std::string> argv = {env_python, "-m", "pip", "install"};
  argv.insert(argv.end(), spec.dependencies.begin(), spec.dependencies.end());
  note(fmt::format("air: pip install {}\n", fmt::join(spec.dependencies, " ")));
  rc = run_captured(argv, spec.work_dir, r.output, on_output);
  if (rc != 0) {
    std::string why = first_error_line(r.output);
    r.summary = fmt::format("installing environment.dependencies failed: pip exited with code {}{}{}", rc,
                            why.empty() ? "" : ": ", why);
    return false;
  }
  return true;
}

}  // namespace

std::string normalized_pyenv_spec(const PyEnvSpec& spec) {
  std::string python = on_path_or_name(spec.python);
  std::error_code ec;
  fs::path real = fs::weakly_canonical(python, ec);
  std::string text = "air-python-env v1\n";
  text += "python: " + (ec ? python : real.string()) + " " + python_version(python) + "\n";
  text += "version: " + spec.version + "\n";
  fs::path base = spec.work_dir.empty() ? fs::current_path() : fs::path(spec.work_dir);
  for (const auto& dep : spec.dependencies) {
    std::string d = dep;
    while (!d.empty() && std::isspace(static_cast<unsigned char>(d.back()))) d.pop_back();
    while (!d.empty() && std::isspace(static_cast<unsigned char>(d.front()))) d.erase(0, 1);
    if (looks_like_path(d)) d = (base / d).lexically_normal().string();
    text += "dependency: " + d + "\n";
  }
  return text;
}

PyEnvResult ensure_python_env(const PyEnvSpec& spec, const std::string& air_home,
                              const std::function<void(std::string_view)>& on_output) {
  PyEnvResult r;
  r.key = sha256_hex(normalized_pyenv_spec(spec));
  fs::path envs = fs::path(air_home) / "envs";
  std::error_code ec;
  fs::create_directories(envs, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", envs.string(), ec.message()));
  fs::path dir = envs / r.key;
  r.env_dir = dir.string();
  r.bin_dir = (dir / "bin").string();
  if (fs::exists(dir / kCompleteMarker)) {
    r.ok = true;
    return r;
  }
  FileLock lock((envs / (r.key + ".lock")).string());
  if (fs::exists(dir / kCompleteMarker)) {  // built by whoever held the lock before us
    r.ok = true;
    return r;
  }
  r.built_now = true;
  std::string python = on_path_or_name(spec.python);
  if (!build_env(spec, python, dir, r, on_output)) {
    fs::remove_all(dir, ec);  // a later attempt starts clean
    return r;
  }
  std::ofstream((dir / (std::string(kCompleteMarker) + ".tmp")).string()) << normalized_pyenv_spec(spec);
  fs::rename(dir / (std::string(kCompleteMarker) + ".tmp"), dir / kCompleteMarker, ec);
  if (ec) {
    r.summary = fmt::format("cannot mark the Python environment {} complete: {}", dir.string(), ec.message());
    return r;
  }
  r.ok = true;
  return r;
}

std::map<std::string, std::string> python_env_vars(const PyEnvResult& env, const std::string& current_path) {
  return {{"PATH", current_path.empty() ? env.bin_dir : env.bin_dir + ":" + current_path},
          {"VIRTUAL_ENV", env.env_dir}};
}

}  // namespace air::launcher
