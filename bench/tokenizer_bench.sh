#!/usr/bin/env bash
# Tokenizer speed on English prose (the Brown corpus) with Meta's Llama 3 tokenizer.json and with our tiny
# example tokenizer. Both are prepared in the build tree by tests/e2e/tokenizer_llama3.sh (needs npm).
# usage: bench/tokenizer_bench.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
work=$build/tokenizer-oracle
AIR_BIN_DIR=$build/bin AIR_SOURCE_DIR=$root bash "$root/tests/e2e/tokenizer_llama3.sh" >/dev/null
(cd "$work" && node brown-text.mjs >brown.txt)
for json in "$work/llama3/tokenizer.json" "$root/examples/tiny_model/tokenizer.json"; do
  "$build/bin/tokenizer_bench" "$json" "$work/brown.txt"
  echo
done
