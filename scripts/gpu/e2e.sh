#!/usr/bin/env bash
# The reference workload end to end ON THE GPU MACHINE: `air run -f examples/llama31_8b_sft/train.yaml
# --watch` trains Llama from a loopback hub (tests/hub/hub_fixture.py) behind a token from `air secrets`,
# then checks the run, the downloads, the logs, the metrics and the checkpoint, and prints a summary.
# Prepare HERE: bash scripts/gpu/prepare.sh && bash scripts/gpu/bundle.sh; then THERE (carry .devcarry):
#   bash scripts/gpu/e2e.sh [8b|1b]        8b: Llama-3.1-8B shape (~6 min); 1b: Llama-3.2-1B (~3 min)
#   bash scripts/gpu/e2e.sh --cpu-smoke    the same steps with the tiny model on CPU (AIR_BIN_DIR = a build's bin)
#   bash scripts/gpu/e2e.sh MODE --plan    print the overrides and fixture sizes, run nothing
# Env: OUT (results; default /tmp/air-e2e-out), AIR_E2E_STEPS, AIR_E2E_RUN_TIMEOUT (s; 420 for 8b, else 240),
# AIR_E2E_BENCH_TOKS / AIR_E2E_BENCH_MFU (bench/trainer_vs_reference.sh's padded tokens/s and MFU % for the
# same shape: the ratio column), AIR_E2E_EXTRA (more --override KEY=VALUE words), AIR_DEVCARRY, AIR_E2E_WORK.
set -uo pipefail
usage() { sed -n '5,11p' "$0" | sed 's/^# \{0,1\}//'; }
mode=8b plan=0
for a in "$@"; do
  case $a in
    8b|1b) mode=$a ;;
    --cpu-smoke) mode=tiny ;;
    --plan) plan=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "e2e.sh: unknown argument '$a'" >&2; usage >&2; exit 2 ;;
  esac
done
src=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/air-e2e-out}
W=${AIR_E2E_WORK:-/tmp/air-e2e}
carry=${AIR_DEVCARRY:-$src/.devcarry}
TOKEN="hf_e2e_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
case $mode in
  8b) model=meta-llama/Llama-3.1-8B steps=${AIR_E2E_STEPS:-20} shard_gb=5 acc=GPU_1xH200 ;;
  1b) model=meta-llama/Llama-3.2-1B steps=${AIR_E2E_STEPS:-20} shard_gb=1 acc=GPU_1xH200 ;;
  tiny) model=meta-llama/Llama-3.1-8B steps=${AIR_E2E_STEPS:-8} shard_gb=0.0002 acc=CPU_1xHOST ;;
esac
dataset=tatsu-lab/alpaca
# Only what one card (or the CPU) needs beside the file a user submits to the 16-GPU cluster.
# HF_HOME and output_dir: volumes, so the cache and the checkpoint outlive the run and this script can check it (a run's command sees no host
# folder outside its sandbox, and its /tmp is its own).
overrides=("compute.accelerator_type=$acc" compute.num_accelerators=1 "env_variables.HF_ENDPOINT=\$HUB"
           "env_variables.HF_HOME=/Volumes/main/default/hf"
           "parameters.max_steps=$steps" "parameters.output_dir=/Volumes/main/default/air_checkpoints/e2e" max_retries=0)
[ "$mode" = 1b ] && overrides+=("parameters.model_name=$model")
# One H200 cannot hold fp32 master weights + AdamW state of 8B parameters (~128 GB): bf16 masters, as the
# trainer benchmark runs that shape.
[ "$mode" = 8b ] && overrides+=(parameters.master_dtype=bf16)
# The CPU smoke: its own HF cache; short rows and a learning rate at which 8 steps of a random tiny model learn.
[ "$mode" = tiny ] && overrides+=(parameters.learning_rate=0.01 parameters.max_seq_len=128 parameters.per_device_batch_size=2)
read -r -a extra <<<"${AIR_E2E_EXTRA:-}"
overrides+=("${extra[@]}")
if [ $plan = 1 ]; then
  echo "mode $mode: model $model ($shard_gb GB shards), dataset $dataset, $steps steps"
  printf 'override %s\n' "${overrides[@]}"
  exit 0
