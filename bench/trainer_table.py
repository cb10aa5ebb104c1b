#!/usr/bin/env python3
"""Prints bench/trainer_vs_reference.sh's one table from the JSON its three parts wrote: the reference recipe
(seed_fsdp_baseline.py results.json), the tuned PyTorch peer (tuned_peer.py peer.json; peer_long/peer.json: the
peer at another row shape, bench/peer_at_shape.py) and air-train (trainer_bench.py ours.json). Ratios are from this
one call; a run is compared with the peer of its shape and row length (8b, 8b T=8192, ...). With --targets it
also prints issue 31's targets against this call's rows. usage: trainer_table.py OUTDIR [--targets]"""
import json
import os
import sys

out = sys.argv[1]
show_targets = "--targets" in sys.argv[2:]


def load(path, default):
    try:
        return json.load(open(os.path.join(out, path)))
    except Exception:
        return default


ref = load("ref/results.json", {"runs": [], "matmul": []})
peer = load("peer/peer.json", {"runs": []})
for extra in ("peer_long/peer.json", "peer_long_full/peer.json"):
    peer["runs"] = peer.get("runs", []) + load(extra, {"runs": []}).get("runs", [])
ours = load("ours.json", [])
shape_of = {"llama-3.2-1B": "1b", "llama-3.1-8B": "8b"}
# A row's shape key: the model, and the row length where it is not the reference's 1024.
key = lambda shape, seq: shape if seq in (None, 1024) else f"{shape} T={seq}"
base, best_peer = {}, {}
rows = []
for r in ref.get("runs", []):
    s = shape_of.get(r["config"], r["config"])
    base[s] = r["padded_tok_s"]
    base[s + ":real"] = r["nonpad_tok_s"]
    rows.append((s, "reference recipe (FSDP1, recompute)", "padded", r["step_time_median_s"] * 1e3,
                 r["padded_tok_s"], r["nonpad_tok_s"], r["mfu_989"], r["peak_mem_gib"]))
peer_runs = {}
for r in peer.get("runs", []):
    s = key(shape_of.get(r["config"], r.get("shape", r["config"])), r.get("seq"))
    peer_runs[(s, r["variant"])] = r
    # "vs peer compiled": the faster of the peer on the reference's padded, masked rows and on full rows
    if r["variant"] in ("compiled", "compiled+fullrows") and r["padded_tok_s"] > best_peer.get(s, 0):
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
    r["key"] = key(r["shape"], r.get("config", {}).get("max_seq_len"))
for r in ours:
    if "error" in r:
        rows.append((r["key"], "air-train " + r["run"], r["mode"], None, None, None, None, None))
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
    rows.append((r["key"], eng, r["mode"], r["step_ms"], r["padded_tok_s"], r["real_tok_s"], r["mfu"], r["peak_gib"]))
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

def verdict(ok):
    return "**met**" if ok else "**not met**"


