#!/usr/bin/env python3
"""The hub repos scripts/gpu/e2e.sh serves: a Llama model (the real config of Llama-3.1-8B or -3.2-1B, or
examples/tiny_model's, random weights written as sharded safetensors + index like the hub's) and an
Alpaca-format dataset as Parquet written by pyarrow (a writer independent of our reader).

  e2e_fixture.py model --shape 8b|1b|tiny --out DIR --tokenizer DIR [--shard-gb 5] [--device cuda]
  e2e_fixture.py dataset --json ALPACA.json --out FILE.parquet [--records N]

Weights: torch (on --device; cuda makes 16 GB in seconds) + safetensors when importable, else a pure
Python writer (tiny shapes only: the CPU smoke on machines without torch). Exit 3 = a needed module is
missing (the caller may fall back), 2 = bad arguments.
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys
import time

ROPE = {"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}
SHAPES = {  # the published configs of meta-llama/Llama-3.1-8B and meta-llama/Llama-3.2-1B
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
               rope_factor=8.0),
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True,
               rope_factor=32.0),
}
TINY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "tiny_model")


def config_for(shape):
    if shape == "tiny":
        with open(os.path.join(TINY, "config.json")) as f:
            return json.load(f)
    s = dict(SHAPES[shape])
    rope = dict(ROPE, factor=s.pop("rope_factor"))
    return dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
                max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=rope,
                initializer_range=0.02, attention_bias=False, mlp_bias=False, bos_token_id=128000,
                eos_token_id=128001, torch_dtype="bfloat16", use_cache=True, **s)


def tensor_specs(cfg):
    """(name, shape) of every weight, in the hub checkpoint's order and names."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim") or h // nh
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,)), (p + "self_attn.q_proj.weight", (nh * hd, h)),
                (p + "self_attn.k_proj.weight", (nkv * hd, h)), (p + "self_attn.v_proj.weight", (nkv * hd, h)),
                (p + "self_attn.o_proj.weight", (h, nh * hd)), (p + "post_attention_layernorm.weight", (h,)),
                (p + "mlp.gate_proj.weight", (inter, h)), (p + "mlp.up_proj.weight", (inter, h)),
                (p + "mlp.down_proj.weight", (h, inter))]
    out.append(("model.norm.weight", (h,)))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", (v, h)))
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def plan_shards(specs, shard_bytes):
    shards, cur, size = [], [], 0
    for name, shape in specs:
        b = numel(shape) * 2
        if cur and size + b > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape))
        size += b
    if cur:
        shards.append(cur)
    return shards


def torch_writer(device, std):
    import torch
    from safetensors.torch import save_file
    gen = torch.Generator(device=device).manual_seed(1234)

    def make(name, shape):
        if name.endswith("norm.weight"):
            return torch.ones(shape, dtype=torch.bfloat16)
        t = torch.empty(shape, dtype=torch.bfloat16, device=device).normal_(0.0, std, generator=gen)
        return t.cpu()

    def write(path, shard):
        save_file({n: make(n, s) for n, s in shard}, path, metadata={"format": "pt"})
    return write


def python_writer(std):
    """safetensors by hand (8-byte header length, JSON header, raw little-endian bf16), for tiny shapes."""
    rng = random.Random(1234)

    def bf16(x):
        return struct.pack("<f", x)[2:4]

    def write(path, shard):
        header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
        for name, shape in shard:
            n = numel(shape)
            if n > 50_000_000:
                sys.exit("e2e_fixture.py: without torch only small shapes are written (--shape tiny)")
            one = bf16(1.0)
            data = one * n if name.endswith("norm.weight") else b"".join(bf16(rng.gauss(0.0, std)) for _ in range(n))
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + len(data)]}
            blobs.append(data)
            off += len(data)
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h)
            for b in blobs:
                f.write(b)
    return write


def cmd_model(a):
    cfg = config_for(a.shape)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tok_dir = a.tokenizer or TINY
    copied = [n for n in sorted(os.listdir(tok_dir)) if n.startswith("tokenizer") and n.endswith(".json")]
    if "tokenizer.json" not in copied:
        sys.exit(f"e2e_fixture.py: no tokenizer.json in {tok_dir}")
    for n in copied:
        shutil.copy(os.path.join(tok_dir, n), os.path.join(a.out, n))
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write(f"# random weights in the {a.shape} shape (air's GPU end-to-end fixture)\n")
    try:
        write = torch_writer(a.device, cfg.get("initializer_range", 0.02))
    except ImportError:
        write = python_writer(cfg.get("initializer_range", 0.02))
    specs = tensor_specs(cfg)
    shards = plan_shards(specs, int(a.shard_gb * 1e9))
    t0, total, weight_map = time.time(), 0, {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write(os.path.join(a.out, name), shard)
        for n, s in shard:
            weight_map[n] = name
            total += numel(s) * 2
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
    dt = time.time() - t0
    print(json.dumps({"shards": len(shards), "bytes": total, "params": total // 2, "seconds": round(dt, 2),
                      "tokenizer": copied}))


def cmd_dataset(a):
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        print("e2e_fixture.py: pyarrow is not installed", file=sys.stderr)
        return 3
    with open(a.json) as f:
        recs = json.load(f)
    if a.records:
        recs = recs[:a.records]
    cols = {k: [str(r.get(k, "")) for r in recs] for k in ("instruction", "input", "output")}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    pq.write_table(pa.table(cols), a.out, compression="snappy")
    print(json.dumps({"records": len(recs), "bytes": os.path.getsize(a.out)}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("--shape", choices=["8b", "1b", "tiny"], required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--tokenizer", help="folder with tokenizer.json (default: examples/tiny_model)")
    m.add_argument("--shard-gb", type=float, default=5.0)
    m.add_argument("--device", default="cuda")
    d = sub.add_parser("dataset")
    d.add_argument("--json", required=True)
    d.add_argument("--out", required=True)
    d.add_argument("--records", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "model":
        cmd_model(a)
        return 0
    return cmd_dataset(a)


if __name__ == "__main__":
    sys.exit(main())
