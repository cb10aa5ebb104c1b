#!/usr/bin/env bash
# Run ON THE GPU MACHINE from the main checkout's root, after scripts/gpu/prepare.sh filled .devcarry:
#   bash .devcarry/scripts/gpu/check.sh
# Builds air-train and air-train-check against the machine's libtorch (CUDA), then compares our model with
# transformers (logits, loss, gradients, checkpoint round trip) and times a short 1B-shaped run. Results
# land in $OUT (results.json, check.log, build.log).
set -uo pipefail
OUT=${OUT:-/tmp/air-gpu-out}
mkdir -p "$OUT"
root=${AIR_DEVCARRY:-.devcarry}
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
start=$(date +%s)
export TORCH_CUDA_ARCH_LIST=9.0
cmake -S "$root" -B /tmp/air-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DAIR_BUILD_CLI=OFF -DAIR_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
cmake --build /tmp/air-build -j16 --target air-train air-train-check >>"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" "$OUT/build.log" | head -40; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
PYTHONUNBUFFERED=1 python3 "$root/scripts/gpu/check_hf.py" --bin /tmp/air-build/bin --root "$root" --out "$OUT" \
  "$@" 2>&1 | tee "$OUT/check.log"
