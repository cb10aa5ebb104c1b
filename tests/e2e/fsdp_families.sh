#!/usr/bin/env bash
# Every family's extra tensors and options through the sharded engines: for Qwen3 (q/k norms), Gemma 3 (four norms,
# GeGLU, sliding and global layers, soft-capping, tied head), Phi-3 (fused checkpoint tensors, partial rotary) and
# Mistral (sliding window), the tiny transformers fixture's config (tests/trainer/families/, vocabulary widened to
# examples/tiny_model's tokenizer) trains 3 steps with FSDP at world sizes 1 and 2 (air-torchrun, Gloo, CPU) on the
# same global batch: the same curve within 1e-4. LoRA likewise (Phi-3: on its fused qkv_proj and gate_up_proj, as
# PEFT adapts them, on the 2-rank full run's checkpoint; its merged checkpoint and adapter in Phi-3's and PEFT's
# layouts, every merged weight the base's plus (alpha / r) B A, and the merged model's eval loss that of the
# adapted one), and rank 0's checkpoint of the 2-rank full run loads back and continues at the loss it reached.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/train_steps.bash"
export OMP_NUM_THREADS=1

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
    --set "per_device_batch_size=$batch" --set "gradient_accumulation_steps=$accum" \
    --set "metrics_file=$E2E_TMP/$name.jsonl" "$@" > "$E2E_TMP/$name.log" 2>&1 ||
    { tail -30 "$E2E_TMP/$name.log"; fail "$name (world $world) failed"; }
  metrics_losses "$E2E_TMP/$name.jsonl" > "$E2E_TMP/$name.loss"
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
  lora=(--set master_dtype=fp32 --set 'lora={r: 4, alpha: 8, target_modules: all-linear}')
  # Phi-3's adapters go on the 2-rank run's checkpoint (a base on disk, so that the merged weights can be checked
  # against it); the others on the random model.
  base=$model
  [ "$fam" != phi3 ] || { base=$ckpt; lora+=(--set init=pretrained); }
  train "$fam-lora-w1" 1 6 1 "$base" "${lora[@]}" --set save=false
  if [ "$fam" != phi3 ]; then
    train "$fam-lora-w2" 2 3 1 "$base" "${lora[@]}" --set save=false
  else
    # Phi-3: PEFT's modules are its checkpoint's fused ones. The 2-rank run writes the merged model and the adapter,
    # and evaluates with the adapter applied after its last step (a fixed slice of the example data).
    evalset=(--set "eval_dataset=$SRC/examples/data/alpaca_tiny.json" --set eval_max_batches=4)
    train "$fam-lora-w2" 2 3 1 "$base" "${lora[@]}" --set save=true --set lora.merge=true \
      --set "output_dir=$E2E_TMP/out-$fam-lora" "${evalset[@]}"
    grep -q "lora engine: r 4, alpha 8 on qkv_proj,o_proj,gate_up_proj,down_proj" "$E2E_TMP/$fam-lora-w2.log" ||
      fail "$fam: LoRA is not on the fused modules: $(grep 'lora engine' "$E2E_TMP/$fam-lora-w2.log")"
    merged=$E2E_TMP/out-$fam-lora
    python3 - "$merged" "$base" <<'PY' || fail "$fam: the merged checkpoint or its adapter is not in Phi-3's / PEFT's layout"
import array, json, struct, sys
d, base = sys.argv[1:]
def header(path):
    with open(path, "rb") as f:
        return json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
def tensors(path):  # fp32 tensors: name -> (rows, cols, values)
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h, data = json.loads(f.read(n)), f.read()
    out = {}
    for k, v in h.items():
        if k != "__metadata__":
            assert v["dtype"] == "F32", (k, v["dtype"])
            a = array.array("f")
            a.frombytes(data[v["data_offsets"][0]:v["data_offsets"][1]])
            out[k] = (v["shape"][0], v["shape"][-1], a)
    return out
cfg = json.load(open(d + "/adapter/adapter_config.json"))
assert cfg["target_modules"] == ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"], cfg["target_modules"]
a = header(d + "/adapter/adapter_model.safetensors")
p = "base_model.model.model.layers.1."
assert a[p + "self_attn.qkv_proj.lora_A.weight"]["shape"] == [4, 32], a[p + "self_attn.qkv_proj.lora_A.weight"]
assert a[p + "self_attn.qkv_proj.lora_B.weight"]["shape"] == [64, 4]  # q (4 heads x 8) | k | v (2 x 8 each)
assert a[p + "mlp.gate_up_proj.lora_B.weight"]["shape"] == [128, 4]  # gate | up (64 each)
assert not any("q_proj" in k or ".up_proj" in k for k in a), "Llama's module names in a Phi-3 adapter"
assert len([k for k in a if k != "__metadata__"]) == 2 * 4 * 2
m = header(d + "/model.safetensors")
assert m["model.layers.0.self_attn.qkv_proj.weight"]["shape"] == [64, 32] and "model.layers.0.self_attn.q_proj.weight" not in m
# Every merged fused weight is the base's plus (alpha / r) B A, with B's rows spanning the fused rows.
W, M, A = tensors(base + "/model.safetensors"), tensors(d + "/model.safetensors"), tensors(d + "/adapter/adapter_model.safetensors")
worst, checked = 0.0, 0
for layer in range(2):
    for mod in ("self_attn.qkv_proj", "self_attn.o_proj", "mlp.gate_up_proj", "mlp.down_proj"):
        k = f"model.layers.{layer}.{mod}"
        rows, cols, w = W[k + ".weight"]
        _, _, m = M[k + ".weight"]
        _, r, b = A["base_model.model." + k + ".lora_B.weight"]
        _, _, a = A["base_model.model." + k + ".lora_A.weight"]
        ba = [2.0 * sum(b[i * r + j] * a[j * cols + c] for j in range(r)) for i in range(rows) for c in range(cols)]
        scale = max(abs(x) for x in ba)
        assert scale > 0, k + ": the adapter did not move"
        worst = max(worst, max(abs(m[i] - w[i] - ba[i]) for i in range(rows * cols)) / scale)
        checked += 1
assert worst < 1e-4, f"merged - base != (alpha / r) B A: {worst:.2e}"
print(f"adapter and merged checkpoint: PEFT's qkv_proj / gate_up_proj, Phi-3's fused layout; {checked} merged weights = base + 2 B A ({worst:.1e})")
PY
    # The merged checkpoint is the adapter applied: the same eval loss (2 ranks, the same eval rows) after one step
    # at a learning rate that moves nothing.
    train "$fam-merged" 2 3 1 "$merged" --set init=pretrained --set learning_rate=1e-12 --set max_steps=1 --set save=false \
      "${evalset[@]}"
    a=$(grep '"eval_loss"' "$E2E_TMP/$fam-lora-w2.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["eval_loss"])')
    b=$(grep '"eval_loss"' "$E2E_TMP/$fam-merged.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["eval_loss"])')
    awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a == a + 0 && d <= 1e-4 * b) }' ||
      fail "$fam: the merged checkpoint's eval loss $b is not the adapted model's $a"
    echo "ok: $fam merged checkpoint = the adapter applied (eval loss $b vs $a)"
  fi
  grep -q "lora engine" "$E2E_TMP/$fam-lora-w2.log" || fail "$fam: LoRA did not take the LoRA engine"
  compare "$fam-lora-w2" "$fam-lora-w1"
done
echo "PASS: qwen3, gemma3, phi3 and mistral train the same curve on 1 and 2 ranks (full and LoRA: Phi-3 on its fused modules), their checkpoints reload, Phi-3's merged LoRA checkpoint is the adapter applied"
