#!/usr/bin/env bash
# air-train beside the reference PyTorch FSDP recipe and the tuned torch.compile peer, on one GPU, in one
# call. Prepare HERE (npm makes the data): bash scripts/gpu/prepare.sh && bash scripts/gpu/bundle.sh; then ON THE
# GPU MACHINE, from the
# checkout root (device tool: carry [".devcarry"]):
#   bash .devcarry/bench/trainer_vs_reference.sh [all|ours|check|curve|trace|curve+trace|fp8|lora|lora-curve] [RUNS]
# all: build, kernel + transformers checks, reference, peer, ours, table; ours: build + our runs + table;
# check: build + checks only. RUNS overrides our run list (bench/trainer_bench.py's syntax).
# curve: the 300-step 1B loss curve beside the reference recipe on the same rows (bench/loss_curve.py, PNG);
# trace: profiler traces at world 1 over NCCL with the collectives of N GPUs, read by bench/fsdp_trace.py.
# fp8: build, the FP8 GEMM check (air-train-check --fp8), our bf16 and fp8 rows (RUNS, default below), then
# AIR_FP8_CURVE_STEPS (default 0: none) steps of the AIR_FP8_CURVE_SHAPE (default 1b) shape in bf16 and in fp8 on the same rows
# (bench/fp8_curve.py). Run names: bench/trainer_bench.py (fp8, rowwise, seq=N, mb=N, acc=N, outside=K).
# Clocks: every run also prints its line clock (the step lines' arrival times, taken here); outside=K adds two
# more runs differing only in max_steps; the table's "Clocks" notes put both beside air-train's own figure.
# lora: build, the PEFT checks (scripts/gpu/check_lora.py: step-1 loss and adapter gradients against PEFT from the
# same base and init, PEFT loading our adapter, transformers loading the merged checkpoint), the LoRA peer
# (bench/lora_peer.py, 8B and 1B; AIR_SKIP_LORA_PEER=1 skips it) and our LoRA rows (RUNS, default below), then the
# LoRA table with issue 32's speed and memory targets judged, then with AIR_LORA_CURVE_STEPS=N (default 0: none) the
# LoRA curve below.
# lora-curve: build, then the N-step (AIR_LORA_CURVE_STEPS, default 300) 1B LoRA curve beside transformers + PEFT on
# the same rows from the same initial adapter (bench/lora_curve.py, PNG).
# targets: issue 31's table in one call: build, the kernel, transformers and FP8 checks, the peer `compiled` at
# 8B and 1B (4 x 1024 x 2) and at 8B T=8192 (1 x 8192 x 2, bench/peer_at_shape.py: on the reference's padded rows
# with their mask, and on full rows without one; target 3 is judged against the faster), our bf16 and fp8 rows at both
# row lengths and 1B (RUNS, default below), AIR_FP8_CURVE_STEPS as in fp8 mode, then the table with each target
# judged (met / not met). AIR_ATTN_BENCH=1 adds bench/attention_kernels.py (SDPA backends at our shapes).
# families: build, then the other families at their vendors' shapes (qwen3-8b, mistral-7b, gemma3-4b; RUNS, default
# below) and bench/family_peer.py (torch.compile, and PEFT LoRA) on the same config.json files (AIR_FAMILY_PEERS,
# default every peer; none: no peer), then bench/family_table.py: issue 41's table with each target judged.
# Everything lands in $OUT (logs, JSON); the table is printed last.
set -uo pipefail
OUT=${OUT:-/tmp/air-bench-out}
mkdir -p "$OUT"
root=${AIR_DEVCARRY:-.devcarry}
what=${1:-all}
runs=${2:-8b:padded,8b:padded:ac,8b:packed,1b:padded,1b:packed}
[ "$what" = lora ] && runs=${2:-8b:padded:lora,1b:padded:lora,8b:packed:lora}
[ "$what" = fp8 ] && runs=${2:-8b:padded:outside=20,8b:padded:fp8:outside=20,8b:padded:fp8:rowwise,8b:padded:seq=8192:mb=1:acc=2:fp8}
[ "$what" = families ] &&
  runs=${2:-qwen3-8b:padded,qwen3-8b:padded:fp8,qwen3-8b:padded:lora,qwen3-8b:packed:lora:seq=2048:mb=2:acc=4,mistral-7b:padded,gemma3-4b:padded}
[ "$what" = targets ] &&
  runs=${2:-8b:padded:outside=20,8b:padded:fp8,8b:padded:seq=8192:mb=1:acc=2,8b:padded:seq=8192:mb=1:acc=2:fp8,1b:padded}
prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')
export PYTHONUNBUFFERED=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*"; }