fi

mkdir -p "$OUT"
if [ -z "${AIR_E2E_TEED:-}" ]; then  # all output also to $OUT/e2e.log, complete when this returns
  AIR_E2E_TEED=1 bash "$0" "$@" 2>&1 | tee "$OUT/e2e.log"
  exit "${PIPESTATUS[0]}"
fi
export PYTHONUNBUFFERED=1
T0=$EPOCHREALTIME
since() { awk -v a="$EPOCHREALTIME" -v b="$T0" 'BEGIN {printf "%.1f", a - b}'; }
stamp() { printf '[%6s s] %s\n' "$(since)" "$*"; }
FAILS=0
check() {  # check NAME CONDITION-EXIT-STATUS DETAIL
  if [ "$2" = 0 ]; then echo "PASS  $1${3:+: $3}"; else echo "FAIL  $1${3:+: $3}"; FAILS=$((FAILS + 1)); fi
}
die() { echo "FATAL: $*"; exit 1; }

hub_pid=""
cleanup() {
  [ -n "$hub_pid" ] && kill "$hub_pid" 2>/dev/null
  [ -n "${AIR:-}" ] && "$AIR" server stop >/dev/null 2>&1
}
trap cleanup EXIT

rm -rf "$W"
mkdir -p "$W"
df -h "$W" | tail -1 | awk '{print "disk: " $4 " free of " $2 " under '"$W"'"}'

# ---- 0. binaries: the carried air + air-train / air-train-check / air-torchrun built here ----------------
fixture_gen() {  # the model and dataset repos, in the background while the trainer builds
  local m=$W/repos/models/$model d=$W/repos/datasets/$dataset dev=cpu tokdir=$src/examples/tiny_model json
  [ "$mode" != tiny ] && dev=cuda tokdir=$carry/bench-data/llama3
  mkdir -p "$d/data"
  python3 "$src/scripts/gpu/e2e_fixture.py" model --shape "$mode" --out "$m" --tokenizer "$tokdir" \
    --shard-gb "$shard_gb" --device "$dev" || return 1
  json=$src/examples/data/alpaca_tiny.json
  [ "$mode" != tiny ] && json=$carry/bench-data/alpaca-brown.json
  echo "# alpaca-format records (air's GPU end-to-end fixture)" > "$d/README.md"
  # 2,000 records: 20 steps use 160; tokenizing all 20,000 would only lengthen the load phase.
  python3 "$src/scripts/gpu/e2e_fixture.py" dataset --json "$json" --out "$d/data/train-00000-of-00001.parquet" \
    --records 2000
  local rc=$?
  if [ $rc = 3 ] && [ "$mode" = tiny ]; then  # no pyarrow (Debian): parquet-wasm from npm, as hub_train.sh
    (source "$src/tests/e2e/lib/parquet_wasm.bash"; parquet_wasm_install "$src" "${AIR_PARQUET_WASM:-$W/pqw}"
     cd "${AIR_PARQUET_WASM:-$W/pqw}" && node alpaca-to-parquet.mjs "$json" "$d/data/train-00000-of-00001.parquet")
    rc=$?
  fi
  return $rc
}
stamp "fixture repos (model $mode, dataset) in the background"
fixture_gen > "$W/fixture.log" 2>&1 &
fix_pid=$!

if [ "$mode" = tiny ]; then
  BIN=${AIR_BIN_DIR:?--cpu-smoke needs AIR_BIN_DIR (a build folder bin/ with air, air-train, air-train-check, air-torchrun)}
  for b in air air-train air-train-check air-torchrun; do
    [ -x "$BIN/$b" ] || { echo "skip: $BIN/$b is not built"; exit 125; }
  done
