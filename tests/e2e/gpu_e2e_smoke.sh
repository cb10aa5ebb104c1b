#!/usr/bin/env bash
# The CPU-checkable parts of scripts/gpu/e2e.sh (the GPU end-to-end run): its arguments; the override set
# of the 8b and 1b modes validated by `air run --dry-run` on the reference train.yaml; the fixture writer's
# Llama shapes (parameter counts of the published models) and its sharded safetensors + index; the step-log
# checker on good and bad logs; then the whole script with --cpu-smoke (tiny model on CPU, same steps) when
# air-train is built.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
source "$(dirname "$0")/lib/common.bash"
e2e=$SRC/scripts/gpu/e2e.sh fx=$SRC/scripts/gpu/e2e_fixture.py ck=$SRC/scripts/gpu/e2e_check.py

# ---- arguments ----
bash "$e2e" --help | grep -q -- "--cpu-smoke" || fail "--help does not describe the modes"
if bash "$e2e" 7b > "$E2E_TMP/bad.out" 2>&1; then fail "an unknown mode was accepted"; fi
grep -q "unknown argument '7b'" "$E2E_TMP/bad.out" || fail "the bad mode is not named: $(cat "$E2E_TMP/bad.out")"

# ---- the overrides the GPU run uses, validated on the real file ----
for mode in 8b 1b; do
  args=()
  while read -r _ kv; do args+=(--override "${kv//\$HUB/http://127.0.0.1:9}"); done < <(bash "$e2e" "$mode" --plan | grep '^override ')
  (cd "$SRC" && "$AIR" run -f examples/llama31_8b_sft/train.yaml "${args[@]}" --dry-run) > "$E2E_TMP/plan-$mode.out" 2>&1 ||
    fail "$mode: air run --dry-run refused the overrides: $(cat "$E2E_TMP/plan-$mode.out")"
  grep -q "1 node x 1 GPU per node (GPU_1xH200)" "$E2E_TMP/plan-$mode.out" || fail "$mode: not one node x one GPU"
  grep -q "HF_TOKEN <- secret my_scope/hf_token" "$E2E_TMP/plan-$mode.out" || fail "$mode: the token is not the secret"
  grep -q "HF_ENDPOINT=http://127.0.0.1:9" "$E2E_TMP/plan-$mode.out" || fail "$mode: HF_ENDPOINT not set"
done
grep -q "model_name: meta-llama/Llama-3.2-1B" "$E2E_TMP/plan-1b.out" || fail "1b mode does not train the 1B model"
echo "overrides: 8b and 1b plans validate"

# ---- fixture shapes and files ----
python3 - "$fx" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("fx", sys.argv[1]); fx = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fx)
# meta-llama/Llama-3.1-8B and Llama-3.2-1B as published (tied embeddings counted once).
for shape, want in (("8b", 8_030_261_248), ("1b", 1_235_814_400)):
    got = sum(fx.numel(s) for _, s in fx.tensor_specs(fx.config_for(shape)))
    assert got == want, f"{shape}: {got} parameters, the published model has {want}"
    shards = fx.plan_shards(fx.tensor_specs(fx.config_for(shape)), 5_000_000_000)
    assert all(sum(fx.numel(s) * 2 for _, s in sh) <= 5e9 or len(sh) == 1 for sh in shards)
