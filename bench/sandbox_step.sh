#!/usr/bin/env bash
# What the run sandbox (docs/security.md, "Threat model") adds to a training step: the tiny FSDP example
# (examples/tiny_fsdp: air-torchrun + air-train, 1 node x 2 CPU ranks over Gloo) on the local backend, with
# the sandbox on and with AIR_SANDBOX=off, alternating rounds so that drift in the machine's load falls on
# both. Each run's steps come from its log (air-train's readable step lines, `... | 41.3 ms | ...`); the first 3 steps
# (warm-up) are left out. Target: no measurable difference. Prints one table: median step time, steps/s,
# and ratio on/off, plus the spread between rounds of the same mode (the noise any difference must beat).
# Usage: bench/sandbox_step.sh [ROUNDS] [STEPS] [bin dir]. The bin dir needs air, air-torchrun, air-train.
# Needs an idle machine for its figures (`uptime` < 0.5); otherwise quote them as measured under load.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
rounds=${1:-3}
steps=${2:-40}
bin=$(cd "${3:-build/bin}" && pwd)
for b in air air-torchrun air-train; do [ -x "$bin/$b" ] || { echo "sandbox_step.sh: $bin/$b is not built" >&2; exit 1; }; done
command -v bwrap > /dev/null || { echo "sandbox_step.sh: bwrap (Debian package bubblewrap) is not installed" >&2; exit 1; }
tmp=$(mktemp -d /tmp/air-sandbox-step-XXXXXX)
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/no-config" DATABRICKS_CONFIG_FILE="$tmp/no-databrickscfg"
unset AIR_HOST AIR_TOKEN DATABRICKS_HOST DATABRICKS_TOKEN
mkdir -p "$AIR_HOME"
AIR="$bin/air"
server_pid=""
stop() {
  [ -n "$server_pid" ] || return 0
  env -u AIR_HOST -u AIR_TOKEN "$AIR" server stop > /dev/null 2>&1 || true
  for _ in $(seq 100); do kill -0 "$server_pid" 2> /dev/null || break; sleep 0.1; done
  kill "$server_pid" 2> /dev/null || true
  wait "$server_pid" 2> /dev/null || true
  server_pid=""
}
trap 'stop; rm -rf "$tmp"' EXIT

python3 - "$src/examples/tiny_fsdp/train.yaml" "$tmp/train.yaml" "$src/examples" "$steps" <<'PY'
import sys
src, dst, root, steps = sys.argv[1:]
text = open(src).read()
for old, new in [("root_path: ..\n", "root_path: " + root + "\n"), ("num_accelerators: 4", "num_accelerators: 2"),
                 ("max_steps: 30", "max_steps: " + steps)]:
    assert old in text, old
    text = text.replace(old, new)
open(dst, "w").write(text)
PY

one_run() {  # one_run on|off -> appends "MODE median_step_s wall_s" to $tmp/results
  local mode=$1 id t0
  if [ "$mode" = off ]; then AIR_SANDBOX=off "$AIR" server --port 0 > "$tmp/server.out" 2>&1 &
  else "$AIR" server --port 0 > "$tmp/server.out" 2>&1 & fi
  server_pid=$!
  local said="every run's commands in a sandbox"; [ "$mode" = off ] && said="isolation: NONE"
  for _ in $(seq 200); do grep -qs "$said" "$tmp/server.out" && break; sleep 0.1; done
  grep -q "$said" "$tmp/server.out" || { cat "$tmp/server.out"; exit 1; }
  export AIR_HOST=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$AIR_HOME/server.json")
  export AIR_TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$AIR_HOME/server.json")
  t0=$(date +%s.%N)
  id=$("$AIR" -o json run -f "$tmp/train.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_id"])')
  while :; do
    st=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["state"])')
    case "$st" in SUCCEEDED) break ;; FAILED|CANCELED|TIMED_OUT) "$AIR" logs "$id" --no-follow | tail -20; exit 1 ;; esac
    sleep 0.2
  done
  wall=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)")
  "$AIR" logs "$id" --no-follow > "$tmp/run.log"
  want="sandbox: bubblewrap"; [ "$mode" = off ] && want="sandbox: none on this node (AIR_SANDBOX=off)"
  grep -rqF "$want" "$AIR_HOME/runs/$id" || { echo "run $id: its logs do not say '$want'" >&2; exit 1; }
  python3 - "$tmp/run.log" "$mode" "$wall" >> "$tmp/results" <<'PY'
import json, re, statistics, sys
times = []
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r'(?:^|\s)step (\d+)/\d+ \| loss .*? \| ([0-9.]+) ms \| tok/s', line)
    if m and int(m[1]) > 3: times.append(float(m[2]) / 1e3)
if len(times) < 5: sys.exit("too few step lines in the log: %d" % len(times))
print(sys.argv[2], statistics.median(times), sys.argv[3], len(times))
PY
  unset AIR_HOST AIR_TOKEN
  stop
}

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (figures need < 0.5); $(bwrap --version); uid $(id -u); $rounds rounds x $steps steps"
: > "$tmp/results"
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then one_run off; one_run on; else one_run on; one_run off; fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {m: [(float(s), float(w)) for mm, s, w, _ in rows if mm == m] for m in ("off", "on")}
print("per run, in order:", ", ".join(f"{m} {float(st)*1e3:.0f} ms" for m, st, _, _ in rows))
print(f"{'sandbox':<8} {'runs':>4} {'median step ms':>15} {'steps/s':>8} {'round spread ms':>16} {'wall s (median)':>16}")
med = {}
for m in ("off", "on"):
    steps = [s for s, _ in by[m]]
    med[m] = statistics.median(steps)
    spread = (max(steps) - min(steps)) * 1e3
    print(f"{m:<8} {len(steps):>4} {med[m]*1e3:>15.1f} {1/med[m]:>8.2f} {spread:>16.1f} {statistics.median(w for _, w in by[m]):>16.1f}")
print(f"ratio on/off (median step time): {med['on']/med['off']:.3f}")
PY
