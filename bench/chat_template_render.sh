#!/usr/bin/env bash
# Chat-template render rate: our engine (air_jinja, through jinja_oracle_check --bench) against Python's jinja2
# configured as transformers configures it (tests/trainer/jinja/render_jinja2.py --bench), on the same real
# templates and the same conversations (tests/trainer/jinja/corpus.py), one thread each, render alone (the
# chat data's bench measures render + tokenize + mask). The templates are prepared in the build tree by
# tests/e2e/jinja_templates.sh (needs npm), which also checks that both render the same text; the rate counts
# the conversations a template renders without raising.
# Each side runs ROUNDS times, alternating, and its best rate counts (the machine is shared: the best run is
# the one least disturbed).
# usage: bench/chat_template_render.sh [BUILD_DIR] [SECONDS_PER_RUN] [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
seconds=${2:-1}
rounds=${3:-3}
work=$build/jinja-oracle
AIR_BIN_DIR=$build/bin AIR_SOURCE_DIR=$root bash "$root/tests/e2e/jinja_templates.sh" >/dev/null
python=/usr/bin/python3
"$python" -c 'import jinja2' 2>/dev/null || python=python3
jinja2_version=$("$python" -c 'import jinja2; print(jinja2.__version__)')

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; jinja2 $jinja2_version; best of $rounds runs of ${seconds} s"
printf '%-18s %10s %14s %14s %8s\n' template contexts "air renders/s" "jinja2 /s" ratio
for name in qwen3 qwen3_generation gemma3 llama3_1 llama3 deepseek_v3; do
  # The conversations the template renders (a dataset's records mostly do); those it rejects cost a C++
  # exception each here and are left out of the rate (tests/e2e/jinja_templates.sh checks them).
  corpus=$work/$name.bench.jsonl
  paste -d '\t' "$work/$name.expected.jsonl" "$work/$name.corpus.jsonl" | grep -v '^{"error"' | cut -f2- >"$corpus"
  ours=0 theirs=0
  for _ in $(seq "$rounds"); do
    o=$("$build/bin/jinja_oracle_check" --bench "$work/$name.jinja" "$corpus" "$seconds" | sed -E 's/.*: ([0-9]+) renders\/s.*/\1/')
    t=$("$python" "$root/tests/trainer/jinja/render_jinja2.py" --bench "$work/$name.jinja" "$corpus" "$seconds" |
        sed -E 's/.*: ([0-9]+) renders\/s.*/\1/')
    [ "$o" -gt "$ours" ] && ours=$o
    [ "$t" -gt "$theirs" ] && theirs=$t
  done
  printf '%-18s %10s %14s %14s %7.1fx\n' "$name" "$(wc -l <"$corpus")" "$ours" "$theirs" "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { print a / b }')"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
