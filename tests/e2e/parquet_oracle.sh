#!/usr/bin/env bash
# Our Parquet reader against files written by parquet-wasm (arrow-rs as WebAssembly, from npm) at test time:
# every codec x page version x dictionary setting reads back to the writer's rows; unsupported features
# fail with an error naming them and the column; mutated and truncated copies fail cleanly (a bounded fuzz
# run). Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
work=$(cd "$bin/.." && pwd)/parquet-oracle
check=$bin/parquet_oracle_check

[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
source "$(dirname "$0")/lib/parquet_wasm.bash"
parquet_wasm_install "$src" "$work"   # 1. parquet-wasm from npm, once per build tree (or skip)
cd "$work"
rm -rf files
node write-cases.mjs files

# 2. Readable files: every column, every row, as the writer wrote them.
for f in $(node -e 'console.log(require("./files/cases.json").supported.join(" "))'); do
  "$check" compare "files/$f" files/rows.json
done
# 3. Unsupported features: one clear error each.
node -e 'for (const [f, t] of require("./files/cases.json").errors) console.log(f + "\t" + t)' |
  while IFS=$'\t' read -r f text; do "$check" error "files/$f" "$text"; done
# 4. Truncated and corrupted copies (a bounded, seeded fuzz run): an error or a read, never a crash.
"$check" error <(head -c 5000 files/zstd-v2-dict.parquet) "truncated Parquet file"
"$check" mutate files/snappy-v1-dict.parquet 3 20261203
"$check" mutate files/zstd-v2-plain.parquet 3 20261204
echo "parquet oracle: all files read back as written"
