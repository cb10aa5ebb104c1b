#!/usr/bin/env bash
# Volumes on the 2-node Slurm test cluster: the workspace keeps /Volumes on a folder both nodes share
# (`air server --volumes-root`); the tiny FSDP example writes its checkpoint to /Volumes/main/default/ckpt/tiny
# from node 0 (inside its private mount namespace), `air get run` lists it, `air fs cp -r` brings it back and
# air-train loads it.
[ -x "${AIR_BIN_DIR:?}/air-train" ] && [ -x "$AIR_BIN_DIR/air-torchrun" ] || {
  echo "skip: air-train / air-torchrun not built"; exit 125; }
[ -f "${AIR_SOURCE_DIR:?}/examples/tiny_model/tokenizer.json" ] || { echo "skip: examples/tiny_model is incomplete"; exit 125; }
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }
[ -e /Volumes ] && { echo "skip: this machine has a /Volumes of its own"; exit 125; }
VOLUMES_ROOT="$(mktemp -d /tmp/air-e2e-shared-volumes-XXXXXX)"
source "$(dirname "$0")/lib/slurm.bash" --volumes-root "$VOLUMES_ROOT"

sed -e "s|root_path: \.\.|root_path: $AIR_SOURCE_DIR/examples|" \
  -e 's|output_dir: checkpoint|output_dir: /Volumes/main/default/ckpt/tiny|' \
  -e 's|max_steps: 30|max_steps: 4|' -e 's|warmup_steps: 3|warmup_steps: 1|' \
  "$AIR_SOURCE_DIR/examples/tiny_fsdp/train.yaml" > "$E2E_TMP/train.yaml"
start=$SECONDS
id=$(submit "$E2E_TMP/train.yaml")
wait_state "$id" SUCCEEDED 400
echo "FSDP on 2 Slurm nodes with output_dir in a volume took $((SECONDS - start)) s"
store="$VOLUMES_ROOT/main/default/ckpt/tiny"
[ -f "$store/config.json" ] && ls "$store"/*.safetensors >/dev/null 2>&1 || fail "no checkpoint in the shared volume storage $store"
grep -q "volumes: /Volumes is $VOLUMES_ROOT" "$AIR_HOME/runs/$id/attempt_1/node_0/agent.log" ||
  fail "node 0 did not bind the volumes: $(grep volumes "$AIR_HOME/runs/$id/attempt_1/node_0/agent.log")"
"$AIR" get run "$id" | grep -q "/Volumes/main/default/ckpt/tiny  [0-9]* file(s)" || fail "air get run does not list the volume"
"$AIR" fs cp -r dbfs:/Volumes/main/default/ckpt/tiny "$E2E_TMP/fetched" 2>/dev/null || fail "air fs cp -r failed"
cmp -s "$store/model.safetensors" "$E2E_TMP/fetched/model.safetensors" || fail "the fetched checkpoint differs"
OMP_NUM_THREADS=1 "$AIR_BIN_DIR/air-train" --set "model_name=$E2E_TMP/fetched" \
  --set "dataset_name=$AIR_SOURCE_DIR/examples/data/alpaca_tiny.json" --set init=pretrained --set max_seq_len=128 \
  --set max_steps=1 --set save=false > "$E2E_TMP/reload.log" 2>&1 || { tail "$E2E_TMP/reload.log"; fail "air-train cannot load it"; }
rm -rf "$VOLUMES_ROOT"
echo "ok: checkpoint from Slurm node 0 in the shared volume, fetched with air fs cp -r, loaded by air-train"
