// The CLI entry point: builds the CLI11 app from one setup_* function per verb and maps errors to exit codes.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace air::cli {

// Options every verb sees.
struct GlobalOptions {
  std::string output = "text";  // text | json
  std::string profile;          // -p/--profile, a section of ~/.air/config
  bool debug = false;
  std::string color = "auto";   // --color never|always|auto; auto: a terminal and NO_COLOR unset

};

// Runs the CLI with the given arguments; returns the process exit code. Output goes to out/err, so tests
// can run any command in-process and check exit code and stderr together.
int main(int argc, char** argv);
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace air::cli
