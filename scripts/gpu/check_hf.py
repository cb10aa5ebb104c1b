#!/usr/bin/env python3
"""GPU checks of air-train against Hugging Face transformers (run by scripts/gpu/check.sh on the GPU machine).

1. A random Llama-3.2-1B-shaped model (llama3 RoPE, GQA, tied embeddings) is built with transformers and
   saved with save_pretrained.
2. The same token ids go through transformers and through air-train-check (our model, our safetensors
   reader): logits, loss and gradients are compared in fp32 and in bf16.
3. air-train-check takes one AdamW step and saves a checkpoint with our writer; transformers loads it with
   from_pretrained and must give our post-step logits.
4. air-train trains the 1B shape for a few steps (the reference recipe: 4 x 1024, accumulation 2) and the
   step lines give tokens/s, MFU and peak memory.
Errors are relative to the reference's scale: max|ours - hf| / max|hf| (logits), ||ours - hf|| / ||hf|| (grads).

--family NAME (mistral, qwen2, qwen3, gemma3_text, phi3; default llama: the above) checks another family the
same way at a small random shape with the family's options on (FAMILIES below): the training engine's path
(air-train-check --engine manual; the autograd reference computes Llama's block only) in fp32 and bf16 against
transformers, every gradient of the first and last block under transformers' names (Phi-3's fused qkv_proj and
gate_up_proj), our checkpoint of the loaded weights read back by from_pretrained, then a short air-train run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import torch
from safetensors.torch import load_file, save_file

ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
SHAPE_1B = dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True)


# Small shapes of the other families, each option on: a window shorter than the check's 256 tokens, q/k norms,
# explicit head_dim, biases, Gemma's sliding/global layers and soft-capping, Phi's partial rotary and fused tensors.
FAMILY_SHAPE = dict(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                    num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096, rms_norm_eps=1e-6,
                    bos_token_id=1, eos_token_id=2, pad_token_id=0, use_cache=False)
FAMILIES = {
    "mistral": dict(head_dim=64, sliding_window=128, tie_word_embeddings=False),
    "qwen2": dict(tie_word_embeddings=False),
    "qwen3": dict(head_dim=128, tie_word_embeddings=False),
    "gemma3_text": dict(head_dim=128, sliding_window=128, query_pre_attn_scalar=96, final_logit_softcapping=30.0,
                        layer_types=["sliding_attention"] * 3 + ["full_attention"] + ["sliding_attention"] * 3
                        + ["full_attention"]),
    "phi3": dict(partial_rotary_factor=0.75, tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0,
                 attention_dropout=0.0),
}


def log(*a):
    print(*a, flush=True)


def make_config(shape):
    from transformers import LlamaConfig
    common = dict(max_position_embeddings=131072, rms_norm_eps=1e-5, hidden_act="silu", bos_token_id=128000,
                  eos_token_id=128001, attention_bias=False, mlp_bias=False, use_cache=False)
    try:
        return LlamaConfig(rope_parameters=dict(ROPE), **shape, **common)
    except Exception:
        rs = {k: v for k, v in ROPE.items() if k != "rope_theta"}
        return LlamaConfig(rope_scaling=rs, rope_theta=ROPE["rope_theta"], **shape, **common)


def rel_max(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


def rel_norm(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def hf_pass(model, ids, labels, names):
    model.zero_grad(set_to_none=True)
    out = model(input_ids=ids, labels=labels)
    out.loss.backward()
    params = dict(model.named_parameters())
    grads = {n: params[n].grad.detach().float().cpu() for n in names if n in params}
    return out.logits.detach().float().cpu(), out.loss.item(), grads


def ours_pass(args, model_dir, ids_path, out_path, dtype, extra=()):
    cmd = [os.path.join(args.bin, "air-train-check"), "--model", model_dir, "--ids", ids_path, "--out", out_path,
           "--dtype", dtype, *extra]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    log(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}(took {time.time() - t:.1f}s)")
    if r.returncode != 0:
        raise RuntimeError(f"air-train-check failed ({r.returncode})")
    return load_file(out_path)


def compare(tag, ours, hf_logits, hf_loss, hf_grads, results):
    res = {"logits_rel_max": rel_max(ours["logits"], hf_logits), "logits_rel_norm": rel_norm(ours["logits"], hf_logits),
           "loss_ours": ours["loss"].item(), "loss_hf": hf_loss,
           "loss_abs_diff": abs(ours["loss"].item() - hf_loss)}
    grads = {n: rel_norm(ours["grad." + n], g) for n, g in hf_grads.items() if "grad." + n in ours}
    res["grad_rel_norm_max"] = max(grads.values())
    res["grad_rel_norm_worst"] = max(grads, key=grads.get)
    res["grads_compared"] = len(grads)
    results[tag] = res
    log(f"[{tag}] logits max rel err {res['logits_rel_max']:.2e} (norm {res['logits_rel_norm']:.2e}) | loss ours {res['loss_ours']:.6f} hf "
        f"{hf_loss:.6f} | grads ({len(grads)} tensors) max rel err {res['grad_rel_norm_max']:.2e} "
        f"({res['grad_rel_norm_worst']})")


def ensure_tokenizer(root, model_dir):
    src = os.path.join(root, "examples", "tiny_model", "tokenizer.json")
    if not os.path.exists(src):
        raise SystemExit(f"no tokenizer at {src}")
    shutil.copy(src, os.path.join(model_dir, "tokenizer.json"))
    for f in ("tokenizer_config.json", "special_tokens_map.json"):
        p = os.path.join(root, "examples", "tiny_model", f)
        if os.path.exists(p):
            shutil.copy(p, os.path.join(model_dir, f))


def train_run(args, model_dir, work, name, extra):
    cfg = {"model_name": model_dir, "dataset_name": os.path.join(args.root, "examples", "data", "alpaca_tiny.json"),
           "max_seq_len": 1024, "per_device_batch_size": 4, "gradient_accumulation_steps": 2,
           "learning_rate": 2e-5, "max_steps": args.steps, "save": False, "init": "pretrained",
           "metrics_file": os.path.join(work, f"{name}.metrics.jsonl"), **extra}
    if os.path.exists(cfg["metrics_file"]):
        os.remove(cfg["metrics_file"])  # air-train appends
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    cmd = [os.path.join(args.bin, "air-train"), "--config", path]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    log(f"$ {' '.join(cmd)}  (took {time.time() - t:.1f}s, exit {r.returncode})")
    # The JSON step lines are in the metrics file; the log has the readable ones.
    lines = [json.loads(l) for l in open(cfg["metrics_file"])] if os.path.exists(cfg["metrics_file"]) else []
    human = [l for l in r.stdout.splitlines() if l.startswith("step ") or l.startswith("engine:")]
    log("\n".join(human[:3] + ["..."] + human[-2:]))
    if r.returncode != 0:
        log(r.stderr[-3000:])
        return {"error": r.stderr[-2000:]}
    timed = [l for l in lines if l["step"] > 3]
    med = statistics.median(l["step_time_s"] for l in timed)
    res = {"steps": len(lines), "step_time_median_s": med,
           "tokens_per_s_padded": statistics.median(l["tokens_per_s_padded"] for l in timed),
           "tokens_per_s_real": statistics.median(l["tokens_per_s_real"] for l in timed),
           "mfu": statistics.median(l["mfu"] for l in timed),
           "peak_memory_gib": max(l.get("peak_memory_gib", -1) for l in lines),
           "loss_first": lines[0]["loss"], "loss_last": lines[-1]["loss"], "command": " ".join(cmd), "config": cfg}
    log(f"[train {name}] median step {med * 1e3:.1f} ms | {res['tokens_per_s_padded']:.0f} padded tok/s | "
        f"{res['tokens_per_s_real']:.0f} real tok/s | MFU {res['mfu'] * 100:.1f}% | peak {res['peak_memory_gib']:.1f} GiB "
        f"| loss {res['loss_first']:.3f} -> {res['loss_last']:.3f}")
    return res


def check_family(args, family, work, results):
    """The other families (module docstring): the training engine's path against transformers."""
    from transformers import AutoConfig, AutoModelForCausalLM
    model_dir = os.path.join(work, family + "-random")
    torch.manual_seed(0)
    cfg = AutoConfig.for_model(family, **FAMILY_SHAPE, **FAMILIES[family])
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(model_dir)
    ensure_tokenizer(args.root, model_dir)
    results["family"] = {"model_type": family, "config": {k: v for k, v in cfg.to_dict().items()
                                                          if k in FAMILY_SHAPE or k in FAMILIES[family]}}
    log(f"[model] {family}: {sum(p.numel() for p in model.parameters())} parameters in {model_dir}")
    g = torch.Generator().manual_seed(1)
    B, T = 2, 256
    ids = torch.randint(3, FAMILY_SHAPE["vocab_size"], (B, T), generator=g)
    ids[:, 0] = FAMILY_SHAPE["bos_token_id"]
    labels = ids.clone()
    labels[:, :40] = -100
    labels[1, 200:] = -100
    ids_path = os.path.join(work, "ids.safetensors")
    save_file({"input_ids": ids, "labels": labels}, ids_path)
    last = FAMILY_SHAPE["num_hidden_layers"] - 1
    names = [n for n, _ in model.named_parameters() if not n.startswith("model.layers.")
             or n.startswith("model.layers.0.") or n.startswith(f"model.layers.{last}.")]
    model.train()
    hf32 = hf_pass(model, ids.cuda(), labels.cuda(), names)
    saved = os.path.join(work, "ours-ckpt")
    ours32 = ours_pass(args, model_dir, ids_path, os.path.join(work, "ours32m.safetensors"), "fp32",
                       ["--engine", "manual", "--save", saved])
    compare("fp32_engine", ours32, *hf32, results)
    missing = [n for n in hf32[2] if "grad." + n not in ours32]
    results["fp32_engine"]["grads_missing"] = missing
    del model
    torch.cuda.empty_cache()
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).cuda()
    model.train()
    hfbf = hf_pass(model, ids.cuda(), labels.cuda(), names)
    oursbf = ours_pass(args, model_dir, ids_path, os.path.join(work, "oursbfm.safetensors"), "bf16", ["--engine", "manual"])
    compare("bf16_engine", oursbf, *hfbf, results)
    e = results["bf16_engine"]
    e["hf_bf16_vs_fp32_logits_rel_norm"] = rel_norm(hfbf[0], hf32[0])
    e["engine_bf16_vs_fp32_logits_rel_norm"] = rel_norm(oursbf["logits"], hf32[0])
    e["hf_bf16_vs_fp32_grad_rel_norm_max"] = max(rel_norm(hfbf[2][n], hf32[2][n]) for n in hfbf[2])
    e["engine_bf16_vs_fp32_grad_rel_norm_max"] = max(rel_norm(oursbf["grad." + n], hf32[2][n]) for n in hfbf[2])
    log("[bf16 vs fp32] " + json.dumps({k: v for k, v in e.items() if "_vs_fp32_" in k}))
    del model, hfbf
    torch.cuda.empty_cache()
    back = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32).cuda()
    with torch.no_grad():
        logits_back = back(input_ids=ids.cuda()).logits.float().cpu()
    results["checkpoint"] = {"files": sorted(os.listdir(saved)), "logits_rel_max_vs_ours": rel_max(logits_back, ours32["logits"])}
    log(f"[checkpoint] {results['checkpoint']}")
    del back
    torch.cuda.empty_cache()
    f = results["fp32_engine"]
    return (f["logits_rel_max"] < 1e-4 and f["grad_rel_norm_max"] < 1e-3 and not missing
            and e["engine_bf16_vs_fp32_logits_rel_norm"] < 1.5 * e["hf_bf16_vs_fp32_logits_rel_norm"]
            and e["engine_bf16_vs_fp32_grad_rel_norm_max"] < 1.5 * e["hf_bf16_vs_fp32_grad_rel_norm_max"]
            and results["checkpoint"]["logits_rel_max_vs_ours"] < 1e-4), model_dir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=13)
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--family", default="llama", choices=["llama"] + sorted(FAMILIES))
    args = ap.parse_args()
    import transformers
    from transformers import AutoModelForCausalLM
    work = "/tmp/air-gpu-work"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = {"env": {"torch": torch.__version__, "transformers": transformers.__version__,
                       "gpu": torch.cuda.get_device_name(0)}}
    log("[env]", json.dumps(results["env"]))

    if args.family != "llama":
        ok, model_dir = check_family(args, args.family, work, results)
        results["pass"] = ok
        log(f"[checks] {'PASS' if ok else 'FAIL'}")
        json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
        if not args.skip_train:
            results["train_packed"] = train_run(args, model_dir, work, "packed", {"packing": True})
            json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
        return 0 if ok else 1

    model_dir = os.path.join(work, "llama-1b-random")
    torch.manual_seed(0)
    cfg = make_config(SHAPE_1B)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(model_dir)
    ensure_tokenizer(args.root, model_dir)
    log(f"[model] saved {sum(p.numel() for p in model.parameters())} parameters to {model_dir}: {os.listdir(model_dir)}")

    g = torch.Generator().manual_seed(1)
    B, T = 2, 256
    ids = torch.randint(0, 128000, (B, T), generator=g)
    ids[:, 0] = 128000
    labels = ids.clone()
    labels[:, :40] = -100      # prompt
    labels[1, 200:] = -100     # padding
    ids_path = os.path.join(work, "ids.safetensors")
    save_file({"input_ids": ids, "labels": labels}, ids_path)
    names = [n for n, _ in model.named_parameters()
             if not n.startswith("model.layers.") or n.startswith("model.layers.0.") or n.startswith("model.layers.15.")]

    model.train()
    hf32 = hf_pass(model, ids.cuda(), labels.cuda(), names)
    ours32 = ours_pass(args, model_dir, ids_path, os.path.join(work, "ours32.safetensors"), "fp32",
                       ["--step-lr", "1e-4", "--save", os.path.join(work, "ours-ckpt")])
    compare("fp32", ours32, *hf32, results)
    # The training engine's own path (hand-written backward on flat buffers, trainer/model/block.h).
    ours32m = ours_pass(args, model_dir, ids_path, os.path.join(work, "ours32m.safetensors"), "fp32",
                        ["--engine", "manual"])
    compare("fp32_engine", ours32m, *hf32, results)
    del model
    torch.cuda.empty_cache()

    # transformers in bf16 as users load it (from_pretrained(dtype=bf16) keeps the RoPE inv_freq buffer in
    # fp32; model.to(bf16) would round it and add its own error).
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).cuda()
    model.train()
    hfbf = hf_pass(model, ids.cuda(), labels.cuda(), names)
    oursbf = ours_pass(args, model_dir, ids_path, os.path.join(work, "oursbf.safetensors"), "bf16", ["--recompute"])
    compare("bf16", oursbf, *hfbf, results)
    oursbfm = ours_pass(args, model_dir, ids_path, os.path.join(work, "oursbfm.safetensors"), "bf16",
                        ["--engine", "manual"])
    compare("bf16_engine", oursbfm, *hfbf, results)
    # The bf16 noise floor: each bf16 run against the fp32 result (transformers' fp32 = ours within 1e-5).
    b = results["bf16"]
    b["hf_bf16_vs_fp32_logits_rel_max"] = rel_max(hfbf[0], hf32[0])
    b["ours_bf16_vs_fp32_logits_rel_max"] = rel_max(oursbf["logits"], hf32[0])
    b["hf_bf16_vs_fp32_logits_rel_norm"] = rel_norm(hfbf[0], hf32[0])
    b["ours_bf16_vs_fp32_logits_rel_norm"] = rel_norm(oursbf["logits"], hf32[0])
    b["hf_bf16_vs_fp32_grad_rel_norm_max"] = max(rel_norm(hfbf[2][n], hf32[2][n]) for n in hfbf[2])
    b["ours_bf16_vs_fp32_grad_rel_norm_max"] = max(rel_norm(oursbf["grad." + n], hf32[2][n]) for n in hfbf[2])
    e = results["bf16_engine"]
    e["engine_bf16_vs_fp32_logits_rel_norm"] = rel_norm(oursbfm["logits"], hf32[0])
    e["engine_bf16_vs_fp32_grad_rel_norm_max"] = max(rel_norm(oursbfm["grad." + n], hf32[2][n]) for n in hfbf[2])
    log("[bf16 vs fp32] " + json.dumps({k: v for k, v in b.items() if "_vs_fp32_" in k}) + " engine: " +
        json.dumps({k: v for k, v in e.items() if "_vs_fp32_" in k}))
    del model, hfbf
    torch.cuda.empty_cache()

    saved = os.path.join(work, "ours-ckpt")
    back = AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32).cuda()
    with torch.no_grad():
        logits_back = back(input_ids=ids.cuda()).logits.float().cpu()
    results["checkpoint"] = {"files": sorted(os.listdir(saved)),
                             "logits_rel_max_vs_ours_after_step": rel_max(logits_back, ours32["logits_after"]),
                             "weights_changed_by_step": rel_max(ours32["logits_after"], ours32["logits"])}
    log(f"[checkpoint] {results['checkpoint']}")
    del back
    torch.cuda.empty_cache()

    ok = (results["fp32"]["logits_rel_max"] < 1e-4 and results["bf16"]["logits_rel_max"] < 2e-2
          and results["fp32_engine"]["logits_rel_max"] < 1e-4
          # The engine's bf16 (fused kernels, residuals in GEMM epilogues) rounds at other points than
          # transformers' eager bf16: it must be as close to the fp32 truth as transformers' bf16 is.
          and results["bf16_engine"]["engine_bf16_vs_fp32_logits_rel_norm"] < 1.5 * b["hf_bf16_vs_fp32_logits_rel_norm"]
          and results["bf16_engine"]["engine_bf16_vs_fp32_grad_rel_norm_max"] < 1.5 * b["hf_bf16_vs_fp32_grad_rel_norm_max"]
          and results["checkpoint"]["logits_rel_max_vs_ours_after_step"] < 1e-4)
    results["pass"] = ok
    log(f"[checks] {'PASS' if ok else 'FAIL'}")
    json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)

    if not args.skip_train:
        results["train_padded"] = train_run(args, model_dir, work, "padded", {})
        json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
        results["train_packed"] = train_run(args, model_dir, work, "packed", {"packing": True})
        json.dump(results, open(os.path.join(args.out, "results.json"), "w"), indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
