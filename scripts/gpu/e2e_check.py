#!/usr/bin/env python3
"""The checks and the summary table of scripts/gpu/e2e.sh (stdlib; torch/transformers only for `logits`).

  e2e_check.py status URL                      HTTP status of a GET (HUB_TOKEN in the env: sent as Bearer)
  e2e_check.py prewarm HUB REPO DIR            HEAD every *.safetensors of DIR in parallel (the fixture hashes)
  e2e_check.py steps --log NODE_LOG --steps N --json OUT
  e2e_check.py metrics --json GET_RUN_METRICS.json --steps N
  e2e_check.py logits --checkpoint DIR --bin BIN --device cuda|cpu --json OUT
  e2e_check.py summary ...                     the table (markdown) from the stamped watch log and the JSONs
"""
import argparse
import concurrent.futures
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request

PROMPT = ("Below is an instruction that describes a task. Write a response that appropriately completes the "
          "request.\n\n### Instruction:\nName three primary colours.\n\n### Response:\n")


def request(url, method="GET"):
    req = urllib.request.Request(url, method=method)
    tok = os.environ.get("HUB_TOKEN")
    if tok:
        req.add_header("Authorization", "Bearer " + tok)
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def cmd_status(a):
    print(request(a.url)[0])
    return 0


def cmd_prewarm(a):
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kw):
            return None
    urllib.request.install_opener(urllib.request.build_opener(NoRedirect))
    files = sorted(f for f in os.listdir(a.dir) if f.endswith(".safetensors"))
    with concurrent.futures.ThreadPoolExecutor(max(1, len(files))) as ex:
        codes = list(ex.map(lambda f: request(f"{a.hub}/{a.repo}/resolve/main/{f}", "HEAD")[0], files))
    print(f"prewarmed {len(files)} files: HTTP {sorted(set(codes))}")
    return 0 if all(c in (200, 302) for c in codes) else 1


# air-train's readable step line (trainer/metrics.cc human_line), the one line per step of the log a person
# watches; the JSON step lines go to `metrics_file` only.
STEP_LINE = re.compile(r"(?:^|\s)step (\d+)/\d+ \| loss (\S+) \| lr (\S+) \| grad_norm (\S+) \| ([0-9.]+) ms \| "
                       r"tok/s ([0-9.]+) padded, ([0-9.]+) real \| MFU ([0-9.]+)%(?: \| peak ([0-9.]+) GiB)?")


