#!/usr/bin/env bash
# Log shipping on the embedded local workspace, at scale.
#  latency:  a node echoes a line carrying its own clock every 50 ms; `air logs --follow` prints it; a reader
#            stamps the arrival; p50/p95 with the workspace idle, and again while 8 nodes write at full speed
#            (only lines echoed while all 8 writers run count). The probe echoes nothing before the follower
#            is attached (READY / go-file handshake): a follower started on a loaded machine can take seconds
#            to exist, and lines it was not yet there to read are not late lines. The clock is bash's own
#            EPOCHREALTIME, read as the echo runs: `$(date +%s%N)` read it in a child process whose handing
#            the time back to bash waited for the same busy CPUs as everything measured.
#  2 nodes:  each prints MB megabytes (default 200) of numbered 100-byte lines as fast as it can; per node,
#            from its command starting to its final status (sent after its last byte is stored).
#  8 nodes:  the same, 8 nodes of one run at once: total MB/s (all bytes / first start to last end) and the
#            slowest node.
#  memory:   one node prints BIG_MB (default 10240); the workspace's resident memory (VmRSS) sampled every
#            50 ms from before the run to its end: the growth must stay flat (bounded buffers, logs on disk).
#  Every node's stored log is checked: every line exactly once, in order (0 lost, 0 duplicated).
# Usage: bench/logs.sh [MB] [BIG_MB]   (AIR_BIN_DIR defaults to build/bin; needs 2 x (10 x MB + BIG_MB) of /tmp)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
AIR="${AIR_BIN_DIR:-$here/../build/bin}/air"
MB="${1:-200}"
BIG_MB="${2:-10240}"
tmp="$(mktemp -d /tmp/air-bench-logs-XXXXXX)"
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN
trap '"$AIR" cancel --all -y >/dev/null 2>&1 || true; sleep 1; "$AIR" server stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

submit() { "$AIR" -o json run -f "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_id"])'; }

latency_yaml() {  # latency_yaml NAME COUNT -> a probe echoing COUNT PING lines once GO exists (60 s at most)
  cat > "$tmp/$1.yaml" <<YAML
experiment_name: bench-log-latency
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  echo READY
  for w in \$(seq 1 6000); do [ -e "$tmp/$1.go" ] && break; sleep 0.01; done
  for i in \$(seq 1 $2); do echo "PING \$i \${EPOCHREALTIME/./}000"; sleep 0.05; done
max_retries: 0
YAML
  echo "$tmp/$1.yaml"
}
probe() {  # probe NAME COUNT: submits the probe, follows it, writes "<echo_ms> <delay_ms>" lines to NAME.txt
  local lid; lid=$(submit "$(latency_yaml "$1" "$2")")
  "$AIR" logs "$lid" --follow | python3 "$here/log_latency_reader.py" "$tmp/$1.go" > "$tmp/$1.txt"
}

writer() {  # writer NODES MB -> a workload file; each node prints MB x 10000 lines of 100 bytes
  local f="$tmp/w$1x$2.yaml"
  cat > "$f" <<YAML
experiment_name: bench-log-throughput
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: $1
command: |
  awk -v r="\$NODE_RANK" -v n=$(($2 * 10000)) 'BEGIN { pad = sprintf("%070d", 0); for (i = 1; i <= n; i++) printf "node %d line %010d %s\n", r, i, pad }'
max_retries: 0
YAML
  echo "$f"
}

# throughput NAME NODES MB: runs the writers, watches them, checks every node's stored log.
throughput() {
  local name=$1 nodes=$2 mb=$3 id
  "$AIR" server status >/dev/null 2>&1 || "$AIR" list >/dev/null  # the workspace is up: its pid is known
  local pid; pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$AIR_HOME/server.json")
  id=$(submit "$(writer "$nodes" "$mb")")
  python3 "$here/log_watch.py" "$AIR" "$id" "$pid" > "$tmp/$name.watch.json"
  for ((node = 0; node < nodes; node++)); do
    python3 "$here/log_checker.py" "$AIR_HOME/runs/$id/attempt_1/node_$node.log" "$node" $((mb * 10000)) \
      > "$tmp/$name.check$node.txt" || true
    stat -c %s "$AIR_HOME/runs/$id/attempt_1/node_$node.log" >> "$tmp/$name.sizes"
  done
  # The next stage needs the disk: drop this run's stored logs and spools (their sizes are kept).
  rm -rf "$AIR_HOME/runs/$id/attempt_1"/node_*.log "$AIR_HOME/runs/$id/attempt_1"/node_*/log.spool
}

