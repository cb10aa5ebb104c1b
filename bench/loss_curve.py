#!/usr/bin/env python3
"""Same math, over a whole run: air-train and the reference recipe train the Llama-3.2-1B shape for 300 steps
from the same random initial weights on the same rows, and their loss curves are compared and plotted.

  python3 bench/loss_curve.py --bin BUILD/bin --data bench-data --out OUT [--steps 300] [--shape 1b]

1. transformers builds the model (seeded random weights, bf16) and saves it as safetensors; air-train loads it.
2. air-train trains (padded rows, 4 x 1024 x accumulation 2, AdamW lr 2e-5, wd 0.01, clip 1.0, bf16 master,
   the FSDP engine) on the realistic data (bench-data/alpaca-brown.json) and writes every micro-batch it
   trained on (AIR_TRAIN_DUMP_BATCHES, trainer/diagnostics.h).
3. The reference recipe (the vendor page's train.py: transformers LlamaForCausalLM in bf16, gradient
   checkpointing, FSDP1 FULL_SHARD with LlamaDecoderLayer wrapping and bf16 mixed precision,
   torch.optim.AdamW, clip_grad_norm_(1.0), accumulation 2) trains on exactly those micro-batches, in
   a torch.distributed.run child. One change, the issue's: padding is masked in the loss in both (labels -100),
   and the loss is normalised as air-train's (sum over the step's target tokens / their count).
4. Writes OUT/loss_curve.json and OUT/loss_curve.png, and prints the comparison.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_metrics  # noqa: E402


def read_batches(path):
    """The micro-batches of an AIR_TRAIN_DUMP_BATCHES file: [(step, ids, targets)], ids and targets as B lists of T ints."""
    import array
    raw = array.array("q")
    with open(path, "rb") as f:
        raw.frombytes(f.read())
    if sys.byteorder != "little":
        raw.byteswap()
    out, i = [], 0
    while i < len(raw):
        step, b, t = raw[i], raw[i + 1], raw[i + 2]
        i += 3
        ids = [raw[i + r * t:i + (r + 1) * t].tolist() for r in range(b)]
        i += b * t
        tg = [raw[i + r * t:i + (r + 1) * t].tolist() for r in range(b)]
        i += b * t
        out.append((step, ids, tg))
    return out


def make_model(shape, data, work):
    sys.path.insert(0, HERE)
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from trainer_bench import model_dir
    d = model_dir(shape, data, work)
    cfg = LlamaConfig.from_pretrained(d)
    torch.manual_seed(1234)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(d, safe_serialization=True)
    del model
    torch.cuda.empty_cache()
    return d


def reference(args):
    """The reference recipe on the dumped micro-batches (run under torch.distributed.run)."""
    import functools
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
    from transformers import LlamaForCausalLM
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    dist.init_process_group("nccl")
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    model = LlamaForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16)
    model.config.use_cache = False
    model.gradient_checkpointing_enable()
    model = FSDP(model, auto_wrap_policy=functools.partial(transformer_auto_wrap_policy,
                                                           transformer_layer_cls={LlamaDecoderLayer}),
                 sharding_strategy=ShardingStrategy.FULL_SHARD,
                 mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16,
                                                buffer_dtype=torch.bfloat16),
                 device_id=local, use_orig_params=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    batches = read_batches(args.batches)
    steps = sorted({b[0] for b in batches})
    losses, norms = [], []
    t0 = time.time()
    for step in steps:
        micro = [b for b in batches if b[0] == step]
        count = sum(1 for _, _, tg in micro for row in tg for y in row if y != -100)
        total = torch.zeros((), device="cuda")
        for _, ids, tg in micro:
            x = torch.tensor(ids, dtype=torch.long, device="cuda")
            y = torch.tensor(tg, dtype=torch.long, device="cuda")
            logits = model(input_ids=x).logits
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1), ignore_index=-100,
                                   reduction="sum") / count
            loss.backward()
            total += loss.detach()
        norm = model.clip_grad_norm_(1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(total))
        norms.append(float(norm))
        if step % 50 == 0 or step == 1:
            print(f"reference step {step}: loss {losses[-1]:.4f}, grad norm {norms[-1]:.3f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
    with open(args.json, "w") as f:
        json.dump({"loss": losses, "grad_norm": norms}, f)
    dist.destroy_process_group()


def smooth(xs, w):
    out = []
    for i in range(len(xs)):
        lo = max(0, i - w + 1)
        out.append(sum(xs[lo:i + 1]) / (i + 1 - lo))
    return out


def compare_curves(out, stem, cfg, ours, ours_norm, ref, ref_norm, other, names, xlabel, title, log):
    """Ours beside another trainer's curve on the same rows: a summary (printed and in <stem>.json, the other
    side's keys named `other`) and a PNG (<stem>.png) when matplotlib is there. names: (the other's legend
    label, its short name, our legend label). Shared by this script and bench/lora_curve.py."""
    n = min(len(ours), len(ref))
    a, b = ours[:n], ref[:n]
    diff = [x - y for x, y in zip(a, b)]
    w = 20
    sa, sb = smooth(a, w), smooth(b, w)
    rel = [abs(x - y) / y for x, y in zip(sa, sb)]
    # The rows' own step-to-step spread: how far one step's loss sits from the smoothed curve.
    spread = sorted(abs(x - y) for x, y in zip(b, sb))[n // 2]
    summary = {
        "steps": n, "step1_loss": [a[0], b[0]], "step1_grad_norm": [ours_norm[0], ref_norm[0]],
        "final_loss_mean_last50": [sum(a[-50:]) / len(a[-50:]), sum(b[-50:]) / len(b[-50:])],
        "mean_abs_diff": sum(abs(d) for d in diff) / n, "mean_diff": sum(diff) / n,
        "max_rel_diff_smoothed20": max(rel[w:]) if n > w else max(rel),
        f"{other}_step_spread_median": spread,
    }
    with open(os.path.join(out, f"{stem}.json"), "w") as f:
        json.dump({"summary": summary, "ours": a, other: b, "ours_grad_norm": ours_norm,
                   f"{other}_grad_norm": ref_norm, "config": cfg}, f)
    for k, v in summary.items():
        log(f"{k}: {v}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib missing: no plot (the JSON has both curves)")
        return
    long_name, short_name, our_name = names
    fig, ax = plt.subplots(figsize=(9, 4.5), dpi=110)
    xs = list(range(1, n + 1))
    ax.plot(xs, b, color="#999999", lw=0.8, alpha=0.7, label=f"{long_name}, per step")
    ax.plot(xs, a, color="#4a90d9", lw=0.8, alpha=0.7, label=f"{our_name}, per step")
    ax.plot(xs, sb, color="#333333", lw=1.8, label=f"{short_name}, mean of {w}")
    ax.plot(xs, sa, color="#0b5cad", lw=1.8, ls="--", label=f"air-train, mean of {w}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("loss (padding masked)")
    ax.set_title(f"{title}: {n} steps")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"{stem}.png"))
    log(f"plot: {stem}.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", default="all", choices=["all", "reference"])
    ap.add_argument("--bin")
    ap.add_argument("--data")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/air-loss-curve"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--shape", default="1b")
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--model")
    ap.add_argument("--batches")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.mode == "reference":
        return reference(args)

    os.makedirs(args.out, exist_ok=True)
    work = f"/tmp/air-loss-curve-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    t = time.time()
    model = make_model(args.shape, args.data, work)
    print(f"[{time.time() - t:.0f} s] model saved to {model}", flush=True)

    batches = os.path.join(work, "batches.bin")
    cfg = {"model_name": model, "dataset_name": os.path.join(args.data, "alpaca-brown.json"), "init": "pretrained",
           "max_seq_len": 1024, "per_device_batch_size": 4, "gradient_accumulation_steps": 2,
           "learning_rate": args.lr, "weight_decay": 0.01, "grad_clip": 1.0, "max_steps": args.steps,
           "save": False, "master_dtype": "bf16", "packing": False, "seed": 42, "log_every": 1,
           "metrics_file": train_metrics.fresh(os.path.join(work, "ours.metrics.jsonl"))}
    yaml_path = os.path.join(work, "ours.yaml")
    with open(yaml_path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    env = dict(os.environ, AIR_TRAIN_DUMP_BATCHES=batches)
    r = subprocess.run([os.path.join(args.bin, "air-train"), "--config", yaml_path], capture_output=True, text=True,
                       env=env)
    with open(os.path.join(args.out, "curve_ours.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0:
        print(r.stderr[-3000:] or r.stdout[-3000:])
        return 1
    lines = train_metrics.step_lines(cfg["metrics_file"])
    ours = [l["loss"] for l in lines]
    ours_norm = [l["grad_norm"] for l in lines]
    print(f"[{time.time() - t:.0f} s] air-train: {len(ours)} steps, loss {ours[0]:.4f} -> {ours[-1]:.4f}, "
          f"median step {sorted(l['step_time_s'] for l in lines)[len(lines) // 2] * 1e3:.1f} ms", flush=True)

    ref_json = os.path.join(work, "reference.json")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
                        os.path.abspath(__file__), "reference", "--model", model, "--batches", batches,
                        "--json", ref_json, "--lr", str(args.lr)], capture_output=True, text=True)
    with open(os.path.join(args.out, "curve_reference.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0:
        print(r.stderr[-3000:] or r.stdout[-3000:])
        return 1
    ref = json.load(open(ref_json))
    print(f"[{time.time() - t:.0f} s] reference: {len(ref['loss'])} steps, loss {ref['loss'][0]:.4f} -> "
          f"{ref['loss'][-1]:.4f}", flush=True)

    compare_curves(args.out, "loss_curve", cfg, ours, ours_norm, ref["loss"], ref["grad_norm"], "reference",
                   ("reference recipe (transformers + FSDP1)", "reference", "air-train (FSDP engine)"),
                   "optimizer step (4 x 1024 rows x accumulation 2, same rows in both)",
                   "Llama-3.2-1B shape, random init, Brown-corpus Alpaca records", print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
