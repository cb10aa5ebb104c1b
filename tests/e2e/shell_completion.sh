#!/usr/bin/env bash
# `air completion bash|zsh|fish` loads in each real shell and completes: `air ge<TAB>` -> get,
# `air logs <TAB>` -> the run id of the running workspace, `air run -f <TAB>` -> file names. bash through
# its completion function with COMP_WORDS; zsh interactively in a pseudo-terminal (zpty, compinit, a real
# TAB); fish through `complete -C`.
source "$(dirname "$0")/lib/common.bash"
for sh in zsh fish; do command -v $sh >/dev/null || { echo "skip: $sh is not installed (scripts/setup)"; exit 125; }; done
export PATH="$AIR_BIN_DIR:$PATH"

proj="$E2E_TMP/proj"
mkdir -p "$proj"
cat > "$proj/train.yaml" <<'YAML'
experiment_name: e2e-completion
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: echo done
max_retries: 0
YAML
id=$(submit "$proj/train.yaml")
[ -n "$id" ] || fail "no run id"
wait_state "$id" SUCCEEDED 60
cd "$proj"

# bash: the function `complete -F` registered, called as bash calls it.
bash_complete() {  # bash_complete WORD... (the last is the word under the cursor)
  bash --norc --noprofile -c 'source <(air completion bash)
    complete -p air | grep -q "_air_complete" || { echo "not registered"; exit 1; }
    COMP_WORDS=(air "$@"); COMP_CWORD=$#; COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
    _air_complete; printf "%s\n" "${COMPREPLY[@]}"' bash "$@"
}
[ "$(bash_complete ge)" = get ] || fail "bash: air ge<TAB> gave '$(bash_complete ge)'"
[ "$(bash_complete logs '')" = "$id" ] || fail "bash: air logs <TAB> gave '$(bash_complete logs '')', not $id"
[ "$(bash_complete -o '')" = "$(printf 'text\njson')" ] || fail "bash: -o <TAB> gave '$(bash_complete -o '')'"
[ "$(bash_complete run -f tr)" = train.yaml ] || fail "bash: run -f tr<TAB> gave '$(bash_complete run -f tr)'"

# zsh: an interactive shell in a pty, compinit, the script sourced, real TABs; ^X writes the edit buffer out.
zsh_buffer() {  # zsh_buffer KEYS -> what the command line holds after typing KEYS
  rm -f "$E2E_TMP/zbuf"
  ZBUF="$E2E_TMP/zbuf" KEYS="$1" zsh -f -c '
    zmodload zsh/zpty
    zpty -b z zsh -f -i
    zpty -w z "autoload -U compinit && compinit -u -D; source <(air completion zsh)"
    zpty -w z "dump() { print -r -- \"\$BUFFER\" > $ZBUF }; zle -N dump; bindkey \"^X\" dump"
    sleep 0.5
    zpty -w -n z "$KEYS"; sleep 1.5; zpty -w -n z $'"'"'\x18'"'"'
    for i in {1..50}; do [[ -s $ZBUF ]] && break; sleep 0.1; done
    zpty -d z'
  cat "$E2E_TMP/zbuf" 2>/dev/null
}
[ "$(zsh_buffer $'air ge\t')" = "air get " ] || fail "zsh: air ge<TAB> gave '$(zsh_buffer $'air ge\t')'"
[ "$(zsh_buffer $'air logs \t')" = "air logs $id " ] || fail "zsh: air logs <TAB> gave '$(zsh_buffer $'air logs \t')'"
[ "$(zsh_buffer $'air run -f tr\t')" = "air run -f train.yaml " ] || fail "zsh: run -f tr<TAB> gave '$(zsh_buffer $'air run -f tr\t')'"

# fish: complete -C asks the registered completions for a command line.
fish_complete() { fish --no-config -c 'air completion fish | source; complete -C $argv[1]' "$1"; }
[ "$(fish_complete 'air ge')" = get ] || fail "fish: air ge<TAB> gave '$(fish_complete 'air ge')'"
[ "$(fish_complete 'air logs ')" = "$id" ] || fail "fish: air logs <TAB> gave '$(fish_complete 'air logs ')'"
[ "$(fish_complete 'air run -f tr')" = train.yaml ] || fail "fish: run -f tr<TAB> gave '$(fish_complete 'air run -f tr')'"
echo "ok: bash, zsh and fish complete air"