def step_records(path):
    """The figures of each readable step line of a log, under the metrics file's names."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = STEP_LINE.search(line)
            if m:
                out.append({"step": int(m[1]), "loss": float(m[2]), "lr": float(m[3]), "grad_norm": float(m[4]),
                            "step_time_s": float(m[5]) / 1e3, "tokens_per_s_padded": float(m[6]),
                            "tokens_per_s_real": float(m[7]), "mfu": float(m[8]) / 100,
                            "peak_memory_gib": float(m[9]) if m[9] else -1})
    return out


def cmd_steps(a):
    recs = step_records(a.log)
    steps = [r["step"] for r in recs]
    json_lines = sum(1 for line in open(a.log, errors="replace") if '{"step"' in line)
    ok = steps == list(range(1, a.steps + 1)) and json_lines == 0  # each step once, as its readable line
    losses = [r["loss"] for r in recs]
    k = max(1, min(3, len(losses) // 3))
    falls = len(losses) >= 2 and statistics.mean(losses[-k:]) < statistics.mean(losses[:k])
    steady = recs[min(2, len(recs) - 1):] if recs else []  # steps 1-2 warm up (allocator, kernels)
    res = {"steps_logged": steps, "json_step_lines": json_lines, "loss_first": losses[:k], "loss_last": losses[-k:],
           "loss_falls": falls,
           "tokens_per_s_padded": statistics.median(r["tokens_per_s_padded"] for r in steady) if steady else 0,
           "tokens_per_s_real": statistics.median(r["tokens_per_s_real"] for r in steady) if steady else 0,
           "mfu": statistics.median(r["mfu"] for r in steady) if steady else 0,
           "step1_s": recs[0]["step_time_s"] if recs else 0,
           "steady_step_s": statistics.median(r["step_time_s"] for r in steady) if steady else 0,
           "peak_memory_gib": max((r["peak_memory_gib"] for r in recs), default=-1)}
    json.dump(res, open(a.json, "w"), indent=1)
    print(f"steps {steps[:3]}..{steps[-1:]} ({len(steps)} of {a.steps}), JSON step lines in the log {json_lines}; loss "
          f"{losses[:k]} -> {losses[-k:]}; steady {res['tokens_per_s_padded']:.0f} tok/s, MFU {res['mfu'] * 100:.1f}%")
    return 0 if ok and falls else 1


def cmd_ratio(a):
    e, d = json.load(open(a.e2e)), json.load(open(a.direct))
    r = e["tokens_per_s_padded"] / max(d["tokens_per_s_padded"], 1e-9)
    print(f"steady {e['tokens_per_s_padded']:.0f} tok/s through air run, {d['tokens_per_s_padded']:.0f} alone: "
          f"{r:.3f} (at least {a.min})")
    return 0 if r >= a.min else 1


def cmd_metrics(a):
    d = json.load(open(a.json))
    if isinstance(d, dict) and d.get("v") == 1 and "data" in d:  # `air -o json`'s envelope (docs/cli.md)
        d = d["data"]
    loss = d.get("metrics", {}).get("loss", [])
    steps = sorted(int(p.get("step", -1)) for p in loss)
    print(f"MLflow run {d.get('mlflow_run_id')}: metrics {sorted(d.get('metrics', {}))}; loss at {len(steps)} steps "
          f"(last {steps[-1] if steps else None})")
    return 0 if steps and steps[-1] == a.steps and len(steps) == a.steps else 1


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return header, data


def write_ids(path, ids):
    blob = struct.pack(f"<{len(ids)}q", *ids)
    header = {"input_ids": {"dtype": "I64", "shape": [1, len(ids)], "data_offsets": [0, len(blob)]},
              "labels": {"dtype": "I64", "shape": [1, len(ids)], "data_offsets": [len(blob), 2 * len(blob)]}}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob + blob)


def prompt_ids(ckpt, vocab):
    try:
        from tokenizers import Tokenizer
        ids = Tokenizer.from_file(os.path.join(ckpt, "tokenizer.json")).encode(PROMPT).ids
        if ids and max(ids) < vocab:
            return ids[:64], "tokenizers"
    except Exception:  # no tokenizers module (the CPU smoke): fixed ids
        pass
    return [(7 * i + 3) % vocab for i in range(32)], "fixed ids"


def cmd_logits(a):
    res = {"pass": False}
    cfg = json.load(open(os.path.join(a.checkpoint, "config.json")))
    res["files"] = sorted(os.listdir(a.checkpoint))
    res["checkpoint_bytes"] = sum(os.path.getsize(os.path.join(a.checkpoint, f)) for f in res["files"])
    ids, how = prompt_ids(a.checkpoint, cfg["vocab_size"])
    work = os.path.dirname(os.path.abspath(a.json))
    ids_path, ours_path = os.path.join(work, "prompt_ids.safetensors"), os.path.join(work, "ours_logits.safetensors")
    write_ids(ids_path, ids)
    dtype = "bf16" if a.device == "cuda" else "fp32"
    cmd = [os.path.join(a.bin, "air-train-check"), "--model", a.checkpoint, "--ids", ids_path, "--out", ours_path,
           "--dtype", dtype, "--device", a.device]
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    res["air_train_check_s"] = round(time.time() - t, 1)
    print(f"$ {' '.join(cmd)}\n{r.stdout}{r.stderr}({res['air_train_check_s']} s; prompt: {len(ids)} tokens, {how})")
    if r.returncode != 0:
        json.dump(res, open(a.json, "w"), indent=1)
        return 1
    header, data = read_safetensors(ours_path)
    meta = header["logits"]
    lo, hi = meta["data_offsets"]
    ours_raw, shape = data[lo:hi], meta["shape"]
    n = len(ours_raw) // 4
    finite = all(v == v and abs(v) < 1e30 for v in struct.unpack(f"<{n}f", ours_raw))
    res.update(logits_shape=shape, finite=finite)
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError:
        res["transformers"] = "not installed: checked only that air-train-check loads the checkpoint"
        res["pass"] = finite
        print(json.dumps(res))
        json.dump(res, open(a.json, "w"), indent=1)
        return 0 if finite else 1
    ours = torch.frombuffer(bytearray(ours_raw), dtype=torch.float32).view(shape)
    t = time.time()
    dt = torch.bfloat16 if a.device == "cuda" else torch.float32
    if a.device == "cuda":  # straight to the GPU (accelerate, which the GPU image has)
        model = AutoModelForCausalLM.from_pretrained(a.checkpoint, dtype=dt, device_map="cuda")
    else:
        model = AutoModelForCausalLM.from_pretrained(a.checkpoint, dtype=dt)
    res["transformers_load_s"] = round(time.time() - t, 1)
    with torch.no_grad():
        hf = model(input_ids=torch.tensor([ids], device=a.device)).logits.float().cpu()
    res["logits_rel_max"] = ((hf - ours).abs().max() / hf.abs().max()).item()
    res["logits_rel_norm"] = ((hf - ours).norm() / hf.norm()).item()
    res["argmax_agree"] = (hf.argmax(-1) == ours.argmax(-1)).float().mean().item()
    bound = 2e-2 if dt == torch.bfloat16 else 1e-4  # scripts/gpu/check_hf.py's bounds
    res["bound"] = bound
    res["pass"] = finite and res["logits_rel_max"] < bound
    print(json.dumps(res))
    json.dump(res, open(a.json, "w"), indent=1)
    return 0 if res["pass"] else 1


def stamped(path):
    out = []
    for line in open(path, errors="replace"):
        t, _, text = line.rstrip("\n").partition(" ")
        try:
            out.append((float(t), text))
        except ValueError:
            pass
    return out


def first(lines, pattern, last=False):
    hits = [(t, s) for t, s in lines if re.search(pattern, s)]
    return (hits[-1] if last else hits[0]) if hits else (None, None)


def cmd_summary(a):
    lines = stamped(a.watch)
    st = json.load(open(a.steps_json)) if os.path.exists(a.steps_json) else {}
    lg = json.load(open(a.logits_json)) if os.path.exists(a.logits_json) else {}
    hub = [(t, s) for t, s in lines if re.search(r"hub: .*: fetched \d+ of \d+ files", s)]
    dl_bytes = dl_secs = 0.0
    units = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
    secs = []
    for _, s in hub:  # the model's line first (resolved first), then the dataset's
        m = re.search(r"files, ([\d.]+) (\w+) in ([\d.]+) s", s)
        if m:
            dl_bytes += float(m.group(1)) * units.get(m.group(2), 1)
            secs.append(float(m.group(3)))
    dl_secs = sum(secs)
    t_model = hub[0][0] if hub else None  # hub lines are flushed as they are written
    t_engine, _ = first(lines, r"\bengine: ")
    t_step1, _ = first(lines, r"step 1/\d+ \|")
    t_last, _ = first(lines, r"step \d+/\d+ \|", last=True)
    t_saved, _ = first(lines, r"saved checkpoint to ")

    def span(x, y):
        return f"{y - x:.1f}" if x is not None and y is not None else "-"
    start = (t_model - a.submit - secs[0]) if secs else None
    load = (t_engine - t_model - sum(secs[1:])) if secs and t_engine else None
    save_s = (t_saved - t_last) if t_saved and t_last else None
    ck = lg.get("checkpoint_bytes", 0)
    rows = [("start (submit to the trainer's first download)", f"{start:.1f}" if start is not None else "-"),
            ("download (model + dataset, air's hub client)", f"{dl_secs:.1f}"),
            ("load (tokenizer, dataset tokenized, model to GPU, engine)", f"{load:.1f}" if load is not None else "-"),
            ("first step (incl. warm-up)", span(t_engine, t_step1)),
            (f"steps 2..{len(st.get('steps_logged', []))}", span(t_step1, t_last)),
            ("save (checkpoint written; process exit)", f"{save_s:.1f}" if save_s else "-"),
            ("air run --watch in all", f"{a.end - a.submit:.1f}"),
            ("e2e.sh in all (build, fixture, checks)", f"{a.total:.1f}")]
    print(f"## air run --watch end to end, {a.mode} ({'PASS' if a.fails == 0 else f'{a.fails} check(s) FAILED'})\n")
    print("| phase | seconds |\n| --- | ---: |")
    for k, v in rows:
        print(f"| {k} | {v} |")
    toks, mfu = st.get("tokens_per_s_padded", 0), st.get("mfu", 0) * 100
    # direct: the same hyperparameters file, air-train started by hand on the same machine right after (no
    # air, no launcher, no log shipping, no MLflow): the orchestration's cost is 1 - e2e / direct.
    dr = json.load(open(a.direct_json)) if a.direct_json and os.path.exists(a.direct_json) else {}
    dtoks, dmfu = dr.get("tokens_per_s_padded"), (dr["mfu"] * 100 if "mfu" in dr else None)
    print("\n| figure | e2e (air run) | direct (air-train alone) | e2e / direct | bench | e2e / bench |\n"
          "| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, ours, direct, bench in (("steady tokens/s (padded)", toks, dtoks, a.bench_toks),
                                      ("steady MFU %", mfu, dmfu, a.bench_mfu)):
        b = float(bench) if bench else None
        print(f"| {name} | {ours:.1f} | {f'{direct:.1f}' if direct else '-'} | "
              f"{f'{ours / direct:.3f}' if direct else '-'} | {b if b else '-'} | {f'{ours / b:.3f}' if b else '-'} |")
    print(f"| download MB/s | {dl_bytes / 1e6 / dl_secs:.0f} | | | | |" if dl_secs else "| download MB/s | - | | | | |")
    print(f"| checkpoint write MB/s ({ck / 1e9:.2f} GB) | {ck / 1e6 / save_s:.0f} | | | | |" if save_s and ck else
          "| checkpoint write MB/s | - | | | | |")
    print(f"\nloss {st.get('loss_first')} -> {st.get('loss_last')}; steady step {st.get('steady_step_s', 0):.3f} s, "
          f"step 1 {st.get('step1_s', 0):.1f} s; peak {st.get('peak_memory_gib', -1):.1f} GiB; checkpoint logits vs "
          f"transformers: rel max {lg.get('logits_rel_max', '-')}, argmax agree {lg.get('argmax_agree', '-')}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("status")
    p.add_argument("url")
    p = sub.add_parser("prewarm")
    p.add_argument("hub")
    p.add_argument("repo")
    p.add_argument("dir")
    p = sub.add_parser("steps")
    p.add_argument("--log", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--json", required=True)
    p = sub.add_parser("ratio")  # exit 0 when e2e's steady tokens/s is at least MIN x direct's
    p.add_argument("--e2e", required=True)
    p.add_argument("--direct", required=True)
    p.add_argument("--min", type=float, default=0.98)
    p = sub.add_parser("metrics")
    p.add_argument("--json", required=True)
    p.add_argument("--steps", type=int, required=True)
    p = sub.add_parser("logits")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--bin", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--json", required=True)
    p = sub.add_parser("summary")
    for k in ("--watch", "--steps-json", "--logits-json", "--checkpoint", "--mode", "--bench-toks", "--bench-mfu",
              "--direct-json"):
        p.add_argument(k, default="")
    for k in ("--submit", "--end", "--total"):
        p.add_argument(k, type=float, default=0)
    p.add_argument("--fails", type=int, default=0)
    a = ap.parse_args()
    return {"status": cmd_status, "ratio": cmd_ratio, "prewarm": cmd_prewarm, "steps": cmd_steps, "metrics": cmd_metrics,
            "logits": cmd_logits, "summary": cmd_summary}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
