#!/usr/bin/env python3
"""Times causal attention forward + backward at air-train's shapes and layout on one GPU, per SDPA backend.

q, k and v are views into one fused [B*T, (nh + 2 nkv) * hd] projection, as trainer/model/block.cc makes them
(narrow, view [B, T, heads, hd], transpose to [B, heads, T, hd]); k and v have nkv heads (GQA,
enable_gqa=True) or are repeated to nh heads ("repeat kv", as AIR_TRAIN_ATTN_GQA=0). Each line also gives the
relative difference of the output and of the qkv gradient from the library default's (same inputs). FLOPs are the causal
ones: forward 2 * 2 * B * nh * T^2 * hd / 2, backward 2.5x that. Prints one line per shape and backend, and
the kernels the library's default choice launched (so a table can say which kernel ran).
usage: attention_kernels.py [--json OUT]
"""
import argparse
import contextlib
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

SHAPES = [  # name, B, T, nh, nkv, hd
    ("8b T=8192 (1 x 8192)", 1, 8192, 32, 8, 128),
    ("8b T=1024 (4 x 1024)", 4, 1024, 32, 8, 128),
    ("1b T=1024 (4 x 1024)", 4, 1024, 32, 8, 64),
]
BACKENDS = [("library default", None), ("flash", SDPBackend.FLASH_ATTENTION),
            ("cudnn", SDPBackend.CUDNN_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def inputs(B, T, nh, nkv, hd, repeat):
    W = (nh + 2 * nkv) * hd
    torch.manual_seed(1234)  # the same data for every backend, so their outputs compare
    qkv = (torch.randn(B * T, W, device="cuda", dtype=torch.bfloat16) * 0.5).requires_grad_(True)
    q = qkv.narrow(1, 0, nh * hd).view(B, T, nh, hd).transpose(1, 2)
    k = qkv.narrow(1, nh * hd, nkv * hd).view(B, T, nkv, hd).transpose(1, 2)
    v = qkv.narrow(1, (nh + nkv) * hd, nkv * hd).view(B, T, nkv, hd).transpose(1, 2)
    if repeat:
        r = nh // nkv
        k = k.unsqueeze(2).expand(B, nkv, r, T, hd).reshape(B, nh, T, hd)
        v = v.unsqueeze(2).expand(B, nkv, r, T, hd).reshape(B, nh, T, hd)
    return qkv, q, k, v


def step(B, T, nh, nkv, hd, repeat, dout):
    qkv, q, k, v = inputs(B, T, nh, nkv, hd, repeat)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=not repeat)
    o.backward(dout)
    return o, qkv.grad


def timed(fn, n=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    results = []
    for name, B, T, nh, nkv, hd in SHAPES:
        flops = 2 * 2 * B * nh * T * T * hd / 2 * 3.5
        dout = torch.randn(B, nh, T, hd, device="cuda", dtype=torch.bfloat16)
        ref_o, ref_g = step(B, T, nh, nkv, hd, False, dout)
        for label, backend in BACKENDS:
            for repeat in (False, True):
                tag = f"{label}{', repeat kv' if repeat else ''}"
                try:
                    with sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext():
                        o, g = step(B, T, nh, nkv, hd, repeat, dout)
                        err_o = ((o.float() - ref_o.float()).norm() / ref_o.float().norm()).item()
                        err_g = ((g.float() - ref_g.float()).norm() / ref_g.float().norm()).item()
                        ms = timed(lambda: step(B, T, nh, nkv, hd, repeat, dout))
                        kernels = []
                        if backend is None:
                            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                                step(B, T, nh, nkv, hd, repeat, dout)
                                torch.cuda.synchronize()
                            kernels = sorted({e.name for e in prof.events()
                                              if any(s in e.name.lower() for s in ("flash", "fmha", "cudnn", "sdpa", "attention"))})
                except Exception as e:  # a backend that turns the input down
                    print(f"{name} | {tag}: not available ({str(e).splitlines()[0][:160]})", flush=True)
                    results.append(dict(shape=name, backend=tag, error=str(e)[:400]))
                    continue
                print(f"{name} | {tag}: fwd+bwd {ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s (causal), "
                      f"vs default-GQA output {err_o:.1e} grad {err_g:.1e}" +
                      (f" | kernels: {'; '.join(k[:90] for k in kernels)}" if kernels else ""), flush=True)
                results.append(dict(shape=name, backend=tag, ms=ms, tflops=flops / ms / 1e9, err_out=err_o,
                                    err_grad=err_g, kernels=kernels))
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
