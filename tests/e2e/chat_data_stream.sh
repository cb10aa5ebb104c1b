#!/usr/bin/env bash
# The cache writer's reader streams: a 96 MB dataset as one .json list, as JSON Lines and as Parquet (row
# groups of 400 rows, written by parquet-wasm) is read with a peak resident set that stays below half the
# file's size (data_stream_check: getrusage's peak, less the process's own before reading), while reading the
# same .json whole (read_records, every record held) takes more than the file. A bound that fails when a
# reader holds the file, not a timing. The Parquet part skips without node/npm or the npm registry.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
check=$bin/data_stream_check
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
tmp=$(mktemp -d /tmp/air-chat-stream-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 6,000 conversations of about 16 KB each (96 MB), written as a list and as lines.
python3 - "$tmp" <<'PY'
import json, sys
out = sys.argv[1]
with open(f"{out}/big.json", "w") as lst, open(f"{out}/big.jsonl", "w") as lines:
    lst.write("[\n")
    for i in range(6000):
        body = (f"paragraph {i}: " + "lorem ipsum {dolor} [sit] \"amet\" " * 240)[:8000]
        rec = {"messages": [{"role": "user", "content": body}, {"role": "assistant", "content": body[::-1]}]}
        text = json.dumps(rec)
        lst.write(("," if i else "") + text + "\n")
        lines.write(text + "\n")
    lst.write("]\n")
PY
size_kib=$(( $(stat -c %s "$tmp/big.json") / 1024 ))
limit_kib=$(( size_kib / 2 ))

# Prints the reader's extra peak (KiB) after checking that every record came.
extra_peak() {
  local out; out=$("$check" "$@")
  echo "  $(basename "$1")${2:+ $2}: $out" >&2
  read -r _ records _ chunks _ base _ peak <<<"$out"
  [ "$records" = 6000 ] || fail "$1: read $records records, expected 6000"
  echo $(( peak - base ))
}
echo "dataset: $size_kib KiB; bound for a streaming reader: $limit_kib KiB above its start"
whole=$(extra_peak "$tmp/big.json" --whole)
json=$(extra_peak "$tmp/big.json")
jsonl=$(extra_peak "$tmp/big.jsonl")
[ "$whole" -gt "$size_kib" ] || fail "reading the list whole took only $whole KiB: the check would not see a reader that holds the file"
[ "$json" -lt "$limit_kib" ] || fail ".json list: $json KiB above the start, the bound is $limit_kib KiB"
[ "$jsonl" -lt "$limit_kib" ] || fail "JSON Lines: $jsonl KiB above the start, the bound is $limit_kib KiB"

# Parquet (in a subshell: its npm install exits 125 there when it cannot run).
rc=0
(
  source "$src/tests/e2e/lib/parquet_wasm.bash"
  work=$(cd "$bin/.." && pwd)/parquet-oracle
  parquet_wasm_install "$src" "$work"
  cd "$work" && node chat-to-parquet.mjs "$tmp/big.jsonl" "$tmp/big.parquet" 400 >/dev/null
) || rc=$?
if [ "$rc" = 125 ]; then
  echo "parquet: skipped (parquet-wasm cannot be installed)"
elif [ "$rc" != 0 ]; then
  fail "writing the Parquet file failed"
else
  parquet=$(extra_peak "$tmp/big.parquet")
  [ "$parquet" -lt "$limit_kib" ] || fail "Parquet: $parquet KiB above the start, the bound is $limit_kib KiB"
fi
echo "chat data stream: peak above the start .json $json KiB, JSON Lines $jsonl KiB${parquet:+, Parquet $parquet KiB} (read whole: $whole KiB; file $size_kib KiB)"
