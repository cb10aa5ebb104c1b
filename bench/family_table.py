#!/usr/bin/env python3
"""Prints the families' speed table of bench/trainer_vs_reference.sh (mode `families`) from one call's JSON:
air-train's runs (trainer_bench.py, ours.json) beside the PyTorch peer on the same config.json
(family_peer.py, family_peer/family_peer.json), each ratio from this call, and issue 41's targets judged.
usage: family_table.py OUTDIR"""
import json
import os
import sys

out = sys.argv[1]


def load(path, default):
    try:
        return json.load(open(os.path.join(out, path)))
    except Exception:
        return default


ours = {r["run"]: r for r in load("ours.json", []) if "error" not in r}
failed = [r["run"] for r in load("ours.json", []) if "error" in r]
peer_doc = load("family_peer/family_peer.json", {"runs": [], "failures": []})
peer = {f"{r['variant']}:{r['shape']}": r for r in peer_doc.get("runs", [])}

print("| model | run | air-train ms/step | tok/s (padded / real) | peak GiB | peer | peer ms/step | peer peak GiB | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for spec, r in ours.items():
    shape = r["shape"]
    p = peer.get(("lora:" if "lora" in spec.split(":") else "compiled:") + shape)
    same_shape = all(o in ("padded", "lora", "outside=20") or o.startswith("outside=") for o in spec.split(":")[1:])
    if p and same_shape and "fp8" not in spec.split(":"):
        ratio = f"{p['step_ms'] / r['step_ms']:.2f}x"
        pcols = (f"{p['variant']}", f"{p['step_ms']:.1f}", f"{p['peak_gib']:.1f}")
    else:
        ratio, pcols = "", ("", "", "")
    print(f"| {shape} | {spec} | {r['step_ms']:.1f} | {r['padded_tok_s']:,.0f} / {r['real_tok_s']:,.0f} | "
          f"{r['peak_gib']:.1f} | {pcols[0]} | {pcols[1]} | {pcols[2]} | {ratio} |")
for f in failed:
    print(f"| | {f} | FAILED | | | | | | |")
for f in peer_doc.get("failures", []):
    print(f"| | peer {f['run']} | FAILED: {f['error'][:80]} | | | | | | |")

print("\nIssue 41's targets (one H200, each ratio from this call):")


def judge(name, ok, text):
    print(f"- {name}: {text} -> {'met' if ok else 'NOT met'}" if ok is not None else f"- {name}: not run")


def vs_peer(shape, variant, target, spec=None, memory=False):
    spec = spec or f"{shape}:padded" + (":lora" if variant == "lora" else "")
    r, p = ours.get(spec), peer.get(f"{variant}:{shape}")
    if not r or not p:
        return judge(f"{shape} {variant} >= {target}x the peer", None, "")
    ratio = p["step_ms"] / r["step_ms"]
    ok = ratio >= target and (not memory or r["peak_gib"] <= p["peak_gib"])
    mem = f", peak {r['peak_gib']:.1f} vs {p['peak_gib']:.1f} GiB" if memory else ""
    judge(f"{shape} {'full' if variant == 'compiled' else variant} >= {target}x the peer"
          + (" at no more memory" if memory else ""), ok,
          f"{p['step_ms']:.1f} / {r['step_ms']:.1f} ms = {ratio:.2f}x{mem}")


vs_peer("qwen3-8b", "compiled", 1.15)
vs_peer("mistral-7b", "compiled", 1.15)
vs_peer("gemma3-4b", "compiled", 1.15, memory=True)
vs_peer("qwen3-8b", "lora", 1.3)
b, f8 = ours.get("qwen3-8b:padded"), ours.get("qwen3-8b:padded:fp8")
judge("qwen3-8b FP8 >= 1.3x our bf16", (b["step_ms"] / f8["step_ms"] >= 1.3) if b and f8 else None,
      f"{b['step_ms']:.1f} / {f8['step_ms']:.1f} ms = {b['step_ms'] / f8['step_ms']:.2f}x" if b and f8 else "")
s = ours.get("qwen3-8b:packed:lora:seq=2048:mb=2:acc=4")
judge("qwen3-8b LoRA at Surogate's shape (T 2048, batch 2, acc 4, packing) >= 17,500 tok/s",
      s["real_tok_s"] >= 17500 if s else None, f"{s['real_tok_s']:,.0f} tok/s" if s else "")