print("shapes: 8b and 1b parameter counts match the published models")
PY
python3 "$fx" model --shape tiny --out "$E2E_TMP/m" --shard-gb 0.0002 --device cpu > "$E2E_TMP/fx.json"
python3 - "$E2E_TMP/m" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
files = sorted(set(idx["weight_map"].values()))
assert len(files) >= 2, f"expected several shards, got {files}"
seen, total = set(), 0
for f in files:
    with open(os.path.join(d, f), "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        h = json.loads(fh.read(n)); size = os.path.getsize(os.path.join(d, f)) - 8 - n
    end = 0
    for k, v in h.items():
        if k == "__metadata__": continue
        assert idx["weight_map"][k] == f and v["dtype"] == "BF16", k
        lo, hi = v["data_offsets"]; n_el = 1
        for x in v["shape"]: n_el *= x
        assert hi - lo == 2 * n_el and lo == end, k
        end = hi; seen.add(k); total += hi - lo
    assert end == size, f"{f}: data ends at {end}, file holds {size}"
assert seen == set(idx["weight_map"]) and total == idx["metadata"]["total_size"]
print(f"fixture: {len(files)} shards, {len(seen)} tensors, index consistent")
PY

# ---- the step-log checker ----
steplog() {  # steplog FILE LOSS...: air-train's readable step lines (JSON ones too with STEPLOG_JSON=1)
  local f=$1 i=1; shift
  for l in "$@"; do
    echo "step $i/$# | loss $l | lr 1.000e-04 | grad_norm 1.000 | 12.5 ms | tok/s 100 padded, 50 real | MFU 1.0% | peak 2.5 GiB"
    [ -z "${STEPLOG_JSON:-}" ] || echo "{\"step\":$i,\"loss\":$l,\"step_time_s\":0.0125,\"tokens_per_s_padded\":100,\"mfu\":0.01}"
    i=$((i + 1))
  done > "$f"
}
steplog "$E2E_TMP/good.log" 11.8 11.5 11.0 10.2 9.7 9.1
python3 "$ck" steps --log "$E2E_TMP/good.log" --steps 6 --json "$E2E_TMP/s.json" >/dev/null || fail "a falling loss was refused"
python3 - "$E2E_TMP/s.json" <<'PY' || fail "the checker misread the step lines: $(cat "$E2E_TMP/s.json")"
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if (s["steps_logged"] == [1, 2, 3, 4, 5, 6] and s["loss_first"] == [11.8, 11.5] and s["tokens_per_s_real"] == 50
               and abs(s["steady_step_s"] - 0.0125) < 1e-9 and s["mfu"] == 0.01 and s["peak_memory_gib"] == 2.5) else 1)
PY
steplog "$E2E_TMP/flat.log" 11.8 11.8 11.9 11.8 11.9 11.9
if python3 "$ck" steps --log "$E2E_TMP/flat.log" --steps 6 --json "$E2E_TMP/s.json" >/dev/null; then fail "a flat loss passed"; fi
if python3 "$ck" steps --log "$E2E_TMP/good.log" --steps 7 --json "$E2E_TMP/s.json" >/dev/null; then fail "a missing step passed"; fi
STEPLOG_JSON=1 steplog "$E2E_TMP/twice.log" 11.8 11.5 11.0 10.2 9.7 9.1
if python3 "$ck" steps --log "$E2E_TMP/twice.log" --steps 6 --json "$E2E_TMP/s.json" >/dev/null; then fail "a log saying each step twice passed"; fi
echo "steps: the checker takes a falling loss, refuses a flat one, a missing step and a step said twice (JSON)"

# ---- the whole script on CPU ----
if [ ! -x "$BIN/air-train" ] || [ ! -x "$BIN/air-train-check" ] || [ ! -x "$BIN/air-torchrun" ]; then
  echo "the --cpu-smoke run needs air-train, air-train-check and air-torchrun: not built, not run"
  exit 0
fi
OUT=$E2E_TMP/out AIR_E2E_WORK=$E2E_TMP/w AIR_PARQUET_WASM="$(cd "$BIN/.." && pwd)/parquet-oracle" \
  bash "$e2e" --cpu-smoke > "$E2E_TMP/smoke.out" 2>&1 || { rc=$?; tail -60 "$E2E_TMP/smoke.out"; [ $rc = 125 ] && exit 125; fail "e2e.sh --cpu-smoke failed"; }
grep -q "E2E PASS (tiny)" "$E2E_TMP/smoke.out" || fail "no PASS line"
for f in summary.md watch.log node0.log e2e.log; do [ -s "$E2E_TMP/out/$f" ] || fail "no $f in OUT"; done
grep -q "| download (model + dataset" "$E2E_TMP/out/summary.md" || fail "the summary has no phase table"
echo "cpu smoke: $(grep -c '^PASS' "$E2E_TMP/smoke.out") checks passed"