else
  [ -f "$carry/air.tar.xz" ] || die "$carry/air.tar.xz is missing: run scripts/gpu/prepare.sh and bundle.sh here first"
  [ -f "$carry/bench-data/llama3/tokenizer.json" ] || die "no Llama 3 tokenizer in $carry/bench-data (scripts/gpu/bench_data.sh)"
  tar -C "$W" -xJf "$carry/air.tar.xz"
  BIN=$W/air/bin
  env -i "$BIN/air" --version || die "the carried air does not run here"
  # Every run's command runs in bubblewrap's sandbox: the carried one where the image has none.
  command -v bwrap >/dev/null || export PATH=$BIN:$PATH
  "$BIN/bwrap" --version >/dev/null 2>&1 || command -v bwrap >/dev/null || die "no bubblewrap here, and the carried one does not run"
  stamp "build air-train, air-train-check (libtorch with CUDA), air-torchrun"
  prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
  export TORCH_CUDA_ARCH_LIST=9.0
  # The libraries the image lacks (snappy) go under the bin folder: a run's command sees air's bin folder and
  # nothing else of this machine's /tmp (its sandbox), so air-train's RUNPATH must point inside it.
  deps=$(bash "$src/scripts/gpu/cmake_args.sh" "$carry" "$BIN/.deps") || die "the build's libraries are missing"
  echo "libraries: $deps"
  # shellcheck disable=SC2086  # deps is a list of -D words without spaces
  cmake -S "$carry" -B /tmp/air-e2e-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DAIR_BUILD_CLI=OFF -DAIR_BUILD_TESTS=OFF $deps > "$W/build.log" 2>&1 ||
    { tail -40 "$W/build.log"; die "cmake failed"; }
  cmake --build /tmp/air-e2e-build -j "$(nproc)" --target air-train air-train-check >> "$W/build.log" 2>&1 ||
    { grep -E "error" -A3 "$W/build.log" | head -60; die "the trainer build failed"; }
  g++ -O2 -std=c++20 -I"$carry" "$carry"/launcher/torchrun/*.cc "$carry"/core/base/host.cc "$carry"/core/base/process.cc -o "$BIN/air-torchrun" >> "$W/build.log" 2>&1 ||
    { tail -30 "$W/build.log"; die "air-torchrun failed to build"; }
  cp /tmp/air-e2e-build/bin/air-train /tmp/air-e2e-build/bin/air-train-check "$BIN/"
fi
AIR=$BIN/air
stamp "binaries ready in $BIN"
wait $fix_pid || { cat "$W/fixture.log"; die "the fixture repos could not be written"; }
cat "$W/fixture.log"
stamp "fixture written: $(du -sh "$W/repos/models" | cut -f1) model, $(du -sh "$W/repos/datasets" | cut -f1) dataset"

# ---- 1. the local workspace and the secret ---------------------------------------------------------------
export AIR_HOME=$W/home AIR_CONFIG_FILE=$W/no-config
# The local workspace counts GPUs with nvidia-smi; say it outright where torch sees them.
[ "$mode" = tiny ] || export AIR_LOCAL_GPUS=${AIR_LOCAL_GPUS:-$(python3 -c 'import torch; print(torch.cuda.device_count())')}
unset AIR_HOST AIR_TOKEN
"$AIR" secrets create-scope my_scope >/dev/null || die "air secrets create-scope failed"
printf %s "$TOKEN" | "$AIR" secrets put-secret my_scope hf_token >/dev/null || die "air secrets put-secret failed"
stamp "workspace up (AIR_HOME=$AIR_HOME); my_scope/hf_token stored"

# ---- 2. the hub fixture on loopback, behind the token ----------------------------------------------------
python3 "$src/tests/hub/hub_fixture.py" --root "$W/repos" --token "$TOKEN" --blob-host localhost \
  --port-file "$W/hub.port" > "$W/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 100); do [ -s "$W/hub.port" ] && break; sleep 0.1; done
[ -s "$W/hub.port" ] || { cat "$W/hub.log"; die "the hub fixture did not start"; }
HUB="http://127.0.0.1:$(cat "$W/hub.port")"
ck=$src/scripts/gpu/e2e_check.py
code=$(python3 "$ck" status "$HUB/api/models/$model/revision/main")
check "the hub fixture refuses a request without the token" "$([ "$code" = 401 ]; echo $?)" "HTTP $code"
# The fixture hashes each LFS file once (SHA-256, for X-Linked-Etag): do it now, in parallel, not in the run.
HUB_TOKEN=$TOKEN python3 "$ck" prewarm "$HUB" "$model" "$W/repos/models/$model" || die "the fixture did not answer for the weights"
stamp "hub fixture at $HUB (model files hashed)"

# ---- 3. air run --watch ----------------------------------------------------------------------------------
args=()
for o in "${overrides[@]}"; do args+=(--override "${o//\$HUB/$HUB}"); done
echo "\$ air run -f examples/llama31_8b_sft/train.yaml ${args[*]} --watch"
t_submit=$EPOCHREALTIME
fix_model=$W/repos/models/$model
n_shards=$(ls "$fix_model"/*.safetensors | wc -l)
# Every line of the watch, stamped; once the model is resolved the fixture's copy goes (disk: 3 x 16 GB).
# A stuck run must not eat the device call: the watch ends after AIR_E2E_RUN_TIMEOUT seconds (the checks
# then report what was reached).
limit=${AIR_E2E_RUN_TIMEOUT:-$([ "$mode" = 8b ] && echo 420 || echo 240)}
(cd "$src" && timeout "$limit" "$AIR" run -f examples/llama31_8b_sft/train.yaml "${args[@]}" --watch 2>&1
 echo "__exit $?") |
  while IFS= read -r line; do
    printf '%s %s\n' "$EPOCHREALTIME" "$line"
    case $line in *"model source: $model from hub download"*) [ "$mode" = 8b ] && rm -f "$fix_model"/*.safetensors ;; esac
  done > "$OUT/watch.log"
t_end=$EPOCHREALTIME
rc=$(awk '$2 == "__exit" {print $3}' "$OUT/watch.log")
stamp "air run --watch exited $rc"
[ "$rc" = 124 ] && { echo "the run did not end within $limit s: canceling it"; "$AIR" cancel --all -y >/dev/null 2>&1; }
grep -v "__exit" "$OUT/watch.log" | cut -d' ' -f2- | tail -n 60

# ---- 4. checks -------------------------------------------------------------------------------------------
id=$("$AIR" -o json list --all-status | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["runs"][0]["run_id"])')
state=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["state"])')
check "run $id SUCCEEDED" "$([ "$state" = SUCCEEDED ] && [ "$rc" = 0 ]; echo $?)" "state $state, air run exit $rc"
"$AIR" logs "$id" --node 0 > "$W/node0.log" 2>&1
{ "$AIR" get run "$id"; echo; "$AIR" get run "$id" --metrics; } > "$W/get_run.txt" 2>&1
"$AIR" -o json get run "$id" --metrics > "$W/metrics.json" 2>&1
grep -q "model source: $model from hub download" "$W/node0.log"
check "model downloaded through air's hub client" $? "$(grep -m1 "model source:" "$W/node0.log")"
grep -q "dataset: $dataset from hub download" "$W/node0.log"
check "dataset downloaded through air's hub client" $? "$(grep -m1 "dataset: " "$W/node0.log")"
hf=$AIR_HOME/volumes/main/default/hf  # the workload's HF_HOME, a volume of the local workspace
cache_model="$hf/hub/models--${model//\//--}"
cached=$(find "$cache_model/snapshots" -name '*.safetensors' 2>/dev/null | wc -l)
ls "$cache_model"/snapshots/*/model.safetensors.index.json "$cache_model"/snapshots/*/config.json >/dev/null 2>&1 &&
  ls "$hf/hub/datasets--${dataset//\//--}"/snapshots/*/data/train-00000-of-00001.parquet >/dev/null 2>&1 &&
  [ "$cached" = "$n_shards" ]
