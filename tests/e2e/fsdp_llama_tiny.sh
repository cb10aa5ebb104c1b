#!/usr/bin/env bash
# The README's first command end to end: `air run -f examples/tiny_fsdp/train.yaml --watch` on the embedded
# local workspace trains the tiny Llama with FSDP on 2 nodes x 2 CPU ranks (air-torchrun per node, Gloo).
# Checks: the run succeeds; both nodes' logs (`air logs --node 0/1`) show the loss falling; `air get run`
# shows the loss rank 0 logged to the workspace's MLflow run; rank 0 wrote the
# consolidated checkpoint into output_dir; it loads back: one step of it with the local engine (1 process)
# and with FSDP over 2 ranks gives the same finite loss, far below the untrained model's. Then the sharded
# engine's invariance: world sizes 1, 2 and 3 with the same global batch give the same curve within 1e-4.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
[ -f "$SRC/examples/tiny_model/tokenizer.json" ] && [ -f "$SRC/examples/data/alpaca_tiny.json" ] || {
  echo "skip: examples/tiny_model or examples/data/alpaca_tiny.json missing"; exit 125; }
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/train_steps.bash"
export OMP_NUM_THREADS=1

# ---- air run --watch, 2 nodes x 2 ranks ----
t0=$(date +%s)
"$AIR" run -f "$SRC/examples/tiny_fsdp/train.yaml" --watch > "$E2E_TMP/watch.out" 2> "$E2E_TMP/watch.err" ||
  { cat "$E2E_TMP/watch.err"; tail -30 "$E2E_TMP/watch.out"; fail "air run --watch exited non-zero"; }
echo "air run --watch: $(( $(date +%s) - t0 )) s"
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
[ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed"
for n in 0 1; do
  "$AIR" logs "$id" --node $n > "$E2E_TMP/node$n.log"
  no_json_steps "$E2E_TMP/node$n.log"
  log_losses "$E2E_TMP/node$n.log" > "$E2E_TMP/node$n.loss"
  steps=$(wc -l < "$E2E_TMP/node$n.loss")
  [ "$steps" -ge 2 ] || fail "node $n's log shows $steps step lines: $(tail -5 "$E2E_TMP/node$n.log")"
  first=$(head -1 "$E2E_TMP/node$n.loss" | cut -d' ' -f2) last=$(tail -1 "$E2E_TMP/node$n.loss" | cut -d' ' -f2)
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.85 * a) }' || fail "node $n: the loss did not fall ($first -> $last)"
  grep -q "fsdp engine: 4 ranks over gloo" "$E2E_TMP/node$n.log" || fail "node $n did not train with FSDP on 4 ranks"
  echo "node $n: loss $first -> $last over $steps logged steps"
done
cmp -s "$E2E_TMP/node0.loss" "$E2E_TMP/node1.loss" || fail "the nodes print different (global) losses"

# Rank 0 logged every step to the workspace's MLflow run (the agent sets MLFLOW_TRACKING_URI/RUN_ID/TOKEN).
"$AIR" get run "$id" > "$E2E_TMP/get.txt"
grep -qE '^ +loss +[0-9.]+ +step 30$' "$E2E_TMP/get.txt" || fail "air get run shows no loss at step 30: $(cat "$E2E_TMP/get.txt")"
grep -qE '^ +grad_norm +[0-9.]+ +step 30$' "$E2E_TMP/get.txt" || fail "air get run shows no grad_norm at step 30"

ckpt=$(sed -n 's/^saved checkpoint to //p' "$E2E_TMP/node0.log" | tail -1)
[ -n "$ckpt" ] || fail "node 0 did not report a saved checkpoint"
for f in config.json model.safetensors tokenizer.json generation_config.json; do
  [ -f "$ckpt/$f" ] || fail "the checkpoint in $ckpt lacks $f"
done

# ---- the checkpoint loads back: one step from it, 1 process (local engine) and 2 ranks (FSDP) ----
reload=(--set "model_name=$ckpt" --set "dataset_name=$SRC/examples/data/alpaca_tiny.json" --set init=pretrained
        --set max_seq_len=128 --set packing=true --set learning_rate=1e-9 --set max_steps=1 --set save=false --set seed=5)
"$BIN/air-train" "${reload[@]}" --set per_device_batch_size=4 --set "metrics_file=$E2E_TMP/reload1.jsonl" \
  > "$E2E_TMP/reload1.log" 2>&1 ||
  { cat "$E2E_TMP/reload1.log"; fail "reloading the checkpoint in one process failed"; }
"$BIN/air-torchrun" --standalone --nproc_per_node 2 "$BIN/air-train" "${reload[@]}" --set per_device_batch_size=2 \
  --set "metrics_file=$E2E_TMP/reload2.jsonl" > "$E2E_TMP/reload2.log" 2>&1 || { cat "$E2E_TMP/reload2.log"; fail "reloading the checkpoint on 2 ranks failed"; }
l1=$(metrics_losses "$E2E_TMP/reload1.jsonl" | cut -d' ' -f2) l2=$(metrics_losses "$E2E_TMP/reload2.jsonl" | cut -d' ' -f2)
first=$(head -1 "$E2E_TMP/node0.loss" | cut -d' ' -f2)
awk -v a="$l1" -v b="$l2" -v f="$first" 'BEGIN { d = a - b; if (d < 0) d = -d
  exit !(a == a + 0 && a < 0.85 * f && d <= 1e-4 * a) }' ||
  fail "reloaded checkpoint: loss $l1 (1 process) vs $l2 (2 ranks), untrained $first"
echo "reloaded checkpoint: loss $l1 (1 process) = $l2 (2 ranks), untrained $first"

# ---- the same curve at world sizes 1, 2 and 3 (global batch 6 rows each) ----
common=(--set "model_name=$SRC/examples/tiny_model" --set "dataset_name=$SRC/examples/data/alpaca_tiny.json"
        --set init=random --set max_seq_len=64 --set learning_rate=3e-3 --set max_steps=3 --set save=false
        --set seed=7 --set engine=fsdp)
run() {  # run NAME WORLD BATCH ACCUM
  "$BIN/air-torchrun" --standalone --nproc_per_node "$2" "$BIN/air-train" "${common[@]}" \
    --set "per_device_batch_size=$3" --set "gradient_accumulation_steps=$4" --set "metrics_file=$E2E_TMP/$1.jsonl" \
    > "$E2E_TMP/$1.log" 2>&1 || { cat "$E2E_TMP/$1.log"; fail "world $2 failed"; }
  metrics_losses "$E2E_TMP/$1.jsonl" > "$E2E_TMP/$1.loss"
}
compare() {
  paste "$E2E_TMP/$1.loss" "$E2E_TMP/$2.loss" | awk -v a="$1" -v b="$2" '
    { n++; d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4 * $4) { print a " vs " b ": " $0; bad = 1 } }
    END { exit bad || n != 3 }' || fail "$1 and $2 differ"
  echo "ok: $1 matches $2"
}
run w1 1 3 2
run w2 2 3 1
run w3 3 1 2
compare w2 w1
compare w3 w1
