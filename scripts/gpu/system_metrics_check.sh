#!/usr/bin/env bash
# ON THE GPU MACHINE (issue 45): the system metrics of a short air-train run through the real NVML. Starts a
# private workspace, trains the tiny Llama (examples/tiny_model) on one GPU for AIR_SYS_STEPS steps with
# system_metrics_interval 1, then a silent GPU-busy phase (a CUDA matmul loop that prints nothing for
# 90 s, longer than the stall timeout set here, 1 minute) which must not be stopped, and prints:
#   - `air get run` (the per-node GPU summary: utilisation and memory, last and mean),
#   - every system/node_0/... metric's count, min, mean and max from the MLflow API,
#   - bench/system_metrics.sh against the real libnvidia-ml (the sampler's CPU cost at 1 s and 10 s).
# Needs a bin folder with air, air-train and air-torchrun for this machine: the one scripts/gpu/e2e.sh
# leaves (default /tmp/air-e2e/air/bin, with air-train copied in), or AIR_BIN_DIR; and system_metrics_bench
# (built here or carried) for the last part (skipped when absent).
#   bash scripts/gpu/system_metrics_check.sh        (from the repository root, or a carried copy of it)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${AIR_BIN_DIR:-/tmp/air-e2e/air/bin}
W=${AIR_SYS_WORK:-/tmp/air-sysmetrics}
steps=${AIR_SYS_STEPS:-300}
die() { echo "system_metrics_check: $*" >&2; exit 1; }
for b in air air-train air-torchrun; do [ -x "$BIN/$b" ] || die "$BIN/$b is missing (run scripts/gpu/e2e.sh first, or set AIR_BIN_DIR)"; done
AIR=$BIN/air
rm -rf "$W" && mkdir -p "$W/proj"
export AIR_HOME=$W/home AIR_CONFIG_FILE=$W/no-config
unset AIR_HOST AIR_TOKEN AIR_NVML_LIBRARY
export AIR_LOCAL_GPUS=${AIR_LOCAL_GPUS:-1}
cp -r "$src/examples/tiny_model" "$src/examples/data" "$W/proj/"
cat > "$W/proj/busy.py" <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
print("busy phase done", flush=True)
PY
cat > "$W/proj/train.yaml" <<YAML
experiment_name: sysmetrics-check
compute: {accelerator_type: GPU_1xH100, num_accelerators: 1}
code_source: {type: snapshot, snapshot: {root_path: .}}
command: |
  cd \$CODE_SOURCE_PATH
  air-torchrun --nnodes=1 --node_rank=0 --nproc_per_node=1 --master_addr=\$MASTER_ADDR --master_port=\$MASTER_PORT air-train
  echo "training done; computing silently for 90 s"
  python3 busy.py 90
system_metrics_interval: 1
stall_timeout_minutes: 1
max_retries: 0
timeout_minutes: 20
parameters:
  model_name: tiny_model
  init: random
  dataset_name: data/alpaca_tiny.json
  device: cuda
  max_seq_len: 512
  per_device_batch_size: 32
  max_steps: $steps
  log_every: 50
  output_dir: checkpoint
YAML
nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,power.draw --format=csv || true
id=$("$AIR" -o json run -f "$W/proj/train.yaml" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("data", d)["run_id"])') ||
  die "submit failed"
echo "run $id submitted; watching"
"$AIR" logs "$id" --node 0 | tail -n 20
state=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("data", d)["state"])')
echo "state: $state (SUCCEEDED expected: the 90 s silent busy phase is longer than the 1 min stall timeout)"
"$AIR" get run "$id"
"$AIR" -o json get run "$id" --metrics --system | python3 -c '
import json, sys
d = json.load(sys.stdin); d = d.get("data", d)
print("%-48s %6s %10s %10s %10s" % ("metric", "count", "min", "mean", "max"))
for k, pts in sorted(d["metrics"].items()):
    if not k.startswith("system/"): continue
    v = [p["value"] for p in pts if isinstance(p["value"], (int, float))]
    if v: print("%-48s %6d %10.1f %10.1f %10.1f" % (k, len(v), min(v), sum(v) / len(v), max(v)))
'
"$AIR" -o json get run "$id" | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("data", d); print("alerts:", d.get("alerts", []))'
if [ -x "$BIN/system_metrics_bench" ]; then
  AIR_NVML_LIBRARY=libnvidia-ml.so.1 AIR_BIN_DIR=$BIN bash "$src/bench/system_metrics.sh" 200 10
else
  echo "no $BIN/system_metrics_bench: the CPU cost bench with the real NVML is skipped"
fi
"$AIR" server stop >/dev/null 2>&1 || true
[ "$state" = SUCCEEDED ] || exit 1
