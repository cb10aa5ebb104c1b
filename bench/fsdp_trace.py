#!/usr/bin/env python3
"""Reads a profiler trace of one training step (air-train with AIR_TRAIN_TRACE, trainer/diagnostics.h) and says
whether the FSDP engine's collectives run concurrently with compute:

  python3 bench/fsdp_trace.py TRACE.json [--json OUT.json]

A GPU activity (kernel, memcpy, memset) counts as communication when a collective launched it: its CUDA
runtime call sits inside a CPU op of a collective (nccl:*, c10d::*, *all_gather*, *reduce_scatter*) on the
same thread, or it is an NCCL kernel. (At world size 1 NCCL runs a gather or a reduce-scatter as a
device-to-device copy on its own stream, not as a kernel; at world > 1 they are ncclDevKernel_* kernels.)
GEMMs are the kernels whose names say so (gemm, nvjet, xmma, cutlass). For each collective it reports how
much of its time a GEMM or any compute kernel on another stream covers, and the exposed part (the compute
stream idle while it runs).
"""
import argparse
import json
import re
import sys
from collections import defaultdict

GEMM = re.compile(r"gemm|nvjet|xmma|cutlass|cublas", re.I)
COMM_OP = re.compile(r"^nccl:|^c10d::|all_gather|allgather|reduce_scatter|reducescatter|record_param_comms", re.I)


def merge(iv):
    iv = sorted(iv)
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(a, b, merged):
    """Length of [a, b) covered by the merged intervals."""
    total = 0.0
    for x, y in merged:
        if y <= a:
            continue
        if x >= b:
            break
        total += min(b, y) - max(a, x)
    return total


CATEGORIES = (  # first match wins; names as CUDA reports them
    # cuBLASLt's FP8 kernels: nvjet names start nvjet_sm90_qq... (seen only in precision: fp8 traces; the
    # bf16 ones are nvjet_sm90_tst...), other libraries name the e4m3 type.
    ("GEMM FP8 (e4m3)", re.compile(r"nvjet_sm\d+_qq|(gemm|xmma|cutlass).*(e4m3|f8)", re.I)),
    ("GEMM (cuBLAS)", GEMM),
    ("attention (flash / cuDNN)", re.compile(r"flash|fmha|attention|cudnn", re.I)),
    ("air kernels: RMSNorm, SwiGLU, RoPE", re.compile(r"rms_(fwd|bwd)_kernel|swiglu_|rope_kernel")),
    ("air kernel: cross-entropy", re.compile(r"\bce_kernel")),  # not ATen's reduce_kernel
    ("air kernel: FP8 cast", re.compile(r"cast_kernel")),
    ("AdamW (fused)", re.compile(r"adam", re.I)),
    ("reductions (norms, sums)", re.compile(r"reduce_kernel|reduction|norm_kernel", re.I)),
    ("elementwise / copies (ATen)", re.compile(r"elementwise|vectorized|copy|fill|index|embedding|cat", re.I)),
)


def category(e):
    if e.get("cat") == "gpu_memcpy":
        return "memcpy"
    if e.get("cat") == "gpu_memset":
        return "memset"
    for name, rx in CATEGORIES:
        if rx.search(e["name"]):
            return name
    return "other kernels"


