// pip requirement syntax: what is accepted and where the first problem is reported.
#include <catch2/catch.hpp>

#include "core/workload/requirement.h"

TEST_CASE("valid requirements pass") {
  for (const char* req : {"numpy", "transformers>=4.45", "torch==2.1.*", "a.b-c_d", "pkg[extra1, extra2]>=1,<2",
                          "pkg (>=1.0)", "requests ~= 2.31", "numpy; python_version >= \"3.10\"",
                          "x; sys_platform == 'linux' and (platform_machine == 'x86_64' or extra == \"gpu\")",
                          "pkg @ https://example.com/pkg-1.0.whl", "pkg[a] @ git+https://github.com/o/r.git@v1",
                          "pkg @ file:///tmp/pkg.whl ; os_name == 'posix'", "-r requirements.txt",
                          "--requirement=reqs/base.txt", "-c constraints.txt", "-e ./local_pkg",
                          "--extra-index-url https://download.pytorch.org/whl/cu121", "--pre",
                          "./wheels/pkg-1.0-py3-none-any.whl", "/Volumes/main/default/pkg.whl",
                          "https://example.com/pkg.tar.gz", "pkg===1.0+local"}) {
    INFO(req);
    auto p = air::check_requirement(req);
    CHECK_FALSE(p.has_value());
    if (p) WARN(p->message);
  }
}

TEST_CASE("invalid requirements report the first problem") {
  struct Case {
    const char* req;
    const char* message;
    size_t offset;
  };
  for (const Case& c : std::vector<Case>{
           {"", "empty requirement", 0},
           {"torch=2.0", "'=' is not a version operator", 5},
           {"torch 2.0", "expected a version operator before the version", 6},
           {">=1.0", "expected a package name (letters, digits, '.', '_', '-')", 0},
           {"pkg>=", "expected a version after '>='", 5},
           {"pkg>=1.*", "'*' is only allowed as a trailing '.*' with '==' or '!='", 7},
           {"pkg[extra", "expected ',' or ']' in the extras list", 9},
           {"pkg @ ", "expected a URL after '@'", 6},
           {"pkg @ notaurl", "expected a URL after '@' (scheme://...)", 6},
           {"pkg; ", "expected an environment marker after ';'", 5},
           {"pkg; python_version", "expected a comparison (==, !=, <, <=, >, >=, ~=, in, not in) in the marker", 19},
           {"pkg; pyver == '3'", "unknown marker variable 'pyver'", 5},
           {"pkg; python_version == '3", "unterminated string in the environment marker", 23},
           {"--index", "unsupported pip option '--index'", 0},
           {"-r", "'-r' needs an argument", 0},
           {"pkg!", "expected a version operator (==, !=, <, <=, >, >=, ~=, ===)", 3},
           {"pkg$", "unexpected '$' after the package name", 3},
       }) {
    INFO(c.req);
    auto p = air::check_requirement(c.req);
    REQUIRE(p.has_value());
    CHECK(p->message == c.message);
    CHECK(p->offset == c.offset);
  }
}
