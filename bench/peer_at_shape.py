#!/usr/bin/env python3
"""The torch.compile peer (tuned_peer.py, beside this file) at another row shape than its 4 x 1024 x 2.

tuned_peer.py and seed_fsdp_baseline.py (the reference recipe it takes its batches and constants from) are not
ours and are copied in by scripts/gpu/prepare.sh; their shape is module constants. This sets those constants
(row length, micro-batch, accumulation) before running the peer's own main, so its batches (BOS + random ids of
~U[100, 400] tokens, padded to the row length, padding masked), its FLOP count (6N + 12·L·H·T with T = the row
length) and its timing are those of the new shape; then it writes the shape into every run of peer.json.
--full-rows: every row is BOS + random ids to its end, no attention mask (labels = the ids): the peer's causal
path without the padding mask it otherwise builds in every layer (the same GEMM and attention FLOPs; its
fastest configuration at long rows, where the mask is 8192 x 8192 per row). Its runs are named VARIANT+fullrows.
Launch as the peer: python3 -m torch.distributed.run --standalone --nproc_per_node=1 peer_at_shape.py
  --seq 8192 --mb 1 --acc 2 [--full-rows] compiled:8b
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed_fsdp_baseline as ref  # noqa: E402
import tuned_peer  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=ref.SEQ)
    ap.add_argument("--mb", type=int, default=ref.MICRO_BS)
    ap.add_argument("--acc", type=int, default=ref.GA)
    ap.add_argument("--full-rows", action="store_true")
    ap.add_argument("runs", nargs="+", help="VARIANT:SHAPE as tuned_peer.py takes them")
    args = ap.parse_args()
    ref.SEQ, ref.MICRO_BS, ref.GA = args.seq, args.mb, args.acc
    if args.full_rows:
        padded = ref.make_batches

        def full_rows(n_micro, seed):
            import torch
            g = torch.Generator(device="cpu").manual_seed(seed)
            out = []
            for b in padded(n_micro, seed):
                ids = torch.randint(0, 128000, b["input_ids"].shape, generator=g)
                ids[:, 0] = ref.BOS_ID
                ids = ids.to(b["input_ids"].device)
                out.append(dict(input_ids=ids, attention_mask=None, labels=ids.clone(), nonpad=ids.numel()))
            return out

        ref.make_batches = full_rows
    sys.argv = [sys.argv[0]] + args.runs
    tuned_peer.main()
    path = os.path.join(tuned_peer.OUT, "peer.json")
    results = json.load(open(path))
    for r in results["runs"]:
        r.update(seq=args.seq, micro_batch=args.mb, accumulation=args.acc, full_rows=args.full_rows)
        if args.full_rows and not r["variant"].endswith("+fullrows"):
            r["variant"] += "+fullrows"
    results["shape"] = dict(seq=args.seq, micro_batch=args.mb, accumulation=args.acc)
    json.dump(results, open(path, "w"), indent=1, default=str)


if __name__ == "__main__":
    main()
