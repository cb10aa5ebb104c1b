#!/usr/bin/env bash
# Launch latency on the embedded local workspace: `air run` of a 2-node trivial workload until both nodes'
# commands run (median of N, default 20; target <= 300 ms), and the bytes an unchanged re-submit uploads
# (target 0). Usage: bench/launch.sh [N]   (AIR_BIN_DIR defaults to build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
AIR="${AIR_BIN_DIR:-$here/../build/bin}/air"
N="${1:-20}"
tmp="$(mktemp -d /tmp/air-bench-launch-XXXXXX)"
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$AIR" cancel --all -y >/dev/null 2>&1 || true; sleep 1; "$AIR" server stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

mkdir -p "$tmp/proj"
for i in $(seq 1 50); do head -c 2000 /dev/urandom | base64 > "$tmp/proj/file$i.txt"; done
cat > "$tmp/proj/launch.yaml" <<'YAML'
experiment_name: bench-launch
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: "true"
max_retries: 0
YAML
"$AIR" server status >/dev/null 2>&1 || "$AIR" list >/dev/null   # start the workspace outside the timing

results="$tmp/results.txt"
: > "$results"
for i in $(seq 1 "$N"); do
  t0=$(date +%s%3N)
  out=$("$AIR" -o json run -f "$tmp/proj/launch.yaml")
  id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["run_id"])' "$out")
  up=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["data"]["snapshot_uploaded_bytes"])' "$out")
  for _ in $(seq 1 600); do
    ready=$("$AIR" -o json get run "$id" | python3 -c '
import json,sys
d=json.load(sys.stdin)["data"]
ns=d["attempts"][-1]["nodes"] if d["attempts"] else []
ts=[n["running_at_ms"] for n in ns]
print(max(ts) if ts and all(ts) else 0)')
    [ "$ready" != 0 ] && break
    sleep 0.02
  done
  [ "$ready" != 0 ] || { echo "run $id never had both nodes running" >&2; exit 1; }
  echo "$((ready - t0)) $up" >> "$results"
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
lat = sorted(r[0] for r in rows)
first_up, resub = rows[0][1], [r[1] for r in rows[1:]]
p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))]
print(f"{'metric':<44}{'value':>12}{'target':>12}")
print(f"{'submit -> both nodes RUNNING, median (ms)':<44}{statistics.median(lat):>12.0f}{'<= 300':>12}")
print(f"{'  min / p90 / max (ms)':<44}{f'{lat[0]}/{p90}/{lat[-1]}':>12}")
print(f"{'runs':<44}{len(lat):>12}")
print(f"{'first submit: snapshot bytes uploaded':<44}{first_up:>12}")
print(f"{'unchanged re-submits: bytes uploaded (max)':<44}{max(resub) if resub else 0:>12}{'0':>12}")
PY
