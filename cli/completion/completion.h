// Shell completion for `air`: `air completion bash|zsh|fish` prints a small script that asks the binary
// itself (`air __complete WORDS...`) what fits, so the candidates always come from the CLI11 command tree of
// the air that is installed (verbs, flags, flag values, run ids of the running workspace, file names).
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "cli/verbs.h"

namespace air::cli {

struct Completion {
  std::vector<std::string> words;  // candidates that start with the current word
  enum class Also { kNothing, kFiles, kDirs } also = Also::kNothing;  // the shell adds paths itself
};

// `words` are the command line after "air" up to the cursor; the last one is the word being completed
// (empty after a space). `run_ids` is asked only where a run id fits.
Completion complete_words(const CLI::App& root, const std::vector<std::string>& words,
                          const std::function<std::vector<std::string>()>& run_ids);

// `air __complete WORDS...`: one candidate per line, then `:files` or `:dirs` when paths fit too.
int run_complete(const CLI::App& root, const std::vector<std::string>& words, const Context& ctx);

// Adds `air completion bash|zsh|fish`.
void setup_completion(CLI::App& app, Context& ctx);

// The completion script for one shell (bash, zsh or fish).
std::string completion_script(const std::string& shell);

}  // namespace air::cli