stamp "build"
bdir=${AIR_BENCH_BUILD:-/tmp/air-build}  # another folder when another checkout built in /tmp/air-build on a warm machine
export TORCH_CUDA_ARCH_LIST=9.0
# hub/ and trainer/data/ need headers the GPU image lacks: scripts/gpu/bundle.sh carried them.
extra=$(bash "$root/scripts/gpu/cmake_args.sh" "$root") || { echo "run scripts/gpu/bundle.sh here first"; exit 1; }
# shellcheck disable=SC2086
cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DAIR_BUILD_CLI=OFF -DAIR_BUILD_TESTS=OFF $extra >"$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
cmake --build "$bdir" -j16 --target air-train air-train-check >>"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
bin=$bdir/bin
stamp "built"

if [ "$what" = all ] || [ "$what" = check ] || [ "$what" = targets ]; then
  stamp "kernel check"
  "$bin/air-train-check" --kernels 2>&1 | tee "$OUT/kernels.log"
  stamp "transformers check (autograd reference and the training engine's manual path)"
  AIR_SKIP_BASELINE=1 python3 "$root/scripts/gpu/check_hf.py" --bin "$bin" --root "$root" --out "$OUT" --skip-train \
    2>&1 | grep -E "^\[|PASS|FAIL|Error|error" | tail -30
fi
[ "$what" = check ] && exit 0
if [ "$what" = fp8 ] || [ "$what" = targets ]; then
  stamp "fp8 GEMM check: errors against fp32 and the CPU emulation, speed beside bf16"
  "$bin/air-train-check" --fp8 2>&1 | tee "$OUT/fp8_check.log"
fi

lora_curve() {
  stamp "LoRA curve: air-train and transformers + PEFT, $1 steps of the 1B shape on the same rows"
  python3 "$root/bench/lora_curve.py" --bin "$bin" --data "$root/bench-data" --out "$OUT" --steps "$1" \
    2>&1 | tee "$OUT/lora_curve.log"
}
if [ "$what" = lora-curve ]; then
  lora_curve "${AIR_LORA_CURVE_STEPS:-300}"
  stamp "done"
  exit 0
fi
if [ "$what" = families ]; then
  stamp "air-train, the families: $runs"
  python3 "$root/bench/trainer_bench.py" --bin "$bin" --data "$root/bench-data" --runs "$runs" --json "$OUT/ours.json" \
    2>&1 | tee "$OUT/ours.log"
  peers=${AIR_FAMILY_PEERS:-compiled:qwen3-8b lora:qwen3-8b compiled:mistral-7b compiled:gemma3-4b}
  if [ "$peers" != none ]; then
    stamp "the PyTorch peer on the same config.json files: $peers"
    mkdir -p "$OUT/family_peer"
    # shellcheck disable=SC2086
    OUT="$OUT/family_peer" timeout "${AIR_FAMILY_PEER_TIMEOUT:-420}" python3 -m torch.distributed.run --standalone \
      --nproc_per_node=1 "$root/bench/family_peer.py" --data "$root/bench-data" $peers >"$OUT/family_peer.log" 2>&1
    grep -E "median|FAILED" "$OUT/family_peer.log"
  fi
  python3 "$root/bench/family_table.py" "$OUT" | tee "$OUT/table.md"
  stamp "done"
  exit 0
fi
if [ "$what" = lora ]; then
  stamp "LoRA checks against PEFT"
  python3 "$root/scripts/gpu/check_lora.py" --bin "$bin" --root "$root" --out "$OUT" 2>&1 | tee "$OUT/lora_check.log" |
    grep -E "PASS|FAIL|Error|error|\[env\]"
  stamp "air-train LoRA: $runs"
  python3 "$root/bench/trainer_bench.py" --bin "$bin" --data "$root/bench-data" --runs "$runs" --json "$OUT/ours.json" \
    2>&1 | tee "$OUT/ours.log"
  if [ "${AIR_SKIP_LORA_PEER:-0}" != 1 ]; then
    stamp "LoRA peer (transformers + PEFT, torch.compile)"
    mkdir -p "$OUT/lora_peer"
    OUT="$OUT/lora_peer" timeout 300 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
      "$root/bench/lora_peer.py" 8b 1b >"$OUT/lora_peer.log" 2>&1
    grep -A3 "LORA PEER SUMMARY" "$OUT/lora_peer.log" | tail -3
  fi
  python3 "$root/bench/trainer_table.py" "$OUT" | tee "$OUT/table.md"
  [ "${AIR_LORA_CURVE_STEPS:-0}" -gt 0 ] && lora_curve "$AIR_LORA_CURVE_STEPS"
  stamp "done"
  exit 0
fi