# Issue 31's targets, judged on this call's rows (the loss-parity target from fp8_curve.json when this call ran it).
if show_targets:
    ok_runs = [r for r in ours if "error" not in r]
    def find(shape, seq, fp8, extra=()):
        for r in ok_runs:
            o = r["run"].split(":")
            if r["shape"] == shape and r["config"].get("max_seq_len") == seq and ("fp8" in o) == fp8 \
                    and "rowwise" not in o and not any(x.startswith("adamw=") or x in ("ac", "noac", "repeatkv") for x in o) \
                    and r["mode"] == "padded" and all(e in o for e in extra):
                return r
        return None
    print("\n| target (issue 31) | this call | verdict |\n|---|---|---|")
    b8, f8 = find("8b", 1024, False), find("8b", 1024, True)
    if b8 and f8:
        x = f8["padded_tok_s"] / b8["padded_tok_s"]
        print(f"| 1. FP8 8B T=1024 >= 1.30x our bf16, >= ~17,200 tok/s | {x:.2f}x, {f8['padded_tok_s']:,.0f} tok/s "
              f"({f8['step_ms']:.1f} vs {b8['step_ms']:.1f} ms) | {verdict(x >= 1.30 and f8['padded_tok_s'] >= 17200)} |")
    f8l = find("8b", 8192, True)
    if f8l:
        print(f"| 1. FP8 8B T=8192 >= 16,000 tok/s | {f8l['padded_tok_s']:,.0f} tok/s ({f8l['step_ms']:.1f} ms) | "
              f"{verdict(f8l['padded_tok_s'] >= 16000)} |")
    curve = load("fp8_curve.json", None)
    if curve:
        print(f"| 2. FP8 vs bf16 loss, 50-step means within 1% | worst {100 * curve['worst']:.2f}% over "
              f"{curve.get('steps', '?')} steps of {curve.get('shape', '?')} | {verdict(curve['worst'] <= 0.01)} |")
    else:
        print("| 2. FP8 vs bf16 loss, 50-step means within 1% | not run in this call (docs/bench/fp8-loss-curve-*) | - |")
    b8l = find("8b", 8192, False)
    peers8l = [p for p in (peer_runs.get(("8b T=8192", v)) for v in ("compiled", "compiled+fullrows")) if p]
    if b8l and peers8l:
        # Judged against the faster peer; both printed (masked padded rows as the reference builds them, full rows).
        best = max(peers8l, key=lambda p: p["padded_tok_s"])
        x = b8l["padded_tok_s"] / best["padded_tok_s"]
        each = "; ".join(f"{b8l['padded_tok_s'] / p['padded_tok_s']:.2f}x the peer {p['variant']} ({p['step_ms']:.1f} ms)"
                         for p in peers8l)
        print(f"| 3. bf16 8B T=8192 >= 1.25x the peer at the same shape, <= 100 GiB | ours {b8l['step_ms']:.1f} ms: {each}; "
              f"{b8l['peak_gib']:.1f} GiB | {verdict(x >= 1.25 and b8l['peak_gib'] <= 100)} (vs the faster peer) |")
    b1, p1 = find("1b", 1024, False), peer_runs.get(("1b", "compiled"))
    if b1 and p1:
        x = b1["padded_tok_s"] / p1["padded_tok_s"]
        print(f"| 4. 1B >= 1.5x the peer | {x:.2f}x ({b1['step_ms']:.1f} vs {p1['step_ms']:.1f} ms) | {verdict(x >= 1.5)} |")
    if b8:
        print(f"| 5. bf16 8B T=1024 >= 70% MFU | {100 * b8['mfu']:.1f}% ({b8['step_ms']:.1f} ms) | {verdict(b8['mfu'] >= 0.70)} |")
    # The line clock of every run; the two-run difference where a run has one, also with the two processes'
    # start-up and exit differences taken out (what the difference of wall clocks adds that is not steps).
    # Traced runs are left out: the profiler's own work (writing the trace after its step) lands between step
    # lines, which is what the line clock is meant to show for an untraced run.
    gaps, outside = [], []
    for r in ok_runs:
        if "line_step_ms" in r and "trace" not in r["run"].split(":"):
            gaps.append((abs(r["line_step_ms"] / r["step_ms"] - 1), r["run"]))
        pr = r.get("outside_runs", [])
        if "outside_step_ms" in r and len(pr) == 2:
            k = pr[1]["max_steps"] - pr[0]["max_steps"]
            moved = 1e3 * (pr[1]["startup_s"] - pr[0]["startup_s"] + pr[1]["after_last_step_s"] - pr[0]["after_last_step_s"]) / k
            outside.append((r["run"], r["outside_step_ms"] / r["step_ms"] - 1, (r["outside_step_ms"] - moved) / r["step_ms"] - 1))
    if gaps:
        g = max(gaps)
        o = "; ".join(f"two runs differing in max_steps ({run}) {100 * a:+.1f}%, {100 * b:+.1f}% without their start-up/exit "
                      "difference" for run, a, b in outside)
        ok6 = g[0] <= 0.03 and all(abs(b) <= 0.03 for _, _, b in outside)
        print(f"| 6. outside clocks within 3% of air-train's (or the table says why) | line clock of {len(gaps)} runs: worst "
              f"{100 * g[0]:.1f}% ({g[1]}){'; ' + o if o else ''} | {verdict(ok6)} |")

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
    # Issue 32's speed and memory targets, judged on the plain rows (`8b:padded:lora`, `1b:padded:lora`)
    # against the peer of this call.
    plain = {r["shape"]: r for r in ours_lora if "error" not in r and r["run"] == f"{r['shape']}:padded:lora"}
    targets = [("8b", 1.3, "8B LoRA >= 1.3x the LoRA peer's tokens/s"), ("1b", 1.5, "1B LoRA >= 1.5x")]
    lines = []
    for shape, want, what in targets:
        r, p = plain.get(shape), peer_by.get(shape)
        if r and p:
            x = r["padded_tok_s"] / p["padded_tok_s"]
            lines.append(f"| {what} | {x:.2f}x ({r['step_ms']:.1f} vs {p['step_ms']:.1f} ms) | {verdict(x >= want)} |")
    if "8b" in plain:
        gib = plain["8b"]["peak_gib"]
        lines.append(f"| 8B LoRA at T=1024, micro-batch 4 <= 40 GiB | {gib:.1f} GiB | {verdict(gib <= 40)} |")
    if lines:
        print("\n| target (issue 32) | this call | verdict |\n|---|---|---|")
        print("\n".join(lines))