check "HF cache layout under $hf/hub (index, config, weights, the dataset's Parquet)" $? "$cached of $n_shards weight files"
stats=$(python3 -c 'import sys,urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "$HUB/_fixture/stats")
echo "hub fixture stats: $stats"
python3 - "$stats" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
sys.exit(0 if s["blob_get"] >= 2 and s["blob_auth_rejected"] == 0 and s["api"] >= 2 else 1)
PY
check "downloads authorised by the token (fixture: blobs fetched, token never sent to the blob host)" $?
leaks=$(grep -rlaF -- "$TOKEN" "$W/node0.log" "$OUT/watch.log" "$W/get_run.txt" "$AIR_HOME" 2>/dev/null | head -3)
check "the token appears nowhere in the node log, air logs, the watch or the workspace folder" \
  "$([ -z "$leaks" ]; echo $?)" "${leaks:+found in $leaks}"
python3 "$ck" steps --log "$W/node0.log" --steps "$steps" --json "$W/steps.json"
check "node 0 logs each step once (its readable line, no JSON) with loss, tokens/s, MFU; the loss falls" $?
python3 "$ck" metrics --json "$W/metrics.json" --steps "$steps"
check "air get run shows the metrics logged through the MLflow API (a loss point per step)" $?
stamp "checkpoint: transformers vs air-train-check"
dev=cuda
[ "$mode" = tiny ] && dev=cpu
python3 "$ck" logits --checkpoint "$AIR_HOME/volumes/main/default/air_checkpoints/e2e" --bin "$BIN" --device "$dev" \
  --json "$W/logits.json" > "$W/check.log" 2>&1
lrc=$?
tail -5 "$W/check.log"
check "the checkpoint loads in transformers; its logits equal air-train-check's (bf16 tolerance)" $lrc

# ---- 4b. the same training without air: what orchestration costs -----------------------------------------
# The node's hyperparameters file, air-train started by hand (no air, launcher, log shipping or MLflow), the
# model and dataset from the HF cache the run filled; the same steps, so the steady medians cover the same
# window. air must cost at most 2% of the steady tokens/s.
hp=$(find "$AIR_HOME" -name hyperparameters.yaml 2>/dev/null | head -1)
if [ -n "$hp" ] && [ -f "$W/steps.json" ]; then
  stamp "the same training directly: $BIN/air-train --config $hp --set save=false"
  (export HF_HOME=$hf HF_HUB_OFFLINE=1; unset HF_TOKEN; cd "$W" &&
   timeout "$limit" "$BIN/air-train" --config "$hp" --set save=false) > "$W/direct.log" 2>&1
  python3 "$ck" steps --log "$W/direct.log" --steps "$steps" --json "$W/direct.json" | sed 's/^/direct: /'
  # The CPU smoke's tiny model takes milliseconds per step, where machine noise is larger than 2%: there
  # the ratio is printed, not judged.
  python3 "$ck" ratio --e2e "$W/steps.json" --direct "$W/direct.json" --min "$([ "$mode" = tiny ] && echo 0 || echo 0.98)"
  check "$([ "$mode" = tiny ] && echo "the same training without air ran (CPU smoke: the ratio is not judged)" ||
           echo "orchestration costs at most 2% of the steady training throughput (air run vs air-train alone)")" $?
else
  check "the same training directly (no hyperparameters file under $AIR_HOME, or no step lines)" 1
fi

# ---- 5. summary ------------------------------------------------------------------------------------------
python3 "$ck" summary --watch "$OUT/watch.log" --submit "$t_submit" --end "$t_end" \
  --steps-json "$W/steps.json" --logits-json "$W/logits.json" --checkpoint "$AIR_HOME/volumes/main/default/air_checkpoints/e2e" --mode "$mode" \
  --bench-toks "${AIR_E2E_BENCH_TOKS:-}" --bench-mfu "${AIR_E2E_BENCH_MFU:-}" --direct-json "$W/direct.json" \
  --fails "$FAILS" \
  --total "$(since)" | tee "$OUT/summary.md"
for f in get_run.txt check.log hub.log direct.log; do echo "---- $f"; tail -n 40 "$W/$f" 2>/dev/null; done
cp "$W/node0.log" "$OUT/node0.log" 2>/dev/null
df -h "$W" | tail -1 | awk '{print "disk at the end: " $4 " free"}'
[ $FAILS = 0 ] && echo "E2E PASS ($mode)" || echo "E2E FAIL ($mode): $FAILS check(s) failed"
[ $FAILS = 0 ]
