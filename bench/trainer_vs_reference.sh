#!/usr/bin/env bash
# air-train beside the reference PyTorch FSDP recipe and the tuned torch.compile peer, on one GPU, in one
# call. Prepare HERE (npm makes the data): bash scripts/gpu/prepare.sh && bash scripts/gpu/bundle.sh; then ON THE
# GPU MACHINE, from the
# checkout root (device tool: carry [".devcarry"]):
#   bash .devcarry/bench/trainer_vs_reference.sh [all|ours|check] [RUNS]
# all: build, kernel + transformers checks, reference, peer, ours, table; ours: build + our runs + table;
# check: build + checks only. RUNS overrides our run list (bench/trainer_bench.py's syntax).
# Everything lands in $OUT (logs, JSON); the table is printed last.
set -uo pipefail
OUT=${OUT:-/tmp/air-bench-out}
mkdir -p "$OUT"
root=${AIR_DEVCARRY:-.devcarry}
what=${1:-all}
runs=${2:-8b:padded,8b:padded:ac,8b:packed,1b:padded,1b:packed}
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
export PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

stamp "build"
export TORCH_CUDA_ARCH_LIST=9.0
# hub/ and trainer/data/ need headers the GPU image lacks: scripts/gpu/bundle.sh carried them.
extra=$(bash "$root/scripts/gpu/cmake_args.sh" "$root") || { echo "run scripts/gpu/bundle.sh here first"; exit 1; }
# shellcheck disable=SC2086
cmake -S "$root" -B /tmp/air-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DAIR_BUILD_CLI=OFF -DAIR_BUILD_TESTS=OFF $extra >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
cmake --build /tmp/air-build -j16 --target air-train air-train-check >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
bin=/tmp/air-build/bin
stamp "built"

if [ "$what" = all ] || [ "$what" = check ]; then
  stamp "kernel check"
  "$bin/air-train-check" --kernels 2>&1 | tee "$OUT/kernels.log"
  stamp "transformers check (autograd reference and the training engine's manual path)"
  AIR_SKIP_BASELINE=1 python3 "$root/scripts/gpu/check_hf.py" --bin "$bin" --root "$root" --out "$OUT" --skip-train \
    2>&1 | grep -E "^\[|PASS|FAIL|Error|error" | tail -30
fi
[ "$what" = check ] && exit 0

if [ "$what" = all ]; then
  stamp "reference recipe (both shapes)"
  mkdir -p "$OUT/ref" "$OUT/peer"
  OUT="$OUT/ref" SKIP_SDPA_VARIANT=1 timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$root/bench/seed_fsdp_baseline.py" >"$OUT/ref.log" 2>&1
  grep -E "^\|" "$OUT/ref.log" | tail -4
  stamp "peer (torch.compile)"
  OUT="$OUT/peer" timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$root/bench/tuned_peer.py" compiled:8b compiled:1b >"$OUT/peer.log" 2>&1
  grep -A4 "PEER SUMMARY" "$OUT/peer.log" | tail -4
fi

stamp "air-train: $runs"
python3 "$root/bench/trainer_bench.py" --bin "$bin" --data "$root/bench-data" --runs "$runs" --json "$OUT/ours.json" \
  2>&1 | tee "$OUT/ours.log"
stamp "done"
python3 "$root/bench/trainer_table.py" "$OUT" | tee "$OUT/table.md"
