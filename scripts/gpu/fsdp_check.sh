#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the main checkout's root, after scripts/gpu/prepare.sh filled .devcarry:
#   bash .devcarry/scripts/gpu/fsdp_check.sh
# Builds air-train against the machine's libtorch with NCCL's header (and air-torchrun with g++), then
# bench/fsdp_bench.py: the Llama-3.2-1B shape with the FSDP engine over NCCL at world size 1 through
# air-torchrun (both gradient-sync modes); the reference PyTorch recipe at 1B in the same call;
# then the Llama-3.1-8B shape with bf16 master weights (AIR_SKIP_8B=1 skips it). Results land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/air-gpu-out}
mkdir -p "$OUT"
root=${AIR_DEVCARRY:-.devcarry}
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
nccl_inc=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))')
start=$(date +%s)
export TORCH_CUDA_ARCH_LIST=9.0
cmake -S "$root" -B /tmp/air-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DAIR_BUILD_CLI=OFF -DAIR_BUILD_TESTS=OFF -DCMAKE_CXX_FLAGS="-I$nccl_inc" >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
cmake --build /tmp/air-build -j16 --target air-train >>"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" -A3 "$OUT/build.log" | head -60; exit 1; }
g++ -O2 -std=c++20 -I"$root" "$root"/launcher/torchrun/*.cc "$root"/core/base/host.cc "$root"/core/base/process.cc -o /tmp/air-build/bin/air-torchrun 2>>"$OUT/build.log" ||
  { tail -20 "$OUT/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
bench=(python3 -u "$root/bench/fsdp_bench.py" --bin /tmp/air-build/bin)

# 1B: the reference recipe's shape (4 x 1024, accumulation 2), 12 steps, medians over steps 4-12.
"${bench[@]}" --shape 1b --runs fsdp,fsdp-step --steps 12 --json "$OUT/1b.json" 2>&1 | tee "$OUT/1b.txt"

if [ -f "$root/bench/seed_fsdp_baseline.py" ] && [ "${AIR_SKIP_BASELINE:-0}" != 1 ]; then
  mkdir -p "$OUT/baseline"
  cat >/tmp/air_baseline_1b.py <<PY
import sys
sys.path.insert(0, "$root/bench")
import seed_fsdp_baseline as b
b.CONFIGS.pop("llama-3.1-8B")
b.main()
PY
  OUT="$OUT/baseline" SKIP_SDPA_VARIANT=1 PYTHONUNBUFFERED=1 timeout 200 \
    python3 -m torch.distributed.run --standalone --nproc_per_node=1 /tmp/air_baseline_1b.py 2>&1 |
    grep -E "^\|| step |SUMMARY|matmul|FAILED" | grep -v "KeyError" | tail -20 | tee "$OUT/baseline.txt"
fi

# 8B with bf16 master weights: the FSDP engine at world 1 ~14 bytes
# (bf16 master + fp32 gradient and AdamW shards: 112 GB), under the H200's 139 GiB.
if [ "${AIR_SKIP_8B:-0}" != 1 ]; then
  "${bench[@]}" --shape 8b --master bf16 --runs fsdp --steps 6 --warmup 2 --json "$OUT/8b.json" 2>&1 |
    tee "$OUT/8b.txt"
fi
echo "total $(( $(date +%s) - start )) s"
