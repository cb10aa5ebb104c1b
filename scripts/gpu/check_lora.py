#!/usr/bin/env python3
"""LoRA against PEFT on the GPU machine (docs/gpu-checks.md): run by bench/trainer_vs_reference.sh lora.

1. A random Llama (llama3 RoPE, GQA, untied head) is built with transformers and saved (bf16).
2. air-train trains LoRA r 16, alpha 32, all-linear on it for a few steps with lora.merge (the merged model in
   out/, PEFT's adapter in out/adapter), dumping its initial adapter, the first step's adapter gradients
   (AIR_TRAIN_LORA_DUMP) and its batches (AIR_TRAIN_DUMP_BATCHES).
3. Same math: PEFT on the same base with our initial adapter (PeftModel.from_pretrained(..., is_trainable),
   adapters fp32, autocast bf16 as the peer) on the same first-step batches gives the step-1 loss and the
   adapter gradients; they must equal ours within bf16 tolerance.
4. Interop: PeftModel.from_pretrained(base, out/adapter) and transformers' from_pretrained(out) (the merged
   checkpoint) give the same logits, and equal ours (air-train-check on the merged checkpoint).
Errors: max|a - b| / max|b| (logits), ||a - b|| / ||b|| (gradients). Prints PASS/FAIL lines and writes JSON.
--family phi3: the same with a random Phi-3 (fused qkv_proj and gate_up_proj, partial rotary): PEFT adapts the fused
modules, so the adapter, its gradients and the merged weights are compared under qkv_proj / gate_up_proj.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file

TOL_LOGITS = 2e-3  # fp32 logits: merged vs unmerged, our kernels vs transformers'
TOL_MERGE = 1e-5   # fp32 merged weights: ours vs PEFT's merge_and_unload()
TOL_GRAD = 5e-2    # bf16 activations, fp32 adapters
TOL_LOSS = 5e-3


def log(*a):
    print(*a, flush=True)


def make_model(path, root, family="llama"):
    from transformers import AutoModelForCausalLM, LlamaConfig, Phi3Config
    common = dict(vocab_size=1024, hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
                  num_key_value_heads=2, head_dim=64, tie_word_embeddings=False, max_position_embeddings=4096,
                  rms_norm_eps=1e-5, hidden_act="silu", bos_token_id=1021, eos_token_id=1022, use_cache=False)
    rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 256}
    if family == "phi3":
        common.pop("head_dim")  # Phi-3: hidden / heads
        cfg = Phi3Config(partial_rotary_factor=0.5, pad_token_id=0, resid_pdrop=0.0, embd_pdrop=0.0,
                         attention_dropout=0.0, **common)
    else:
        try:
            cfg = LlamaConfig(rope_parameters=dict(rope, rope_theta=500000.0), **common)
        except Exception:
            cfg = LlamaConfig(rope_scaling=rope, rope_theta=500000.0, **common)
    torch.manual_seed(0)
    with torch.device("cuda"):
        m = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    m.save_pretrained(path)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(root, "examples", "tiny_model", f), os.path.join(path, f))


def read_batches(path):
    raw = np.fromfile(path, dtype="<i8")
    out, i = [], 0
    while i < raw.size:
        step, B, T = (int(x) for x in raw[i:i + 3])
        i += 3
        ids = torch.from_numpy(raw[i:i + B * T].reshape(B, T).copy()); i += B * T
        tgt = torch.from_numpy(raw[i:i + B * T].reshape(B, T).copy()); i += B * T
        out.append((step, ids, tgt))
    return out


def rel_max(a, b):
    return ((a.float() - b.float()).abs().max() / b.float().abs().max()).item()


def rel_norm(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--family", default="llama", choices=["llama", "phi3"])
    args = ap.parse_args()
    import peft
    import transformers
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    work = "/tmp/air-lora-check"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    res = {"env": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}}
    log("[env]", json.dumps(res["env"]))
    base = os.path.join(work, "base")
    make_model(base, args.root, args.family)
    res["family"] = args.family

    out, dump, batches = os.path.join(work, "out"), os.path.join(work, "dump"), os.path.join(work, "batches.bin")
    cfg = {"model_name": base, "dataset_name": os.path.join(args.root, "examples", "data", "alpaca_tiny.json"),
           "init": "pretrained", "max_seq_len": 256, "per_device_batch_size": 4, "gradient_accumulation_steps": 2,
           "packing": False, "learning_rate": 2e-3, "max_steps": 4, "output_dir": out, "seed": 5, "save_dtype": "fp32",
           "lora": {"r": 16, "alpha": 32, "target_modules": "all-linear", "merge": True},
           "metrics_file": os.path.join(work, "metrics.jsonl")}
    path = os.path.join(work, "train.yaml")
    with open(path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    env = dict(os.environ, AIR_TRAIN_LORA_DUMP=dump, AIR_TRAIN_DUMP_BATCHES=batches)
    r = subprocess.run([os.path.join(args.bin, "air-train"), "--config", path], capture_output=True, text=True, env=env)
    log(r.stdout[-3000:])
    if r.returncode != 0:
        log(r.stderr[-3000:])
        log("FAIL lora: air-train exited", r.returncode)
        return 1
    ours_losses = [json.loads(l)["loss"] for l in open(cfg["metrics_file"])]  # the JSON step lines
    ok = True

    # 3. Step 1 with PEFT from the same base and our initial adapter, on the same rows.
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16).cuda()
    model = PeftModel.from_pretrained(model, os.path.join(dump, "init"), is_trainable=True)
    for n, p in model.named_parameters():
        if p.requires_grad:
            p.data = p.data.float()
    model.train()
    step1 = [(ids, tgt) for step, ids, tgt in read_batches(batches) if step == 1]
    total = sum(int((t != -100).sum()) for _, t in step1)
    loss_sum = 0.0
    for ids, tgt in step1:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=ids.cuda()).logits
        l = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), tgt.cuda().flatten(), ignore_index=-100,
                                              reduction="sum") / total
        l.backward()
        loss_sum += l.item()
    grads = {n.replace(".default", ""): p.grad.float().cpu() for n, p in model.named_parameters() if p.requires_grad}
    ours = load_file(os.path.join(dump, "grads.safetensors"))
    missing = sorted(set(grads) ^ set(ours))
    b_keys = [k for k in grads if "lora_B" in k]
    a_keys = [k for k in grads if "lora_A" in k]
    gB = rel_norm(torch.cat([ours[k].flatten() for k in b_keys]), torch.cat([grads[k].flatten() for k in b_keys]))
    a_max = max(ours[k].abs().max().item() for k in a_keys)
    peft_a_max = max(grads[k].abs().max().item() for k in a_keys)
    worst = max(b_keys, key=lambda k: rel_norm(ours[k], grads[k]))
    rloss = abs(ours_losses[0] - loss_sum) / abs(loss_sum)
    res["step1"] = {"loss_ours": ours_losses[0], "loss_peft": loss_sum, "loss_rel": rloss, "grad_B_rel": gB,
                    "worst_B": worst, "worst_B_rel": rel_norm(ours[worst], grads[worst]), "grad_A_max_ours": a_max,
                    "grad_A_max_peft": peft_a_max, "key_mismatch": missing, "tensors": len(ours)}
    good = not missing and rloss < TOL_LOSS and gB < TOL_GRAD and a_max == 0
    ok &= good
    log(f"{'PASS' if good else 'FAIL'} step 1 vs PEFT: loss ours {ours_losses[0]:.5f} peft {loss_sum:.5f} (rel {rloss:.1e}); "
        f"B gradients rel {gB:.2e} (worst {worst} {res['step1']['worst_B_rel']:.2e}); A gradients max ours "
        f"{a_max:.1e} peft {peft_a_max:.1e} (B = 0 at init); {len(ours)} tensors, key mismatches {missing[:4]}")
    del model
    torch.cuda.empty_cache()

    # 4. Interop, in fp32 (the merged checkpoint is saved in fp32, save_dtype): PEFT loads our adapter;
    # transformers loads the merged checkpoint; air-train-check runs our model on it; PEFT's own merge of our
    # adapter equals our merged weights.
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 1000, (2, 128), generator=g)
    labels = ids.clone()
    ids_path = os.path.join(work, "ids.safetensors")
    save_file({"input_ids": ids, "labels": labels}, ids_path)
    with torch.no_grad():
        basem = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32).cuda()
        base_logits = basem(input_ids=ids.cuda()).logits.float().cpu()
        pm = PeftModel.from_pretrained(basem, os.path.join(out, "adapter")).eval()
        peft_logits = pm(input_ids=ids.cuda()).logits.float().cpu()
        peft_merged = {k: v.float().cpu() for k, v in pm.merge_and_unload().state_dict().items()}
        del pm, basem
        mm = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32).cuda().eval()
        merged_logits = mm(input_ids=ids.cuda()).logits.float().cpu()
        del mm
    ours_merged = {}
    for f in os.listdir(out):
        if f.endswith(".safetensors"):
            ours_merged.update(load_file(os.path.join(out, f)))
    merge_err = max(rel_max(ours_merged[k], peft_merged[k]) for k in ours_merged)
    merge_keys = sorted(set(ours_merged) ^ {k for k in peft_merged if k != "lm_head.weight" or k in ours_merged})
    r2 = subprocess.run([os.path.join(args.bin, "air-train-check"), "--model", out, "--ids", ids_path, "--out",
                         os.path.join(work, "ours.safetensors"), "--dtype", "fp32"]
                        + ([] if args.family == "llama" else ["--engine", "manual"]),  # autograd: Llama's block only
                        capture_output=True, text=True)
    if r2.returncode != 0:
        log(r2.stdout[-2000:], r2.stderr[-2000:])
        log("FAIL interop: air-train-check exited", r2.returncode)
        return 1
    our_logits = load_file(os.path.join(work, "ours.safetensors"))["logits"].float()
    moved = rel_max(peft_logits, base_logits)
    e_pm = rel_max(merged_logits, peft_logits)
    e_op = rel_max(our_logits, peft_logits)
    res["interop"] = {"adapter_moved_logits_rel": moved, "merged_vs_peft": e_pm, "ours_vs_peft": e_op,
                      "merged_weights_vs_peft_merge": merge_err, "merged_key_mismatch": merge_keys,
                      "adapter_files": sorted(os.listdir(os.path.join(out, "adapter"))),
                      "merged_files": sorted(os.listdir(out))}
    good = moved > 10 * max(e_pm, e_op) and e_pm < TOL_LOGITS and e_op < TOL_LOGITS
    ok &= good
    log(f"{'PASS' if good else 'FAIL'} interop (fp32): PeftModel.from_pretrained(base, our adapter) moved the logits by "
        f"{moved:.2e} (rel max); merged checkpoint in transformers vs PEFT {e_pm:.2e}; ours (air-train-check on the "
        f"merged checkpoint) vs PEFT {e_op:.2e}")
    good = merge_err < TOL_MERGE and not merge_keys
    ok &= good
    log(f"{'PASS' if good else 'FAIL'} merge: our merged weights vs PEFT's merge_and_unload() of our adapter: max rel "
        f"{merge_err:.2e} over {len(ours_merged)} tensors; key mismatches {merge_keys[:4]}")
    with open(os.path.join(args.out, "lora_check.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
