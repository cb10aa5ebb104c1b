#!/usr/bin/env bash
# Log latency and throughput on the embedded local workspace.
#  latency: a node echoes a line carrying its own clock every 50 ms; `air logs --follow` prints it; a reader
#           stamps the arrival; p50/p95 over the lines (target p95 <= 200 ms).
#  throughput: each of 2 nodes prints MB megabytes (default 200) of numbered lines as fast as it can; the
#           time from its command starting to the last byte stored, per node (target >= 50 MB/s), and a
#           checker that every line arrived exactly once (0 lost, 0 duplicated).
# Usage: bench/logs.sh [MB]   (AIR_BIN_DIR defaults to build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
AIR="${AIR_BIN_DIR:-$here/../build/bin}/air"
MB="${1:-200}"
tmp="$(mktemp -d /tmp/air-bench-logs-XXXXXX)"
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$AIR" server stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

cat > "$tmp/latency.yaml" <<'YAML'
experiment_name: bench-log-latency
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  sleep 1
  for i in $(seq 1 100); do echo "PING $i $(date +%s%N)"; sleep 0.05; done
max_retries: 0
YAML
id=$("$AIR" -o json run -f "$tmp/latency.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
"$AIR" logs "$id" --follow | python3 "$here/log_latency_reader.py" > "$tmp/latency.txt"

lines_per_mb=10000   # 100-byte lines
n=$((MB * lines_per_mb))
cat > "$tmp/throughput.yaml" <<YAML
experiment_name: bench-log-throughput
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  awk -v r="\$NODE_RANK" -v n=$n 'BEGIN { pad = sprintf("%070d", 0); for (i = 1; i <= n; i++) printf "node %d line %010d %s\n", r, i, pad }'
max_retries: 0
YAML
id=$("$AIR" -o json run -f "$tmp/throughput.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
for node in 0 1; do
  ( "$AIR" logs "$id" --node $node --follow > /dev/null; date +%s%3N > "$tmp/done$node" ) &
done
wait
"$AIR" -o json get run "$id" > "$tmp/run.json"
"$AIR" logs "$id" --download-to "$tmp/dl" > /dev/null 2>&1
for node in 0 1; do
  python3 "$here/log_checker.py" "$tmp/dl/$id/attempt_1/node_$node.log" "$node" "$n" > "$tmp/check$node.txt"
done

python3 - "$tmp" "$MB" <<'PY'
import json, os, sys
tmp, mb = sys.argv[1], int(sys.argv[2])
lat = sorted(float(x) for x in open(f"{tmp}/latency.txt"))
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
run = json.load(open(f"{tmp}/run.json"))
print(f"{'metric':<48}{'value':>14}{'target':>12}")
print(f"{'echo -> air logs --follow, p50 (ms)':<48}{pct(0.50):>14.1f}")
print(f"{'echo -> air logs --follow, p95 (ms)':<48}{pct(0.95):>14.1f}{'<= 200':>12}")
print(f"{'  lines measured':<48}{len(lat):>14}")
for node in (0, 1):
    n = run["attempts"][-1]["nodes"][node]
    done = int(open(f"{tmp}/done{node}").read())
    secs = (done - n["running_at_ms"]) / 1000
    size = os.path.getsize(f"{tmp}/dl/{run['run_id']}/attempt_1/node_{node}.log")
    check = open(f"{tmp}/check{node}.txt").read().strip()
    print(f"{f'node {node}: {size/1e6:.0f} MB of lines, MB/s':<48}{size/1e6/secs:>14.1f}{'>= 50':>12}")
    print(f"{f'node {node}: checker':<48}{check:>14}{'0 lost, 0 dup':>12}")
print(f"{'run state':<48}{run['state']:>14}")
PY
