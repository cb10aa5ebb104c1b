#!/usr/bin/env python3
"""Same math in FP8: air-train trains the same shape twice from the same random weights on the same rows
(same seed, same data order), once with bf16 block GEMMs and once with `precision: fp8`, and compares the
loss and gradient-norm curves (means over windows of --window steps; relative difference of the losses).

  python3 bench/fp8_curve.py --bin BUILD/bin --data bench-data --out OUT [--shape 1b] [--steps 300] [--window 50]

Writes OUT/fp8_curve.json and, where matplotlib is installed, OUT/fp8_curve.png.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trainer_bench  # noqa: E402


def windows(values, w):
    return [sum(values[i:i + w]) / len(values[i:i + w]) for i in range(0, len(values), w)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", default="1b")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--scaling", default="tensorwise", choices=["tensorwise", "rowwise"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    bench = argparse.Namespace(bin=args.bin, data=args.data, steps=args.steps, warmup=3, lr=args.lr,
                               json=os.path.join(args.out, "fp8_curve_runs.json"))
    work = f"/tmp/air-fp8-curve-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    fp8 = "fp8" + (":rowwise" if args.scaling == "rowwise" else "")
    runs = {}
    for name, spec in (("bf16", f"{args.shape}:padded:curve"), ("fp8", f"{args.shape}:padded:curve:{fp8}")):
        res = trainer_bench.run(bench, spec, work)
        if "error" in res:
            print(f"{name}: FAILED\n{res['error']}")
            return 1
        runs[name] = res
        print(f"{name}: {res['step_ms']:.1f} ms/step, loss {res['loss_first']:.4f} -> {res['loss_last']:.4f}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    w = args.window
    lb, lf = windows(runs["bf16"]["losses"], w), windows(runs["fp8"]["losses"], w)
    gb, gf = windows(runs["bf16"]["grad_norms"], w), windows(runs["fp8"]["grad_norms"], w)
    rel = [abs(f - b) / b for b, f in zip(lb, lf)]
    print(f"| steps | bf16 loss | fp8 loss | relative | bf16 grad norm | fp8 grad norm |")
    print("|---|---|---|---|---|---|")
    for i, (b, f, r, x, y) in enumerate(zip(lb, lf, rel, gb, gf)):
        print(f"| {i * w + 1}-{min((i + 1) * w, args.steps)} | {b:.4f} | {f:.4f} | {100 * r:.2f}% | {x:.3f} | {y:.3f} |")
    worst = max(rel)
    print(f"worst {w}-step mean relative loss difference: {100 * worst:.2f}% (target <= 1%): "
          f"{'PASS' if worst <= 0.01 else 'FAIL'}")
    summary = {"shape": args.shape, "steps": args.steps, "window": w, "scaling": args.scaling,
               "bf16": {k: runs["bf16"][k] for k in ("losses", "grad_norms", "step_ms")},
               "fp8": {k: runs["fp8"][k] for k in ("losses", "grad_norms", "step_ms")},
               "window_rel_loss_diff": rel, "worst": worst}
    with open(os.path.join(args.out, "fp8_curve.json"), "w") as f:
        json.dump(summary, f)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG")
        return 0 if worst <= 0.01 else 1
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    for name in ("bf16", "fp8"):
        ax[0].plot(runs[name]["losses"], label=name, lw=0.8)
        ax[1].plot(runs[name]["grad_norms"], label=name, lw=0.8)
    ax[0].set_title(f"{args.shape} loss, bf16 vs fp8 {args.scaling}, same rows")
    ax[1].set_title("gradient norm (before clipping)")
    for a in ax:
        a.set_xlabel("step")
        a.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "fp8_curve.png"), dpi=110)
    return 0 if worst <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
