#!/usr/bin/env python3
"""LoRA over a whole run: air-train and transformers + PEFT train LoRA adapters on the Llama-3.2-1B shape for
300 steps from the same random base and the same initial adapter, on the same rows; their loss curves are
compared and plotted (issue 32: "a 300-step 1B curve follows the peer's on the same rows").

  python3 bench/lora_curve.py --bin BUILD/bin --data bench-data --out OUT [--steps 300] [--shape 1b]

1. transformers builds the model (seeded random weights, bf16) and saves it (bench/loss_curve.py's make_model).
2. air-train trains LoRA r 16, alpha 32 on all seven block linears (padded rows, 4 x 1024 x accumulation 2,
   AdamW lr 2e-4, wd 0.01, clip 1.0, fp32 adapters, base frozen in bf16) on the realistic data
   (bench-data/alpaca-brown.json), writing every micro-batch it trained on (AIR_TRAIN_DUMP_BATCHES) and its
   initial adapter in PEFT's format (AIR_TRAIN_LORA_DUMP).
3. The peer: PeftModel.from_pretrained(base, that initial adapter, is_trainable=True), adapters in fp32,
   autocast bf16 (as bench/lora_peer.py and scripts/gpu/check_lora.py), torch.optim.AdamW with the same
   hyperparameters, clip_grad_norm_(1.0), on exactly the dumped micro-batches; the loss normalised as
   air-train's (sum over the step's target tokens / their count). lora_peer.py itself trains on random
   token batches of its own, so it cannot follow these rows: this is the comparator for the curve.
4. Writes OUT/lora_curve.json and OUT/lora_curve.png, and prints the comparison.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loss_curve import compare_curves, make_model, read_batches  # noqa: E402
import train_metrics  # noqa: E402

LORA = {"r": 16, "alpha": 32, "target_modules": "all-linear"}


def peer(model, adapter, batches, lr, log):
    import torch
    import torch.nn.functional as F
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16).cuda()
    base.config.use_cache = False
    m = PeftModel.from_pretrained(base, adapter, is_trainable=True)
    for _, p in m.named_parameters():
        if p.requires_grad:
            p.data = p.data.float()
    trainable = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8)
    m.train()
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
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = m(input_ids=x).logits
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1), ignore_index=-100,
                                   reduction="sum") / count
            loss.backward()
            total += loss.detach()
        norm = torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(total))
        norms.append(float(norm))
        if step % 50 == 0 or step == 1:
            log(f"peer step {step}: loss {losses[-1]:.4f}, grad norm {norms[-1]:.3f} ({time.time() - t0:.0f} s)")
    return losses, norms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/air-lora-curve"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--shape", default="1b")
    ap.add_argument("--lr", type=float, default=2e-4)
    args = ap.parse_args()
    log = lambda *a: print(*a, flush=True)  # noqa: E731
    os.makedirs(args.out, exist_ok=True)
    work = f"/tmp/air-lora-curve-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    t = time.time()
    model = make_model(args.shape, args.data, work)
    log(f"[{time.time() - t:.0f} s] model saved to {model}")

    batches, dump = os.path.join(work, "batches.bin"), os.path.join(work, "dump")
    cfg = {"model_name": model, "dataset_name": os.path.join(args.data, "alpaca-brown.json"), "init": "pretrained",
           "max_seq_len": 1024, "per_device_batch_size": 4, "gradient_accumulation_steps": 2,
           "learning_rate": args.lr, "weight_decay": 0.01, "grad_clip": 1.0, "max_steps": args.steps,
           "save": False, "packing": False, "seed": 42, "log_every": 1, "lora": LORA,
           "metrics_file": train_metrics.fresh(os.path.join(work, "ours.metrics.jsonl"))}
    yaml_path = os.path.join(work, "ours.yaml")
    with open(yaml_path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    env = dict(os.environ, AIR_TRAIN_DUMP_BATCHES=batches, AIR_TRAIN_LORA_DUMP=dump)
    r = subprocess.run([os.path.join(args.bin, "air-train"), "--config", yaml_path], capture_output=True, text=True,
                       env=env)
    with open(os.path.join(args.out, "lora_curve_ours.log"), "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0:
        log(r.stderr[-3000:] or r.stdout[-3000:])
        return 1
    lines = train_metrics.step_lines(cfg["metrics_file"])
    ours, ours_norm = [l["loss"] for l in lines], [l["grad_norm"] for l in lines]
    log(f"[{time.time() - t:.0f} s] air-train: {len(ours)} steps, loss {ours[0]:.4f} -> {ours[-1]:.4f}, "
        f"median step {sorted(l['step_time_s'] for l in lines)[len(lines) // 2] * 1e3:.1f} ms")

    ref, ref_norm = peer(model, os.path.join(dump, "init"), read_batches(batches), args.lr, log)
    log(f"[{time.time() - t:.0f} s] peer: {len(ref)} steps, loss {ref[0]:.4f} -> {ref[-1]:.4f}")

    compare_curves(args.out, "lora_curve", cfg, ours, ours_norm, ref, ref_norm, "peer",
                   ("transformers + PEFT", "PEFT", "air-train (lora engine)"),
                   "optimizer step (4 x 1024 rows x accumulation 2, same rows and initial adapter in both)",
                   "LoRA r 16 all-linear, Llama-3.2-1B shape, random base, Brown-corpus Alpaca records", log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
