#!/usr/bin/env bash
# Every family's extra tensors and options through the sharded engines: for Qwen3 (q/k norms), Gemma 3 (four norms,
# GeGLU, sliding and global layers, soft-capping, tied head), Phi-3 (fused checkpoint tensors, partial rotary) and
# Mistral (sliding window), the tiny transformers fixture's config (tests/trainer/families/, vocabulary widened to
# examples/tiny_model's tokenizer) trains 3 steps with FSDP at world sizes 1 and 2 (air-torchrun, Gloo, CPU) on the
# same global batch: the same curve within 1e-4. LoRA likewise (not Phi-3: refused when the config is read), and
# rank 0's checkpoint of the 2-rank full run loads back and continues at the loss it reached.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
source "$(dirname "$0")/lib/common.bash"
export OMP_NUM_THREADS=1

losses() { grep -o '"step":[0-9]*,[^}]*"loss":[-0-9.e+]*' "$1" | sed 's/"step":\([0-9]*\),.*"loss":\(.*\)/\1 \2/'; }
compare() {  # compare A B: the same steps, losses within 1e-4 (relative)
  paste "$E2E_TMP/$1.loss" "$E2E_TMP/$2.loss" | awk -v a="$1" -v b="$2" '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $4 || $2 != $2 + 0) { print a " vs " b ": " $0; bad = 1 } }
    END { exit bad || n != 3 }' || fail "$1 and $2 differ: $(paste "$E2E_TMP/$1.loss" "$E2E_TMP/$2.loss")"
  echo "ok: $1 matches $2 ($(tr '\n' ' ' < "$E2E_TMP/$1.loss"))"
}
train() {  # train NAME WORLD BATCH ACCUM MODEL [--set ...]: 3 steps, losses into NAME.loss
  local name=$1 world=$2 batch=$3 accum=$4 model=$5
  shift 5
  "$BIN/air-torchrun" --standalone --nproc_per_node "$world" "$BIN/air-train" --set "model_name=$model" \
    --set "dataset_name=$SRC/examples/data/alpaca_tiny.json" --set init=random --set max_seq_len=64 \
    --set learning_rate=3e-3 --set max_steps=3 --set seed=7 --set engine=fsdp \
    --set "per_device_batch_size=$batch" --set "gradient_accumulation_steps=$accum" "$@" > "$E2E_TMP/$name.log" 2>&1 ||
    { tail -30 "$E2E_TMP/$name.log"; fail "$name (world $world) failed"; }
  losses "$E2E_TMP/$name.log" > "$E2E_TMP/$name.loss"
}

for fam in qwen3 gemma3 phi3 mistral; do
  model=$E2E_TMP/model-$fam
  mkdir -p "$model"
  cp "$SRC/examples/tiny_model/tokenizer.json" "$SRC/examples/tiny_model/tokenizer_config.json" "$model/"
  python3 - "$SRC/tests/trainer/families/$fam/config.json" "$SRC/examples/tiny_model/config.json" "$model/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
tiny = json.load(open(sys.argv[2]))
for k in ("vocab_size", "bos_token_id", "eos_token_id"):
    c[k] = tiny[k]
c.pop("pad_token_id", None)
json.dump(c, open(sys.argv[3], "w"), indent=1)
PY
  train "$fam-w1" 1 6 1 "$model" --set "output_dir=$E2E_TMP/out-$fam-w1" --set save=false
  train "$fam-w2" 2 3 1 "$model" --set "output_dir=$E2E_TMP/out-$fam" --set save=true
  grep -q "fsdp engine: 2 ranks over gloo" "$E2E_TMP/$fam-w2.log" || fail "$fam: not FSDP on 2 ranks"
  compare "$fam-w2" "$fam-w1"
  # The 2-rank run's checkpoint: the family's layout, and it trains on from where it stopped (step 1 of the
  # reloaded model is below the random model's first loss).
  ckpt=$(sed -n 's/^saved checkpoint to //p' "$E2E_TMP/$fam-w2.log" | tail -1)
  [ -n "$ckpt" ] && [ -f "$ckpt/model.safetensors" ] || fail "$fam: no checkpoint reported"
  python3 - "$ckpt/config.json" "$fam" <<'PY' || fail "$fam: the checkpoint's config.json is not the family's"
import json, sys
c = json.load(open(sys.argv[1]))
want = {"qwen3": "qwen3", "gemma3": "gemma3_text", "phi3": "phi3", "mistral": "mistral"}[sys.argv[2]]
sys.exit(0 if c["model_type"] == want else 1)
PY
  train "$fam-reload" 1 6 1 "$ckpt" --set init=pretrained --set learning_rate=1e-9 --set save=false
  awk -v a="$(head -1 "$E2E_TMP/$fam-reload.loss" | cut -d' ' -f2)" -v f="$(head -1 "$E2E_TMP/$fam-w1.loss" | cut -d' ' -f2)" \
    'BEGIN { exit !(a == a + 0 && a < f) }' || fail "$fam: the reloaded checkpoint starts at the random model's loss"
  if [ "$fam" != phi3 ]; then
    lora=(--set save=false --set master_dtype=fp32 --set 'lora={r: 4, alpha: 8, target_modules: all-linear}')
    train "$fam-lora-w1" 1 6 1 "$model" "${lora[@]}"
    train "$fam-lora-w2" 2 3 1 "$model" "${lora[@]}"
    grep -q "lora engine" "$E2E_TMP/$fam-lora-w2.log" || fail "$fam: LoRA did not take the LoRA engine"
    compare "$fam-lora-w2" "$fam-lora-w1"
  fi
done
echo "PASS: qwen3, gemma3, phi3 and mistral train the same curve on 1 and 2 ranks (full and LoRA), and their checkpoints reload"