case "$what" in curve|trace|curve+trace)
  if [ "$what" != trace ]; then
    stamp "loss curve: air-train and the reference recipe, 300 steps of the 1B shape on the same rows"
    python3 "$root/bench/loss_curve.py" --bin "$bin" --data "$root/bench-data" --out "$OUT" --steps "${AIR_CURVE_STEPS:-300}" \
      2>&1 | tee "$OUT/curve.log"
  fi
  if [ "$what" != curve ]; then
    truns=${2:-1b:padded:collectives:trace:steps=6,8b:padded:collectives:trace:steps=6,8b:padded:steps=6}
    stamp "traces: $truns"
    python3 "$root/bench/trainer_bench.py" --bin "$bin" --data "$root/bench-data" --runs "$truns" \
      --json "$OUT/trace_runs.json" 2>&1 | tee "$OUT/trace_runs.log"
    for t in "$OUT"/trace_*.json; do
      case "$t" in *trace_runs.json) continue ;; esac
      python3 "$root/bench/fsdp_trace.py" "$t" --json "${t%.json}.summary.json" 2>&1 | tee -a "$OUT/trace_summary.md"
      gzip -f "$t"
    done
  fi
  stamp "done"
  # The device tool brings back at most 8 files: the plot, the curves, the trace summary, and one archive.
  (cd "$OUT" && tar czf extras.tgz --exclude=extras.tgz --exclude=loss_curve.png --exclude=loss_curve.json \
     --exclude=trace_summary.md ./* && find . -mindepth 1 -maxdepth 1 ! -name extras.tgz ! -name loss_curve.png \
     ! -name loss_curve.json ! -name trace_summary.md -exec rm -rf {} +)
  exit 0 ;;
esac

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

if [ "$what" = targets ]; then
  if [ "${AIR_ATTN_BENCH:-0}" = 1 ]; then
    stamp "attention kernels: SDPA backends at our shapes and layout"
    python3 "$root/bench/attention_kernels.py" --json "$OUT/attention_kernels.json" 2>&1 | tee "$OUT/attention_kernels.log"
  fi
  stamp "peer (torch.compile): 4 x 1024 x 2 at 8B and 1B"
  mkdir -p "$OUT/peer" "$OUT/peer_long"
  OUT="$OUT/peer" timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$root/bench/tuned_peer.py" compiled:8b compiled:1b >"$OUT/peer.log" 2>&1
  grep -A3 "PEER SUMMARY" "$OUT/peer.log" | tail -3
  stamp "peer (torch.compile): 8B, 1 x 8192 x 2"
  OUT="$OUT/peer_long" timeout 200 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$root/bench/peer_at_shape.py" --seq 8192 --mb 1 --acc 2 compiled:8b >"$OUT/peer_long.log" 2>&1
  grep -A2 "PEER SUMMARY" "$OUT/peer_long.log" | tail -2
  stamp "peer (torch.compile): 8B, 1 x 8192 x 2, full rows (no padding mask)"
  mkdir -p "$OUT/peer_long_full"
  OUT="$OUT/peer_long_full" timeout 200 python3 -m torch.distributed.run --standalone --nproc_per_node=1 \
    "$root/bench/peer_at_shape.py" --seq 8192 --mb 1 --acc 2 --full-rows compiled:8b >"$OUT/peer_long_full.log" 2>&1
  grep -A2 "PEER SUMMARY" "$OUT/peer_long_full.log" | tail -2
fi

stamp "air-train: $runs"
python3 "$root/bench/trainer_bench.py" --bin "$bin" --data "$root/bench-data" --runs "$runs" --json "$OUT/ours.json" \
  2>&1 | tee "$OUT/ours.log"
if { [ "$what" = fp8 ] || [ "$what" = targets ]; } && [ "${AIR_FP8_CURVE_STEPS:-0}" -gt 0 ]; then
  stamp "fp8 loss curve: ${AIR_FP8_CURVE_STEPS} steps of the ${AIR_FP8_CURVE_SHAPE:-1b} shape, bf16 and fp8 on the same rows"
  python3 "$root/bench/fp8_curve.py" --bin "$bin" --data "$root/bench-data" --out "$OUT" \
    --steps "$AIR_FP8_CURVE_STEPS" --window "${AIR_FP8_CURVE_WINDOW:-50}" --shape "${AIR_FP8_CURVE_SHAPE:-1b}" \
    2>&1 | tee "$OUT/fp8_curve.log"
fi
stamp "done"
targets_flag=""
[ "$what" = targets ] && targets_flag=--targets
python3 "$root/bench/trainer_table.py" "$OUT" $targets_flag | tee "$OUT/table.md"
if [ "$what" = targets ]; then
  # The device tool brings back at most 8 files: the table, our runs' JSON and one archive of the rest.
  (cd "$OUT" && tar czf extras.tgz --exclude=extras.tgz --exclude=table.md --exclude=ours.json ./* &&
     find . -mindepth 1 -maxdepth 1 ! -name extras.tgz ! -name table.md ! -name ours.json -exec rm -rf {} +)
fi
