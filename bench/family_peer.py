#!/usr/bin/env python3
"""The PyTorch peer for any model family at bench/trainer_bench.py's shapes, on one GPU: the recipe of
../shared/bench/tuned_peer.py (`compiled`: transformers' AutoModelForCausalLM in bf16, bf16 AdamW states, no FSDP
wrapper, no recomputation, torch.compile per decoder layer, fused AdamW, clip 1.0) and of lora_peer.py (`lora`:
PEFT LoRA r 16, alpha 32 on every block linear, base frozen in bf16, adapters fp32 under bf16 autocast, compile per
layer), built from the very config.json air-train reads (trainer_bench.model_dir), random weights.
Batches as the reference recipe's (seed_fsdp_baseline.make_batches): micro-batch 4 x 1024, accumulation 2, rows of
100-400 tokens padded with the attention mask, labels = ids; token ids drawn below the model's vocabulary.

  OUT=dir python3 -m torch.distributed.run --standalone --nproc_per_node=1 family_peer.py --data DIR \\
      compiled:qwen3-8b lora:qwen3-8b compiled:mistral-7b compiled:gemma3-4b

writes OUT/family_peer.json (one record per run: step_ms median, padded tok/s, peak GiB, losses).
"""
import argparse
import datetime
import gc
import json
import os
import statistics
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainer_bench  # noqa: E402  (the shapes' config.json, written the same way for air-train)

MB, SEQ, GA, WARMUP, TIMED, LR = 4, 1024, 2, 3, 10, 2e-5
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def batches(n_micro, cfg, seed=42):
    """The reference recipe's padded micro-batches, with ids below this vocabulary and its own BOS / pad ids."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    top = min(cfg.vocab_size, 128000)
    bos = cfg.bos_token_id if cfg.bos_token_id is not None else 0
    pad = getattr(cfg, "pad_token_id", None)
    pad = pad if pad is not None else (cfg.eos_token_id if isinstance(cfg.eos_token_id, int) else 0)
    out = []
    for _ in range(n_micro):
        lens = torch.randint(100, 401, (MB,), generator=g)
        ids = torch.full((MB, SEQ), pad, dtype=torch.long)
        mask = torch.zeros((MB, SEQ), dtype=torch.long)
        for i, n in enumerate(lens.tolist()):
            ids[i, 0] = bos
            ids[i, 1:n] = torch.randint(0, top, (n - 1,), generator=g)
            mask[i, :n] = 1
        out.append(dict(input_ids=ids.cuda(), attention_mask=mask.cuda(), labels=ids.clone().cuda()))
    return out


def run(variant, shape, data, work):
    from transformers import AutoConfig, AutoModelForCausalLM
    cfg = AutoConfig.from_pretrained(trainer_bench.model_dir(shape, data, work))
    cfg.use_cache = False
    torch.manual_seed(0)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    model.config.use_cache = False
    if variant == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=LORA_TARGETS,
                                                 task_type="CAUSAL_LM"))
        for _, p in model.named_parameters():
            if p.requires_grad:
                p.data = p.data.float()
        layers = model.base_model.model.model.layers
    elif variant == "compiled":
        layers = model.model.layers
    else:
        raise ValueError(f"unknown variant {variant!r} (compiled or lora)")
    for layer in layers:
        layer.compile()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, fused=True)
    build_s = time.perf_counter() - t0
    model.train()
    bs = batches((WARMUP + TIMED) * GA, cfg)
    times, losses = [], []
    for step in range(WARMUP + TIMED):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ls = torch.zeros((), device="cuda")
        for mb in bs[step * GA:(step + 1) * GA]:
            if variant == "lora":
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    out = model(**mb)
            else:
                out = model(**mb)
            (out.loss / GA).backward()
            ls += out.loss.detach().float()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        losses.append((ls / GA).item())
        log(f"[{variant} {shape}] step {step:2d} {dt * 1e3:8.1f} ms loss {losses[-1]:.4f}")
        if step >= WARMUP:
            times.append(dt)
    med = statistics.median(times)
    rec = dict(variant=variant, shape=shape, model_type=cfg.model_type, step_ms=med * 1e3,
               padded_tok_s=GA * MB * SEQ / med, peak_gib=torch.cuda.max_memory_allocated() / 2**30,
               params=sum(p.numel() for p in model.parameters()), trainable=sum(p.numel() for p in params),
               build_s=build_s, loss_first=losses[0], loss_final=losses[-1])
    log(f"[{variant} {shape}] median {rec['step_ms']:.1f} ms | {rec['padded_tok_s']:.0f} padded tok/s | peak "
        f"{rec['peak_gib']:.1f} GiB | loss {losses[0]:.3f} -> {losses[-1]:.3f} | build+compile {build_s:.0f} s")
    del model, opt, bs, out
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="scripts/gpu/bench_data.sh's folder (the tokenizer files)")
    ap.add_argument("runs", nargs="+", help="VARIANT:SHAPE, VARIANT compiled or lora")
    args = ap.parse_args()
    out = os.environ.get("OUT") or "/tmp/out"
    os.makedirs(out, exist_ok=True)
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group(backend="nccl", timeout=datetime.timedelta(minutes=10))
    res = dict(torch=torch.__version__, runs=[], failures=[])
    with tempfile.TemporaryDirectory() as work:
        for spec in args.runs:
            variant, shape = spec.split(":")
            try:
                res["runs"].append(run(variant, shape, args.data, work))
            except Exception as e:  # report and go on with the next
                log(f"[{spec}] FAILED: {e!r}\n{traceback.format_exc()[-3000:]}")
                res["failures"].append(dict(run=spec, error=repr(e)))
            gc.collect()
            torch.cuda.empty_cache()
            with open(os.path.join(out, "family_peer.json"), "w") as f:
                json.dump(res, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