# 1. latency, idle
probe latency_idle 100
# 2. two nodes
throughput two 2 "$MB"
# 3. eight nodes, and the latency probe while they write: the probe is attached first and echoes for longer
#    than they take; the lines echoed while all 8 run are the ones counted
probe latency_load $((MB + 100)) &
for w in $(seq 1 600); do [ -e "$tmp/latency_load.go" ] && break; sleep 0.1; done
throughput eight 8 "$MB"
wait
# 4. one big log
throughput big 1 "$BIG_MB"

python3 - "$tmp" "$MB" "$BIG_MB" <<'PY'
import json, sys
tmp, mb, big_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def pct(path, p, window=None):  # window: (from_ms, to_ms) of the echo times that count
    lat = sorted(float(d) for e, d in (x.split() for x in open(path))
                 if window is None or window[0] <= float(e) <= window[1])
    return lat[min(len(lat) - 1, int(p * len(lat)))], len(lat)
def run(name):
    w = json.load(open(f"{tmp}/{name}.watch.json"))
    sizes = [int(x) for x in open(f"{tmp}/{name}.sizes").read().split()]
    checks = [open(f"{tmp}/{name}.check{i}.txt").read().strip() for i in range(len(sizes))]
    lost = sum(int(c.split()[0]) for c in checks)
    dup = sum(int(c.split(", ")[1].split()[0]) for c in checks)
    rates = []
    for i, size in enumerate(sizes):
        secs = (w["done_ms"][str(i)] - w["running_ms"][str(i)]) / 1000
        rates.append(size / 1e6 / secs)
    total = sum(sizes) / 1e6
    span = (max(w["done_ms"].values()) - min(w["running_ms"].values())) / 1000
    return w, rates, total / span, lost, dup
row = lambda m, v, t="": print(f"{m:<56}{v:>16}{t:>14}")
row("metric", "value", "target")
p50, n = pct(f"{tmp}/latency_idle.txt", 0.50)
row("latency, idle: echo -> air logs --follow p50 (ms)", f"{p50:.1f}")
row("latency, idle: p95 (ms)", f"{pct(f'{tmp}/latency_idle.txt', 0.95)[0]:.1f}", "<= 200")
w8 = json.load(open(f"{tmp}/eight.watch.json"))
all_writing = (max(w8["running_ms"].values()), min(w8["done_ms"].values()))
try:
    p95, n = pct(f"{tmp}/latency_load.txt", 0.95, all_writing)
    row(f"latency, 8 nodes writing: p50 (ms; {n} lines)", f"{pct(f'{tmp}/latency_load.txt', 0.50, all_writing)[0]:.1f}")
    row("latency, 8 nodes writing: p95 (ms)", f"{p95:.1f}", "<= 200")
except (OSError, IndexError, ValueError):
    row("latency, 8 nodes writing: p95 (ms)", "no lines")
w, rates, tot, lost, dup = run("two")
row(f"2 nodes x {mb} MB: per node MB/s (min / max)", f"{min(rates):.1f} / {max(rates):.1f}", ">= 100")
row("2 nodes: lost / duplicated lines", f"{lost} / {dup}", "0 / 0")
w, rates, tot, lost, dup = run("eight")
row(f"8 nodes x {mb} MB at once: total MB/s", f"{tot:.1f}", ">= 200")
row("8 nodes: per node MB/s (min / max)", f"{min(rates):.1f} / {max(rates):.1f}")
row("8 nodes: lost / duplicated lines", f"{lost} / {dup}", "0 / 0")
w, rates, tot, lost, dup = run("big")
rss = w["rss_kb"]
row(f"1 node x {big_mb} MB: MB/s", f"{rates[0]:.1f}")
row("  workspace VmRSS before / peak (MB)", f"{rss[0] / 1024:.1f} / {max(rss) / 1024:.1f}")
row("  workspace memory growth (MB)", f"{(max(rss) - rss[0]) / 1024:.1f}", "flat")
row("  lost / duplicated lines", f"{lost} / {dup}", "0 / 0")
PY
