#!/usr/bin/env bash
# The GPU benchmarks' readers on CPU, with traces and batch files made here: bench/fsdp_trace.py finds the
# collectives (by the CPU op that launched them, NCCL kernels by name), measures how much of each a GEMM on
# another stream covers, and sorts compute time into categories; bench/loss_curve.py reads the batch dump
# format air-train writes (trainer/diagnostics.h).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d /tmp/air-bench-tools-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A step: GEMMs on stream 7 from 0 to 1000 us; an all-gather (a memcpy on stream 20, launched inside
# nccl:_all_gather_base) at 100-300 us, fully under the first GEMM; a reduce-scatter (an NCCL kernel) at
# 1100-1300 us, after every GEMM (exposed); an elementwise kernel at 1000-1050 us.
cat > "$tmp/trace.json" <<'JSON'
{"traceEvents": [
 {"ph": "X", "cat": "cpu_op", "name": "nccl:_all_gather_base", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 15, "dur": 2, "args": {"correlation": 7}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 40, "dur": 2, "args": {"correlation": 8}},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "pid": 0, "tid": 20, "ts": 100, "dur": 200, "args": {"stream": 20, "correlation": 7}},
 {"ph": "X", "cat": "kernel", "name": "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "pid": 0, "tid": 7, "ts": 0, "dur": 600, "args": {"stream": 7, "correlation": 8}},
 {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7, "ts": 600, "dur": 400, "args": {"stream": 7, "correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>", "pid": 0, "tid": 7, "ts": 1000, "dur": 50, "args": {"stream": 7, "correlation": 10}},
 {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "pid": 0, "tid": 21, "ts": 1100, "dur": 200, "args": {"stream": 21, "correlation": 11}}
]}
JSON
out=$(python3 "$root/bench/fsdp_trace.py" "$tmp/trace.json" --json "$tmp/summary.json") || fail "fsdp_trace.py failed: $out"
echo "$out"
python3 - "$tmp/summary.json" <<'PY' || fail "fsdp_trace.py summary is wrong"
import json, sys
s = json.load(open(sys.argv[1]))
ag, rs = s["collectives"]["all-gather"], s["collectives"]["reduce-scatter"]
assert ag["count"] == 1 and abs(ag["us"] - 200) < 1e-6, ag
assert abs(ag["under_gemm_us"] - 200) < 1e-6, ag           # fully under the GEMM
assert rs["count"] == 1 and rs["under_compute_us"] == 0, rs  # after all compute: exposed
assert s["main_stream"] == 7
c = s["categories_ms"]
assert abs(c["GEMM (cuBLAS)"] - 1.0) < 1e-9 and abs(c["elementwise / copies (ATen)"] - 0.05) < 1e-9, c
PY
# Without collectives it says so and fails (a trace at world 1 without AIR_TRAIN_WORLD1_NCCL).
python3 - "$tmp/trace.json" "$tmp/plain.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["traceEvents"] = [e for e in d["traceEvents"] if "nccl" not in e["name"].lower() and e.get("args", {}).get("correlation") != 7]
json.dump(d, open(sys.argv[2], "w"))
PY
if python3 "$root/bench/fsdp_trace.py" "$tmp/plain.json" > "$tmp/plain.out"; then fail "a trace without collectives passed"; fi
grep -q "no collective activity" "$tmp/plain.out" || fail "no explanation for a trace without collectives"

# The batch dump: two micro-batches of step 1, one of step 2, [step, B, T] + ids + targets (int64).
python3 - "$tmp/batches.bin" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    for step, base in ((1, 0), (1, 100), (2, 200)):
        ids = [base + i for i in range(2 * 3)]
        tg = [-100 if i % 3 == 0 else base + i + 1 for i in range(2 * 3)]
        f.write(struct.pack("<3q", step, 2, 3) + struct.pack("<6q", *ids) + struct.pack("<6q", *tg))
PY
python3 - "$root/bench" "$tmp/batches.bin" <<'PY' || fail "loss_curve.read_batches misread the dump"
import sys
sys.path.insert(0, sys.argv[1])
from loss_curve import read_batches
b = read_batches(sys.argv[2])
assert [x[0] for x in b] == [1, 1, 2], b
assert b[1][1] == [[100, 101, 102], [103, 104, 105]]
assert b[2][2][0][0] == -100 and b[2][2][0][1] == 202
PY
echo "PASS"
