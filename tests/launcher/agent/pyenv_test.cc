// Python environments built from a local wheel (no package index is reachable here): built once even with
// two concurrent builders, reused afterwards, and a failed pip install reported with pip's own words.
#include <catch2/catch.hpp>

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "launcher/agent/pyenv.h"

namespace fs = std::filesystem;
using air::launcher::PyEnvSpec;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "air-pyenv-test-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

// A minimal pure-Python wheel, written with the interpreter's zipfile (pip installs it offline).
fs::path write_wheel(const fs::path& dir) {
  fs::path whl = dir / "airtoy-0.1-py3-none-any.whl";
  std::ofstream(dir / "mk.py") << "import sys, zipfile\n"
                                  "with zipfile.ZipFile(sys.argv[1], 'w') as z:\n"
                                  "    z.writestr('airtoy/__init__.py', 'VALUE = 42\\n')\n"
                                  "    z.writestr('airtoy-0.1.dist-info/METADATA', "
                                  "'Metadata-Version: 2.1\\nName: airtoy\\nVersion: 0.1\\n')\n"
                                  "    z.writestr('airtoy-0.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: air\\n"
                                  "Root-Is-Purelib: true\\nTag: py3-none-any\\n')\n"
                                  "    z.writestr('airtoy-0.1.dist-info/RECORD', '')\n";
  REQUIRE(std::system(("python3 " + (dir / "mk.py").string() + " " + whl.string()).c_str()) == 0);
  return whl;
}

}  // namespace

TEST_CASE("pyenv: the key changes with version dependencies and resolves relative paths") {
  PyEnvSpec a{"4", {"transformers>=4.45", " ./pkg "}, "python3", "/work/code"};
  std::string text = air::launcher::normalized_pyenv_spec(a);
  CHECK(text.find("version: 4\n") != std::string::npos);
  CHECK(text.find("dependency: transformers>=4.45\ndependency: /work/code/pkg\n") != std::string::npos);
  CHECK(text.find("python: /") != std::string::npos);
  CHECK(text.find("Python 3.") != std::string::npos);
  PyEnvSpec b = a;
  b.version = "5";
  CHECK(air::launcher::normalized_pyenv_spec(b) != text);
  PyEnvSpec c = a;
  c.work_dir = "/other/code";
  CHECK(air::launcher::normalized_pyenv_spec(c) != text);
  CHECK(air::launcher::normalized_pyenv_spec(a) == text);
}

TEST_CASE("pyenv: concurrent builders build once - later runs reuse - the package imports") {
  TempDir tmp;
  fs::path whl = write_wheel(tmp.path);
  PyEnvSpec spec{"4", {whl.string()}, "python3", tmp.path.string()};
  std::string home = (tmp.path / "air_home").string();
  air::launcher::PyEnvResult r1, r2;
  std::string streamed;
  std::thread t1([&] { r1 = air::launcher::ensure_python_env(spec, home, [&](std::string_view s) { streamed += s; }); });
  std::thread t2([&] { r2 = air::launcher::ensure_python_env(spec, home); });
  t1.join();
  t2.join();
  INFO(r1.output << r2.output);
  REQUIRE(r1.ok);
  REQUIRE(r2.ok);
  CHECK(r1.built_now != r2.built_now);  // exactly one built
  CHECK(r1.env_dir == r2.env_dir);
  CHECK(r1.env_dir == home + "/envs/" + r1.key);
  CHECK(r1.key.size() == 64);
  const auto& builder = r1.built_now ? r1 : r2;
  CHECK(builder.output.find("Successfully installed airtoy-0.1") != std::string::npos);
  if (r1.built_now) CHECK(streamed == r1.output);
  CHECK(run(builder.bin_dir + "/python -c 'import airtoy, sys; print(airtoy.VALUE, sys.prefix)'") ==
        "42 " + builder.env_dir + "\n");
  auto r3 = air::launcher::ensure_python_env(spec, home);
  CHECK(r3.ok);
  CHECK_FALSE(r3.built_now);
  CHECK(r3.output.empty());
  auto vars = air::launcher::python_env_vars(r3, "/usr/bin:/bin");
  CHECK(vars["PATH"] == r3.bin_dir + ":/usr/bin:/bin");
  CHECK(vars["VIRTUAL_ENV"] == r3.env_dir);
}

TEST_CASE("pyenv: a failed install reports pip's output and a one-line summary and leaves nothing") {
  TempDir tmp;
  PyEnvSpec spec{"", {"./no-such-package-dir"}, "python3", tmp.path.string()};
  std::string home = (tmp.path / "air_home").string();
  auto r = air::launcher::ensure_python_env(spec, home);
  CHECK_FALSE(r.ok);
  CHECK(r.built_now);
  // pip's wording varies by version; the summary quotes its first ERROR line.
  CHECK(r.summary.rfind("installing environment.dependencies failed: pip exited with code 1: ERROR: ", 0) == 0);
  CHECK(r.summary.find("no-such-package-dir") != std::string::npos);
  CHECK(r.output.find("does not exist") != std::string::npos);
  CHECK_FALSE(fs::exists(r.env_dir));
}
