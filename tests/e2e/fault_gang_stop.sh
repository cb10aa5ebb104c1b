#!/usr/bin/env bash
# One node of a 2-node run dies mid-run (its command killed with SIGKILL; then, separately, its agent):
# the other node's command is stopped within 10 s, the attempt is FAILED naming the dead node (and the
# signal), and the run is retried (max_retries 1) and succeeds. Prints the stop latency p50 / max.
# FAULT_TRIES tries of each kind (default 2); bench/faults.sh runs 20.
source "$(dirname "$0")/lib/common.bash"

alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1; [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }

tries=${FAULT_TRIES:-2}
cat > "$E2E_TMP/gang.yaml" <<'YAML'
experiment_name: fault-gang-stop
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  if [ "$AIR_ATTEMPT" = 1 ]; then echo ready; exec sleep 1000; fi
  echo "attempt $AIR_ATTEMPT ok"
max_retries: 1
YAML

# kill_and_time PID_TO_KILL PID_TO_WATCH: SIGKILLs the first, prints the seconds until the second is gone.
kill_and_time() {
  python3 - "$1" "$2" <<'PY'
import os, signal, sys, time
victim, watch = int(sys.argv[1]), int(sys.argv[2])
def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
t0 = time.monotonic()
os.kill(victim, signal.SIGKILL)
while alive(watch) and time.monotonic() - t0 < 30:
    time.sleep(0.01)
print("%.3f" % (time.monotonic() - t0))
PY
}

lat_file="$E2E_TMP/latencies"
: > "$lat_file"
for kind in command agent; do
  for t in $(seq 1 "$tries"); do
    id=$(submit "$E2E_TMP/gang.yaml")
    for _ in $(seq 1 300); do
      p0=$(run_field "$id" 'd["attempts"][0]["nodes"][0]["pid"] if d["attempts"] else None')
      p1=$(run_field "$id" 'd["attempts"][0]["nodes"][1]["pid"] if d["attempts"] else None')
      [ "$p0" != None ] && [ "$p1" != None ] && [ "$(run_field "$id" 'd["state"]')" = RUNNING ] && break
      sleep 0.1
    done
    [ "$p1" != None ] || fail "$kind try $t: the nodes did not start"
    victim=$p1
    if [ $kind = agent ]; then
      victim=$(pgrep -f -- "node --server .* --run $id --attempt 1 --node 1 " | head -1)
      [ -n "$victim" ] || fail "agent try $t: no agent process for node 1"
    fi
    lat=$(kill_and_time "$victim" "$p0")
    echo "$lat" >> "$lat_file"
    python3 -c "import sys; sys.exit(0 if $lat < 10 else 1)" || fail "$kind try $t: node 0 still runs ${lat} s after node 1 died"
    wait_state "$id" SUCCEEDED 60
    reason=$(run_field "$id" 'd["attempts"][0]["reason"]')
    [ "$(run_field "$id" 'd["attempts"][0]["state"]')" = FAILED ] || fail "$kind try $t: attempt 1 not FAILED"
    [ "$(run_field "$id" 'd["attempts"][0]["failing_node"]')" = 1 ] || fail "$kind try $t: failing node is not 1: $reason"
    case "$kind:$reason" in
      command:*"node 1"*"signal 9"*|agent:*"node 1"*) ;;
      *) fail "$kind try $t: the reason does not name node 1 (and the signal): $reason";;
    esac
    [ "$(run_field "$id" 'len(d["attempts"])')" = 2 ] || fail "$kind try $t: not retried once"
    # Gone, or a zombie waiting for init to reap it (its parent, the killed agent, cannot): it runs nothing.
    for _ in $(seq 1 50); do alive "$p1" || break; sleep 0.1; done
    alive "$p1" && fail "$kind try $t: node 1's command (pid $p1) was left behind: $(ps -o pid=,stat=,args= -p "$p1")"
    echo "$kind try $t: node 0 stopped ${lat} s after node 1's $kind was killed; $reason"
  done
done
python3 - "$lat_file" "$tries" <<'PY'
import statistics, sys
v = sorted(float(x) for x in open(sys.argv[1]))
print("figure: gang stop after a node dies (%s command kills + %s agent kills): p50 %.2f s, max %.2f s" %
      (sys.argv[2], sys.argv[2], statistics.median(v), max(v)))
PY
