#!/usr/bin/env bash
# Conversations from Parquet (written by parquet-wasm at test time: a `messages` JSON string column, row
# groups of 4 rows): air-train --preview-data reads them as the JSON Lines they came from, and a bad record
# is located by row group and row and field.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
[ -x "$bin/air-train" ] || { echo "skip: air-train not built"; exit 125; }
source "$(dirname "$0")/lib/parquet_wasm.bash"
work=$(cd "$bin/.." && pwd)/parquet-oracle
parquet_wasm_install "$src" "$work"
tmp=$(mktemp -d /tmp/air-chat-pq-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
head -n 10 "$src/examples/data/chat_tiny.jsonl" > "$tmp/good.jsonl"
(cd "$work" && node chat-to-parquet.mjs "$tmp/good.jsonl" "$tmp/good.parquet" >/dev/null)
cd "$src/examples"
args=(--set model_name=tiny_model --set chat_template=tiny_chat/chat_template.jinja --set data_cache_dir=off)
"$bin/air-train" "${args[@]}" --set "dataset_name=$tmp/good.parquet" --preview-data 10 -o json > "$tmp/pq.out" 2>/dev/null
"$bin/air-train" "${args[@]}" --set "dataset_name=$tmp/good.jsonl" --preview-data 10 -o json > "$tmp/jsonl.out" 2>/dev/null
[ "$(wc -l < "$tmp/pq.out")" = 10 ] || fail "expected 10 records from Parquet, got $(wc -l < "$tmp/pq.out")"
cmp -s "$tmp/pq.out" "$tmp/jsonl.out" || fail "Parquet and JSON Lines give different examples"
# Row 6 (row group 1, row 2) gets an unknown role.
python3 - "$tmp/good.jsonl" "$tmp/bad.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows[6]["messages"][1]["role"] = "bot"
open(sys.argv[2], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
(cd "$work" && node chat-to-parquet.mjs "$tmp/bad.jsonl" "$tmp/bad.parquet" >/dev/null)
rc=0
"$bin/air-train" "${args[@]}" --set "dataset_name=$tmp/bad.parquet" --preview-data 10 > /dev/null 2> "$tmp/err" || rc=$?
[ "$rc" != 0 ] || fail "a bad Parquet record was accepted"
grep -qF "$tmp/bad.parquet: row group 1, row 2: 'messages[1].role' is 'bot', expected system, user, assistant or tool" "$tmp/err" ||
  fail "the error is not located: $(cat "$tmp/err")"
echo "chat parquet: 10 conversations read as from JSON Lines; a bad one located at row group 1, row 2"
