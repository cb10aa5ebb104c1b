#!/usr/bin/env bash
# Node agents killed mid-run (kill -9 of both agents of a 2-node run that prints numbered lines), then
# restarted: an agent is not re-attached to a running command (its death takes the command with it: the
# guardian kills the group), so the attempt fails naming the agent and the retry starts fresh agents, which
# run the command again. Exactly-once holds per attempt: the first attempt's logs are clean prefixes (lines
# 1..k in order, none twice) and the retried attempt's logs hold exactly lines 1..N. Prints the figure.
# FAULT_LINES (default 50,000); bench/faults.sh runs 200,000.
source "$(dirname "$0")/lib/common.bash"

lines=${FAULT_LINES:-50000}
pause=$(python3 -c "print(round(6 / ($lines / 1000), 3))")  # about 6 s of printing
numbered_workload "$E2E_TMP/agents.yaml" fault-agent-kill "$lines" "$pause" 1

start=$(date +%s.%N)
id=$(submit "$E2E_TMP/agents.yaml")
wait_state "$id" RUNNING 30
sleep 2
# Each agent has a guardian (a fork with the same command line): the agents are the ones whose parent is
# not one of them.
matched=$(pgrep -f -- "node --server .* --run $id --attempt 1 --node " || true)
victims=""
for p in $matched; do
  pp=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null || echo 0)
  case " $(echo $matched) " in *" $pp "*) ;; *) victims="$victims $p" ;; esac
done
[ "$(echo $victims | wc -w)" = 2 ] || fail "expected 2 agents of attempt 1, found: $victims (matched: $(echo $matched))"
kill -9 $victims
t_kill=$(date +%s.%N)
for _ in $(seq 1 300); do
  [ "$(run_field "$id" 'len(d["attempts"])')" = 2 ] && break
  sleep 0.1
done
[ "$(run_field "$id" 'len(d["attempts"])')" = 2 ] || fail "no second attempt after the agents were killed"
restart=$(python3 -c "print(round($(date +%s.%N) - $t_kill, 2))")
reason=$(run_field "$id" 'd["attempts"][0]["reason"]')
case $reason in *agent*) ;; *) fail "attempt 1's reason does not name the agent: $reason" ;; esac
wait_state "$id" SUCCEEDED 300
secs=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
prefix_total=0
for n in 0 1; do
  "$AIR" logs "$id" --attempt 1 --node $n --tail 1000000000 > "$E2E_TMP/a1_node$n.log"
  k=$(python3 - "$E2E_TMP/a1_node$n.log" "$n" <<'PY'
import sys
path, node = sys.argv[1], sys.argv[2]
n = 0
for line in open(path):
    if not line.startswith(f"node {node} line "):
        continue
    n += 1
    if line.strip() != f"node {node} line {n}":
        sys.exit(f"attempt 1, node {node}: line {n} is {line.strip()!r}")
print(n)
PY
) || fail "attempt 1's log of node $n is not a clean prefix"
  prefix_total=$((prefix_total + k))
  "$AIR" logs "$id" --attempt 2 --node $n --tail 1000000000 > "$E2E_TMP/node$n.log"
  expect_numbered_log "$E2E_TMP/node$n.log" $n "$lines" "attempt 2, node $n"
done
echo "figure: both agents kill -9'd mid-run: attempt 1 FAILED ($reason), retry started ${restart} s after the kill; attempt 1 logs clean prefixes ($prefix_total lines), attempt 2 exactly 1..$lines per node (0 lost, 0 duplicated); run ${secs} s"
echo "ok: run $id"
