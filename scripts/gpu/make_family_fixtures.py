#!/usr/bin/env python3
"""Tiny per-family reference checkpoints from transformers, for tests/trainer/model/families_test.cc.

Run where transformers is (the GPU machine: transformers 5.17, torch 2.11; no internet, so every config is
built here by hand at tiny sizes and the weights are drawn from a fixed seed):

    python3 make_family_fixtures.py OUT_DIR

writes OUT_DIR/<family>/{config.json, model.safetensors, reference.safetensors} and OUT_DIR/versions.json.
reference.safetensors holds the test input and transformers' fp32 CPU answers on it:
  input_ids int64 [B, T]; targets int64 [B, T] (already shifted: targets[t] is the token position t predicts,
  -100 = none); logits fp32 [B, T, V]; loss_sum fp32 [] (summed cross-entropy over the targets);
  grad.<parameter name> fp32: d loss_sum / d parameter, for every parameter under its checkpoint name.

    python3 make_family_fixtures.py --check DIR...

loads each DIR (a checkpoint air-train wrote, beside DIR/expected.safetensors with input_ids and the logits
air-train computed) in transformers and prints the largest relative logit difference; exits 1 above 1e-4.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file

B, T = 2, 12
VOCAB = 96


def common(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6,
                bos_token_id=1, eos_token_id=2, pad_token_id=0, initializer_range=0.05)
    base.update(kw)
    return base


def families():
    t = transformers
    out = {}
    out["llama"] = lambda: t.LlamaConfig(**common(rope_theta=10000.0, tie_word_embeddings=False))
    # head_dim 16 (4 heads x 16 = 64 != hidden 32) and a window of 5 < T.
    out["mistral"] = lambda: t.MistralConfig(**common(head_dim=16, sliding_window=5, rope_theta=1e6,
                                                      tie_word_embeddings=False))
    out["qwen2_tied"] = lambda: t.Qwen2Config(**common(rope_theta=1e6, tie_word_embeddings=True))
    out["qwen2"] = lambda: t.Qwen2Config(**common(rope_theta=1e6, tie_word_embeddings=False))
    out["qwen3"] = lambda: t.Qwen3Config(**common(head_dim=16, rope_theta=1e6, tie_word_embeddings=False))

    def gemma3():
        kw = common(num_hidden_layers=3, head_dim=16, query_pre_attn_scalar=24, sliding_window=5,
                    final_logit_softcapping=0.5, tie_word_embeddings=True, hidden_activation="gelu_pytorch_tanh")
        try:
            return t.Gemma3TextConfig(**kw, layer_types=["sliding_attention", "full_attention", "sliding_attention"])
        except Exception as e:  # older configs: the pattern instead of the list
            print("gemma3: layer_types refused (", e, "): sliding_window_pattern 2")
            return t.Gemma3TextConfig(**kw, sliding_window_pattern=2)
    out["gemma3"] = gemma3
    out["phi3"] = lambda: t.Phi3Config(**common(partial_rotary_factor=0.5, rope_theta=10000.0,
                                                tie_word_embeddings=False, resid_pdrop=0.0, embd_pdrop=0.0,
                                                attention_dropout=0.0))

    def phi3_longrope():
        # head_dim 8, rotary dim 8 * 0.5 = 4: 2 factors each. T = 12 <= original 64: the short factors apply.
        rs = {"rope_type": "longrope", "type": "longrope", "short_factor": [1.0, 1.5], "long_factor": [2.0, 4.0]}
        return t.Phi3Config(**common(partial_rotary_factor=0.5, rope_theta=10000.0, tie_word_embeddings=False,
                                     max_position_embeddings=256, original_max_position_embeddings=64,
                                     rope_scaling=rs, resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0))
    out["phi3_longrope"] = phi3_longrope
    return out


def make(name, build, root):
    torch.manual_seed(1234)
    cfg = build()
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    model = model.float().eval()
    # transformers initialises biases and (1 + w) norm weights to zero and norms to one: move every parameter off
    # its initial value so that biases, norm weights and the (1 + w) form all show in the answers.
    g = torch.Generator().manual_seed(99)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(d, extra)):
            os.remove(os.path.join(d, extra))
    gi = torch.Generator().manual_seed(7)
    ids = torch.randint(3, VOCAB, (B, T), generator=gi)
    targets = torch.full((B, T), -100, dtype=torch.long)
    targets[:, :-1] = ids[:, 1:]
    targets[0, 3] = -100  # a position without a target
    model.zero_grad()
    logits = model(input_ids=ids).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), ignore_index=-100,
                                             reduction="sum")
    loss.backward()
    ref = {"input_ids": ids, "targets": targets, "logits": logits.detach().contiguous(),
           "loss_sum": loss.detach().reshape([])}
    sd_names = set(load_file(os.path.join(d, "model.safetensors")).keys())
    for n, p in model.named_parameters():
        if p.grad is None:
            continue
        key = n if n in sd_names else n
        ref["grad." + key] = p.grad.detach().float().contiguous()
    save_file(ref, os.path.join(d, "reference.safetensors"))
    print(f"{name}: loss_sum {loss.item():.6f}, {len(ref) - 4} gradients, config {json.dumps(cfg.to_diff_dict())}")


def check(dirs):
    worst = 0.0
    ok = True
    for d in dirs:
        exp = load_file(os.path.join(d, "expected.safetensors"))
        model = transformers.AutoModelForCausalLM.from_pretrained(d, attn_implementation="eager",
                                                                  dtype=torch.float32).eval()
        with torch.no_grad():
            logits = model(input_ids=exp["input_ids"]).logits.float()
        diff = ((logits - exp["logits"]).abs().max() / exp["logits"].abs().max().clamp_min(1e-12)).item()
        worst = max(worst, diff)
        good = diff <= 1e-4
        ok = ok and good
        print(f"{os.path.basename(d.rstrip('/'))}: {type(model).__name__}, max |logit diff| / max |logit| = "
              f"{diff:.2e} {'PASS' if good else 'FAIL'}")
    print(f"worst {worst:.2e}")
    return 0 if ok else 1


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:]))
    root = sys.argv[1] if len(sys.argv) > 1 else "family-fixtures"
    os.makedirs(root, exist_ok=True)
    torch.set_num_threads(4)
    failed = []
    for name, build in families().items():
        try:
            make(name, build, root)
        except Exception as e:  # report and go on: one family's API drift should not lose the others
            failed.append(name)
            print(f"{name}: FAILED: {type(e).__name__}: {e}")
    with open(os.path.join(root, "versions.json"), "w") as f:
        json.dump({"torch": torch.__version__, "transformers": transformers.__version__, "failed": failed}, f)
    print("versions", torch.__version__, transformers.__version__, "failed", failed)


if __name__ == "__main__":
    main()