def kind_of(name):
    n = name.lower()
    if "gather" in n:
        return "all-gather"
    if "scatter" in n:
        return "reduce-scatter"
    if "allreduce" in n or "all_reduce" in n:
        return "all-reduce"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--json")
    ap.add_argument("--top", type=int, default=12, help="how many of the heaviest kernels to list")
    args = ap.parse_args()
    with open(args.trace) as f:
        doc = json.load(f)
    events = [e for e in doc.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not gpu:
        print("no GPU activity in the trace (a CPU build, or CUPTI unavailable)")
        return 1
    comm_ops = defaultdict(list)  # (pid, tid) -> [(start, end, name)]
    for e in events:
        if e.get("cat") in ("cpu_op", "user_annotation") and COMM_OP.search(e.get("name", "")):
            comm_ops[(e.get("pid"), e.get("tid"))].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    comm_corr = {}
    for e in events:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver"):
            continue
        corr = e.get("args", {}).get("correlation")
        for a, b, name in comm_ops.get((e.get("pid"), e.get("tid")), ()):
            if a <= e["ts"] <= b:
                comm_corr[corr] = name  # innermost wins: later (narrower) ops overwrite
    comm, compute = [], []
    for e in gpu:
        corr = e.get("args", {}).get("correlation")
        if "nccl" in e["name"].lower() or corr in comm_corr:
            e["_op"] = comm_corr.get(corr, e["name"])
            comm.append(e)
        else:
            compute.append(e)
    by_stream = defaultdict(float)
    for e in compute:
        if e.get("cat") == "kernel":
            by_stream[e["args"].get("stream")] += e["dur"]
    main_stream = max(by_stream, key=by_stream.get) if by_stream else None
    step_start = min(e["ts"] for e in gpu)
    step_end = max(e["ts"] + e["dur"] for e in gpu)
    gemms = merge([[e["ts"], e["ts"] + e["dur"]] for e in compute if e.get("cat") == "kernel" and GEMM.search(e["name"])])
    busy = merge([[e["ts"], e["ts"] + e["dur"]] for e in compute if e.get("cat") == "kernel"])
    rows = defaultdict(lambda: {"count": 0, "us": 0.0, "under_gemm_us": 0.0, "under_compute_us": 0.0, "streams": set(),
                                "names": set()})
    for e in comm:
        r = rows[kind_of(e["_op"])]
        a, b = e["ts"], e["ts"] + e["dur"]
        r["count"] += 1
        r["us"] += e["dur"]
        r["under_gemm_us"] += covered(a, b, gemms)
        r["under_compute_us"] += covered(a, b, busy)
        r["streams"].add(e["args"].get("stream"))
        r["names"].add(e["name"][:60])
    gpu_busy = sum(y - x for x, y in busy)
    print(f"trace: {args.trace}")
    print(f"step on the GPU: {(step_end - step_start) / 1e3:.1f} ms; compute kernels busy {gpu_busy / 1e3:.1f} ms; "
          f"compute stream {main_stream}; GEMM time {sum(y - x for x, y in gemms) / 1e3:.1f} ms")
    print("| collective | count | time | under a GEMM | under any compute | exposed | streams | GPU activity |")
    print("|---|---|---|---|---|---|---|---|")
    out = {}
    for k, r in sorted(rows.items()):
        us = max(r["us"], 1e-9)
        exposed = r["us"] - r["under_compute_us"]
        print(f"| {k} | {r['count']} | {r['us'] / 1e3:.2f} ms | {100 * r['under_gemm_us'] / us:.0f}% | "
              f"{100 * r['under_compute_us'] / us:.0f}% | {exposed / 1e3:.2f} ms | "
              f"{','.join(str(s) for s in sorted(r['streams'], key=str))} | {'; '.join(sorted(r['names']))[:80]} |")
        out[k] = {kk: (sorted(v, key=str) if isinstance(v, set) else v) for kk, v in r.items()}
    # Where the compute time goes: GPU time per category and the heaviest kernels.
    cats, kernels = defaultdict(float), defaultdict(lambda: [0, 0.0])
    for e in compute:
        cats[category(e)] += e["dur"]
        k = kernels[e["name"][:90]]
        k[0] += 1
        k[1] += e["dur"]
    total = max(sum(cats.values()), 1e-9)
    print("\n| compute category | GPU time | share |\n|---|---|---|")
    for c, us in sorted(cats.items(), key=lambda kv: -kv[1]):
        print(f"| {c} | {us / 1e3:.1f} ms | {100 * us / total:.1f}% |")
    print(f"\n| kernel (heaviest {args.top}) | calls | GPU time |\n|---|---|---|")
    for name, (n, us) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"| `{name}` | {n} | {us / 1e3:.1f} ms |")
    if not rows:
        print("no collective activity found (world size 1 without AIR_TRAIN_WORLD1_NCCL=1 runs none)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"step_ms": (step_end - step_start) / 1e3, "compute_busy_ms": gpu_busy / 1e3,
                       "main_stream": main_stream, "collectives": out,
                       "categories_ms": {c: us / 1e3 for c, us in cats.items()}}, f, indent=1)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
