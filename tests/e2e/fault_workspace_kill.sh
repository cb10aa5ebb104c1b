#!/usr/bin/env bash
# kill -9 of the workspace, several times, during a 2-node run that prints numbered lines: each time it is
# restarted (on its port, by the next CLI call), the agents re-attach and ship what they spooled; the run
# finishes and every node's log holds exactly lines 1..N (0 lost, 0 duplicated). Prints the figure.
# FAULT_LINES (default 50,000) and FAULT_KILLS (default 2); bench/faults.sh runs 200,000 lines, 5 kills.
source "$(dirname "$0")/lib/common.bash"

lines=${FAULT_LINES:-50000}
kills=${FAULT_KILLS:-2}
# The lines come in bursts of 1,000 spread over about 3 s per kill plus 3 s, so the kills land mid-run.
pause=$(python3 -c "print(round((3 * $kills + 3) / ($lines / 1000), 3))")
numbered_workload "$E2E_TMP/kill.yaml" fault-workspace-kill "$lines" "$pause" 0

start=$(date +%s.%N)
id=$(submit "$E2E_TMP/kill.yaml")
wait_state "$id" RUNNING 30
down_max=0
for k in $(seq 1 "$kills"); do
  sleep 2
  pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
  kill -9 "$pid"
  t0=$(date +%s.%N)
  sleep 0.5  # the agents go on printing and spooling while nobody listens
  "$AIR" list > /dev/null  # starts the workspace again on demand
  new=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
  [ "$new" != "$pid" ] || fail "kill $k: the workspace was not restarted"
  down=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
  down_max=$(python3 -c "print(max($down_max, $down))")
done
wait_state "$id" SUCCEEDED 300
secs=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")
lost=0 dup=0
for n in 0 1; do
  log="$E2E_TMP/node$n.log"
  "$AIR" logs "$id" --node $n --tail 1000000000 > "$log"
  l=$(comm -23 <(seq 1 "$lines" | sed "s/^/node $n line /" | sort) <(sort -u "$log") | wc -l)
  d=$(($(wc -l < "$log") - $(sort -u "$log" | wc -l)))
  lost=$((lost + l)) dup=$((dup + d))
  expect_numbered_log "$log" $n "$lines" "node $n (lost $l, duplicated $d)"
done
echo "figure: workspace kill -9 x$kills during a 2-node run of $lines lines per node: lost $lost, duplicated $dup, run ${secs} s, longest outage ${down_max} s"
echo "ok: run $id"
