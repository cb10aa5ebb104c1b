#!/usr/bin/env bash
# model_name / dataset_name as hub names, end to end: the hub fixture (tests/hub/hub_fixture.py) serves the
# tiny Llama model and an Alpaca Parquet dataset (written by parquet-wasm) behind a token; `air secrets`
# holds the token; `air run --watch` of a workload with HF_ENDPOINT in env_variables and HF_TOKEN from the
# secret trains from the hub on 1 node x 2 ranks, which download each file once (a lock) into HF_HOME;
# only the train split is fetched; the token never reaches the blob host nor the logs. Then a second run
# with HF_HUB_OFFLINE=1 and the fixture stopped trains from the cache alone.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
source "$(dirname "$0")/lib/parquet_wasm.bash"
parquet_wasm_install "$SRC" "$(cd "$BIN/.." && pwd)/parquet-oracle"
pqdir="$(cd "$BIN/.." && pwd)/parquet-oracle"
source "$(dirname "$0")/lib/common.bash"

# The cache is shared by both runs: a volume (a command sees no host folder outside its sandbox).
HF_CACHE="$AIR_HOME/volumes/main/default/hf"
TOKEN="hf_e2e_$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
repos="$E2E_TMP/repos"
model="$repos/models/testorg/tiny-llama" data="$repos/datasets/testorg/alpaca-tiny"
mkdir -p "$model" "$data/data"
cp "$SRC"/examples/tiny_model/*.json "$model/"
echo "# tiny" > "$model/README.md"
(cd "$pqdir" && node alpaca-to-parquet.mjs "$SRC/examples/data/alpaca_tiny.json" "$data/data/train-00000-of-00001.parquet" >/dev/null)
(cd "$pqdir" && node alpaca-to-parquet.mjs "$SRC/examples/data/alpaca_tiny.json" "$data/data/test-00000-of-00001.parquet" >/dev/null)
echo "# alpaca" > "$data/README.md"

python3 "$SRC/tests/hub/hub_fixture.py" --root "$repos" --token "$TOKEN" --blob-host localhost \
  --port-file "$E2E_TMP/hub.port" > "$E2E_TMP/hub.log" 2>&1 &
hub_pid=$!
trap 'rc=$?; set +e; kill $hub_pid 2>/dev/null; (exit $rc); cleanup' EXIT
for _ in $(seq 100); do [ -s "$E2E_TMP/hub.port" ] && break; sleep 0.1; done
endpoint="http://127.0.0.1:$(cat "$E2E_TMP/hub.port")"
stats() { curl -s "$endpoint/_fixture/stats" | json_get - "$1"; }

"$AIR" secrets create-scope e2e_scope >/dev/null
printf %s "$TOKEN" | "$AIR" secrets put-secret e2e_scope hf_token >/dev/null

write_workload() {  # write_workload FILE EXTRA_ENV_LINE
  cat > "$1" <<YAML
experiment_name: e2e-hub-train
compute:
  accelerator_type: CPU_2xHOST
  num_accelerators: 2
command: |
  air-torchrun --nnodes="\$NUM_NODES" --node_rank="\$NODE_RANK" --nproc_per_node="\$LOCAL_WORLD_SIZE" \\
    --master_addr="\$MASTER_ADDR" --master_port="\$MASTER_PORT" air-train
env_variables:
  OMP_NUM_THREADS: 1
  HF_HOME: /Volumes/main/default/hf
  HF_ENDPOINT: $endpoint
$2
secrets:
  HF_TOKEN: e2e_scope/hf_token
max_retries: 0
timeout_minutes: 10
parameters:
  model_name: testorg/tiny-llama
  dataset_name: testorg/alpaca-tiny
  init: random
  max_seq_len: 128
  packing: true
  per_device_batch_size: 2
  learning_rate: 0.02
  max_steps: 6
  save: false
YAML
}

# ---- 1. from the hub ----
write_workload "$E2E_TMP/online.yaml" ""
"$AIR" run -f "$E2E_TMP/online.yaml" --watch > "$E2E_TMP/online.out" 2>&1 || { tail -40 "$E2E_TMP/online.out"; fail "the run from the hub failed"; }
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
"$AIR" logs "$id" --node 0 > "$E2E_TMP/online.log"
# Rank 0 prints; whichever of the two ranks took the lock first downloaded, the other found the cache
# complete or waited and only linked. The fixture's counters below show each file went over the wire once.
grep -Eq "model source: testorg/tiny-llama from hub (download|cache) \(testorg/tiny-llama@main, commit [0-9a-f]{12}" "$E2E_TMP/online.log" ||
  fail "the log does not say where the model came from: $(grep -i 'model\|hub' "$E2E_TMP/online.log" | head)"
grep -Eq "dataset: testorg/alpaca-tiny from hub (download|cache) \(testorg/alpaca-tiny@main" "$E2E_TMP/online.log" ||
  fail "the log does not say where the dataset came from"
grep -q '^step 6/6 | loss' "$E2E_TMP/online.log" || fail "training did not reach step 6: $(tail -5 "$E2E_TMP/online.log")"
[ "$(stats 'd["blob_get"]')" = 1 ] || fail "expected one blob download (the train split's Parquet file), got $(stats 'd')"
[ "$(stats 'd["resolve_get"]')" = 3 ] || fail "expected 3 small-file downloads (config, tokenizer, tokenizer_config) for 2 ranks, got $(stats 'd')"
[ "$(stats 'd["blob_auth_rejected"]')" = 0 ] || fail "the token was sent to the blob host"
ls "$HF_CACHE"/hub/datasets--testorg--alpaca-tiny/snapshots/*/data/train-00000-of-00001.parquet >/dev/null ||
  fail "the dataset is not in huggingface_hub's cache layout"
[ ! -e "$(echo "$HF_CACHE"/hub/datasets--testorg--alpaca-tiny/snapshots/*)/data/test-00000-of-00001.parquet" ] ||
  fail "the test split was downloaded too"
if grep -rqF "$TOKEN" "$E2E_TMP/online.log" "$E2E_TMP/online.out" "$AIR_HOME"/runs 2>/dev/null; then fail "the token appears in a log"; fi
echo "online: trained from the hub; $(stats 'd["blob_get"]') blob and $(stats 'd["resolve_get"]') small-file downloads for 2 ranks"

# ---- 2. offline, from the cache alone (the hub is gone) ----
kill $hub_pid; wait $hub_pid 2>/dev/null || true
write_workload "$E2E_TMP/offline.yaml" "  HF_HUB_OFFLINE: 1"
"$AIR" run -f "$E2E_TMP/offline.yaml" --watch > "$E2E_TMP/offline.out" 2>&1 || { tail -40 "$E2E_TMP/offline.out"; fail "the offline run failed"; }
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
"$AIR" logs "$id" --node 0 > "$E2E_TMP/offline.log"
grep -q "model source: testorg/tiny-llama from hub cache (testorg/tiny-llama@main, commit " "$E2E_TMP/offline.log" ||
  fail "the offline run did not use the cache: $(grep -i 'model\|hub' "$E2E_TMP/offline.log" | head)"
grep -q "dataset: testorg/alpaca-tiny from hub cache" "$E2E_TMP/offline.log" || fail "the offline dataset did not come from the cache"
grep -q '^step 6/6 | loss' "$E2E_TMP/offline.log" || fail "the offline run did not reach step 6"
echo "offline: trained from the cache alone"
