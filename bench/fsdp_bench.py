#!/usr/bin/env python3
"""air-train's FSDP engine at one model shape, through air-torchrun, with both gradient-sync modes
(micro_batch, step), with random weights. Prints a table of
median step time, padded tokens/s, MFU, peak GPU memory (torch's caching allocator, rank 0) and peak host
RSS (the largest rank), plus the loss first -> last.

  bench/fsdp_bench.py --shape small --nproc 2 --runs fsdp,fsdp-step            # CPU, Gloo (docs/fsdp.md)
  bench/fsdp_bench.py --shape 1b --runs fsdp,fsdp-step                          # one GPU, NCCL at world 1

Shapes: tiny (examples/tiny_model), small (CPU-sized Llama), 1b (Llama-3.2-1B), 8b (Llama-3.1-8B). The
tokenizer is examples/tiny_model's (ids < 1024 of the shape's vocabulary); data examples/data/alpaca_tiny.json.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_metrics  # noqa: E402
ROOT = os.path.dirname(HERE)
ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}
SHAPES = {
    "small": dict(vocab_size=8192, hidden_size=256, intermediate_size=704, num_hidden_layers=4,
                  num_attention_heads=8, num_key_value_heads=4, tie_word_embeddings=True),
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=True),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False),
}


def model_dir(shape, work):
    src = os.path.join(ROOT, "examples", "tiny_model")
    if shape == "tiny":
        return src
    d = os.path.join(work, f"model-{shape}")
    os.makedirs(d, exist_ok=True)
    cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
               max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=ROPE,
               initializer_range=0.02, attention_bias=False, mlp_bias=False, bos_token_id=1021,
               eos_token_id=1022, torch_dtype="bfloat16", **SHAPES[shape])
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copy(os.path.join(src, "tokenizer.json"), os.path.join(d, "tokenizer.json"))
    return d


# Each run goes through this wrapper so its peak RSS is its own (RUSAGE_CHILDREN is per process tree).
WRAP = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
        "print('AIR_BENCH_MAXRSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(r.returncode)")


def run(args, name, mdir, work):
    engine, sync = {"fsdp": ("fsdp", "micro_batch"), "fsdp-step": ("fsdp", "step")}[name]
    cfg = {"model_name": mdir, "dataset_name": os.path.join(ROOT, "examples", "data", "alpaca_tiny.json"),
           "init": "random", "max_seq_len": args.seq, "per_device_batch_size": args.batch,
           "gradient_accumulation_steps": args.accum, "learning_rate": args.lr, "max_steps": args.steps,
           "save": False, "engine": engine, "grad_sync": sync, "master_dtype": args.master, "packing": args.packing,
           "metrics_file": train_metrics.fresh(os.path.join(work, f"{name}.metrics.jsonl"))}
    path = os.path.join(work, f"{name}.yaml")
    with open(path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    train = [os.path.join(args.bin, "air-train"), "--config", path]
    train = [os.path.join(args.bin, "air-torchrun"), "--standalone", "--nproc_per_node", str(args.nproc)] + train
    env = dict(os.environ)
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    t = time.time()
    r = subprocess.run([sys.executable, "-c", WRAP] + train, capture_output=True, text=True, env=env)
    wall = time.time() - t
    lines = train_metrics.step_lines(cfg["metrics_file"])
    rss = [int(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("AIR_BENCH_MAXRSS_KB")]
    res = {"run": name, "command": " ".join(train), "exit": r.returncode, "wall_s": wall, "config": cfg}
    engine_line = [l for l in r.stdout.splitlines() if l.startswith("engine:")]
    res["engine"] = engine_line[0] if engine_line else ""
    if r.returncode != 0 or not lines:
        res["error"] = (r.stderr or r.stdout)[-1500:]
        return res
    timed = [l for l in lines if l["step"] > args.warmup] or lines
    res.update(step_ms=1e3 * statistics.median(l["step_time_s"] for l in timed),
               tok_s=statistics.median(l["tokens_per_s_padded"] for l in timed),
               mfu=statistics.median(l["mfu"] for l in timed),
               peak_gib=max(l.get("peak_memory_gib", -1) for l in lines),
               rss_gib=(rss[0] / 2**20) if rss else -1, loss_first=lines[0]["loss"], loss_last=lines[-1]["loss"],
               steps=len(lines))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("AIR_BIN_DIR", os.path.join(ROOT, "build", "bin")))
    ap.add_argument("--shape", default="small", choices=["tiny"] + list(SHAPES))
    ap.add_argument("--runs", default="fsdp,fsdp-step", help="comma list of local, fsdp, fsdp-step")
    ap.add_argument("--nproc", type=int, default=1, help="ranks for the fsdp runs")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3, help="steps left out of the medians")
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--master", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--packing", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="OMP_NUM_THREADS per rank (CPU)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    work = f"/tmp/air-fsdp-bench-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    mdir = model_dir(args.shape, work)
    results = []
    for name in args.runs.split(","):
        res = run(args, name, mdir, work)
        results.append(res)
        print(f"# {name}: {res['command']} ({res['wall_s']:.0f} s, exit {res['exit']})", flush=True)
        if res["engine"]:
            print(f"#   {res['engine']}", flush=True)
        if "error" in res:
            print("#   FAILED: " + res["error"].strip().replace("\n", "\n#   "), flush=True)
    print(f"\nshape {args.shape}, {args.batch} x {args.seq} rows x accumulation {args.accum}, "
          f"fsdp ranks {args.nproc}, master {args.master}, {args.steps} steps (medians over steps > {args.warmup})\n")
    print("| run | median step | padded tok/s | MFU | peak GPU alloc | peak host RSS | loss first -> last |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['run']} | failed (exit {r['exit']}) | | | | | |")
            continue
        gpu = f"{r['peak_gib']:.1f} GiB" if r["peak_gib"] >= 0 else "-"
        print(f"| {r['run']} | {r['step_ms']:.1f} ms | {r['tok_s']:,.0f} | {100 * r['mfu']:.1f}% | {gpu} | "
              f"{r['rss_gib']:.2f} GiB | {r['loss_first']:.3f} -> {r['loss_last']:.3f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
