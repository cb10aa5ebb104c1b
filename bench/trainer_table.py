#!/usr/bin/env python3
"""Prints bench/trainer_vs_reference.sh's one table from the JSON its three parts wrote: the reference recipe
(seed_fsdp_baseline.py results.json), the tuned PyTorch peer (tuned_peer.py peer.json) and air-train
(trainer_bench.py ours.json). Ratios are from this one call. usage: trainer_table.py OUTDIR"""
import json
import os
import sys

out = sys.argv[1]


def load(path, default):
    try:
        return json.load(open(os.path.join(out, path)))
    except Exception:
        return default


ref = load("ref/results.json", {"runs": [], "matmul": []})
peer = load("peer/peer.json", {"runs": []})
ours = load("ours.json", [])
shape_of = {"llama-3.2-1B": "1b", "llama-3.1-8B": "8b"}
base, best_peer = {}, {}
rows = []
for r in ref.get("runs", []):
    s = shape_of.get(r["config"], r["config"])
    base[s] = r["padded_tok_s"]
    base[s + ":real"] = r["nonpad_tok_s"]
    rows.append((s, "reference recipe (FSDP1, recompute)", "padded", r["step_time_median_s"] * 1e3,
                 r["padded_tok_s"], r["nonpad_tok_s"], r["mfu_989"], r["peak_mem_gib"]))
for r in peer.get("runs", []):
    s = shape_of.get(r["config"], r.get("shape", r["config"]))
    if r["variant"] == "compiled":
        best_peer[s] = r["padded_tok_s"]
    rows.append((s, f"peer {r['variant']} (torch.compile)", "padded", r["step_ms"], r["padded_tok_s"], None,
                 r["mfu_989"], r["peak_gib"]))
# FP8 rows beside our bf16 run of the same spec (the spec without fp8/rowwise).
plain = lambda run: ":".join(o for o in run.split(":") if o not in ("fp8", "rowwise") and not o.startswith("outside="))
ours_bf16 = {plain(r["run"]): r["padded_tok_s"] for r in ours if "error" not in r and "fp8" not in r["run"].split(":")}
notes = []
is_lora = lambda r: "lora" in r["run"].split(":")
ours_lora = [r for r in ours if is_lora(r)]
ours = [r for r in ours if not is_lora(r)]
for r in ours:
    if "error" in r:
        rows.append((r["shape"], "air-train " + r["run"], r["mode"], None, None, None, None, None))
        continue
    eng = "air-train " + ":".join(r["run"].split(":")[2:])
    if "fp8" in r["run"].split(":") and ours_bf16.get(plain(r["run"])):
        eng += f" ({r['padded_tok_s'] / ours_bf16[plain(r['run'])]:.2f}x our bf16)"
    if "outside_step_ms" in r or "line_step_ms" in r:
        n = (f"{r['run']}: {r['step_ms']:.1f} ms/step as air-train reports it "
             f"(median; mean {r.get('mean_step_ms', 0):.1f})")
        if "line_step_ms" in r:
            n += (f"; line clock (this script stamps each step's line as it arrives) {r['line_step_ms']:.1f} ms: "
                  f"{100 * (r['line_step_ms'] / r['step_ms'] - 1):+.1f}%")
        if "outside_step_ms" in r:
            n += (f"; two runs differing only in max_steps {r['outside_step_ms']:.1f} ms: "
                  f"{100 * (r['outside_step_ms'] / r['step_ms'] - 1):+.1f}%")
            pr = r.get("outside_runs", [])
            if len(pr) == 2:
                k = pr[1]["max_steps"] - pr[0]["max_steps"]
                d_start = pr[1]["startup_s"] - pr[0]["startup_s"]
                d_exit = pr[1]["after_last_step_s"] - pr[0]["after_last_step_s"]
                n += (f" (start-ups {pr[0]['startup_s']:.2f} / {pr[1]['startup_s']:.2f} s, exits "
                      f"{pr[0]['after_last_step_s']:.2f} / {pr[1]['after_last_step_s']:.2f} s: they move the "
                      f"difference by {1e3 * (d_start + d_exit) / k:+.1f} ms/step)")
        notes.append(n)
    rows.append((r["shape"], eng, r["mode"], r["step_ms"], r["padded_tok_s"], r["real_tok_s"], r["mfu"], r["peak_gib"]))
for mm in ref.get("matmul", [])[:1]:
    print(f"bf16 8192^3 matmul ceiling in this call: {mm['mean_tflops']:.1f} TFLOP/s; MFU below is against 989")
print("| shape | engine | mode | step | padded tok/s | real tok/s | MFU | peak GiB | vs reference (padded / real) | vs peer compiled |")
print("|---|---|---|---|---|---|---|---|---|---|")
fmt = lambda v, f: "-" if v is None else f.format(v)
for s, eng, mode, ms, ptok, rtok, mfu, peak in sorted(rows, key=lambda r: (r[0], r[2])):
    vs_ref = "-"
    if ptok and base.get(s):
        vs_ref = f"{ptok / base[s]:.2f}x"
        if rtok and base.get(s + ':real'):
            vs_ref += f" / {rtok / base[s + ':real']:.2f}x"
    vs_peer = f"{ptok / best_peer[s]:.2f}x" if ptok and best_peer.get(s) else "-"
    print(f"| {s} | {eng} | {mode} | {fmt(ms, '{:.1f} ms')} | {fmt(ptok, '{:,.0f}')} | {fmt(rtok, '{:,.0f}')} | "
          f"{fmt(mfu and 100 * mfu, '{:.1f}%')} | {fmt(peak, '{:.1f}')} | {vs_ref} | {vs_peer} |")
for n in notes:
    print("\nClocks, " + n)

# LoRA: ours beside the LoRA peer (bench/lora_peer.py: transformers + PEFT, r 16, alpha 32, all block linears).
lora_peer = load("lora_peer/lora_peer.json", [])
if ours_lora or lora_peer:
    peer_by = {r["shape"]: r for r in lora_peer}
    print("\n| shape | LoRA r 16 all-linear | step | padded tok/s | peak GiB | loss first -> last | vs LoRA peer (tok/s) |")
    print("|---|---|---|---|---|---|---|")
    for r in lora_peer:
        print(f"| {r['shape']} | peer: transformers + PEFT, torch.compile per layer | {r['step_ms']:.1f} ms | "
              f"{r['padded_tok_s']:,.0f} | {r['peak_gib']:.1f} | {r['loss_first']:.3f} -> {r['loss_final']:.3f} | 1.00x |")
    for r in ours_lora:
        if "error" in r:
            print(f"| {r['shape']} | air-train {r['run']} | FAILED | - | - | - | - |")
            continue
        p = peer_by.get(r["shape"])
        ratio = f"{r['padded_tok_s'] / p['padded_tok_s']:.2f}x" if p else "-"
        print(f"| {r['shape']} | air-train {r['run']} | {r['step_ms']:.1f} ms | {r['padded_tok_s']:,.0f} | "
              f"{r['peak_gib']:.1f} | {r['loss_first']:.3f} -> {r['loss_last']:.3f} | {ratio} |")
