// The completion scripts `air completion bash|zsh|fish` prints. Each hands the words before the cursor to
// `air __complete` and shows its answer; a `:files` / `:dirs` line asks the shell for paths as well.
#include <string>

#include "cli/completion/completion.h"
#include "core/base/error.h"

namespace air::cli {

namespace {

const char* const kBash = R"(# air completion for bash. Load it now:   source <(air completion bash)
# or for every shell:  air completion bash > ~/.local/share/bash-completion/completions/air
_air_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]} line also=""
  COMPREPLY=()
  while IFS= read -r line; do
    case $line in
      :files) also=files ;;
      :dirs) also=dirs ;;
      *) [ -n "$line" ] && COMPREPLY+=("$line") ;;
    esac
  done < <(command "${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)
  case $also in
    files) compopt -o filenames 2>/dev/null; mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur") ;;
    dirs) compopt -o filenames 2>/dev/null; mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -d -- "$cur") ;;
  esac
  return 0
}
complete -F _air_complete air
)";

const char* const kZsh = R"(#compdef air
# air completion for zsh. Load it now:   source <(air completion zsh)   (after compinit)
# or for every shell:  air completion zsh > "${fpath[1]}/_air"
_air() {
  local line also=""
  local -a cands
  for line in "${(@f)$(command "${words[1]}" __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}"; do
    case $line in
      :files) also=files ;;
      :dirs) also=dirs ;;
      ?*) cands+=("$line") ;;
    esac
  done
  (( ${#cands} )) && compadd -Q -- "${cands[@]}"
  [[ $also == files ]] && _files
  [[ $also == dirs ]] && _files -/
  return 0
}
if [[ "${funcstack[1]}" == _air ]]; then
  _air "$@"
else
  compdef _air air
fi
)";

const char* const kFish = R"(# air completion for fish. Load it now:   air completion fish | source
# or for every shell:  air completion fish > ~/.config/fish/completions/air.fish
function __air_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l air $tokens[1]
    set -e tokens[1]
    set -l also
    for line in (command $air __complete $tokens "$cur" 2>/dev/null)
        switch $line
            case ':files'
                set also files
            case ':dirs'
                set also dirs
            case '*'
                echo $line
        end
    end
    if test "$also" = files
        __fish_complete_path "$cur"
    else if test "$also" = dirs
        __fish_complete_directories "$cur"
    end
end
complete -c air -e
complete -c air -f -a '(__air_complete)'
)";

}  // namespace

std::string completion_script(const std::string& shell) {
  if (shell == "bash") return kBash;
  if (shell == "zsh") return kZsh;
  if (shell == "fish") return kFish;
  throw usage_error("no completion for shell '" + shell + "'", "air completion bash|zsh|fish");
}

}  // namespace air::cli
