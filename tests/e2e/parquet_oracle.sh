#!/usr/bin/env bash
# Our Parquet reader against files written by parquet-wasm (arrow-rs as WebAssembly, from npm) at test time:
# every codec x page version x dictionary setting reads back to the writer's rows; unsupported features
# fail with an error naming them and the column; mutated and truncated copies fail cleanly (a bounded fuzz
# run). Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
oracle_src=$src/tests/data/parquet
work=$(cd "$bin/.." && pwd)/parquet-oracle
check=$bin/parquet_oracle_check

for tool in node npm; do
  command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
done
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
mkdir -p "$work"

# 1. parquet-wasm and apache-arrow, installed once per build tree (npm's cache lives there too).
pkg_stamp=$(cat "$oracle_src/package.json" "$oracle_src/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$work/.installed" 2>/dev/null)" != "$pkg_stamp" ]; then
  cp "$oracle_src/package.json" "$oracle_src/package-lock.json" "$work/"
  if ! (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 \
        >"$work/npm-install.log" 2>&1); then
    if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
      echo "skipped: npm cannot reach its registry, so parquet-wasm cannot be installed (see $work/npm-install.log)"
      exit 125
    fi
    echo "error: npm install failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
  fi
  echo "$pkg_stamp" >"$work/.installed"
fi
cp "$oracle_src"/*.mjs "$work/"
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
