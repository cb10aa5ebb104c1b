#!/usr/bin/env bash
# The workspace unreachable for a while (killed, restarted FAULT_OUTAGE seconds later, default 5; bench
# 30): the agents of a 2-node run keep the command's lines in their spool and catch up once it is back;
# nothing is lost. Prints how many lines the workspace was behind and how long the catch-up took.
source "$(dirname "$0")/lib/common.bash"

outage=${FAULT_OUTAGE:-5}
rate=200                       # lines per second per node
lines=$(( (outage + 8) * rate ))
cat > "$E2E_TMP/outage.yaml" <<YAML
experiment_name: fault-outage
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  python3 -u -c '
  import sys, time
  t0 = time.time()
  for i in range(1, $lines + 1):
      print("node %s line %d" % (sys.argv[1], i), flush=True)
      time.sleep(max(0, t0 + i / $rate - time.time()))
  ' \$NODE_RANK
max_retries: 0
YAML

id=$(submit "$E2E_TMP/outage.yaml")
wait_state "$id" RUNNING 30
sleep 2
pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
stored_before=$("$AIR" logs "$id" --node 0 --no-follow --tail 1000000000 | wc -l)
kill -9 "$pid"
sleep "$outage"
"$AIR" list > /dev/null  # restarts it
t_back=$(date +%s.%N)
# The command printed about rate lines/s all along; behind = printed so far - stored right after restart.
printed=$(( stored_before + outage * rate ))
stored_now=$("$AIR" logs "$id" --node 0 --no-follow --tail 1000000000 | wc -l)
behind=$((printed - stored_now))
caught=""
for _ in $(seq 1 300); do
  now_lines=$("$AIR" logs "$id" --node 0 --no-follow --tail 1000000000 | wc -l)
  expect=$(python3 -c "print(int($stored_before + ($(date +%s.%N) - $t_back + $outage) * $rate * 0.97))")
  if [ "$now_lines" -ge "$expect" ] || [ "$now_lines" -ge "$lines" ]; then
    caught=$(python3 -c "print(round($(date +%s.%N) - $t_back, 2))"); break
  fi
  sleep 0.1
done
[ -n "$caught" ] || fail "the workspace did not catch up within 30 s of its restart"
wait_state "$id" SUCCEEDED 120
for n in 0 1; do
  "$AIR" logs "$id" --node $n --tail 1000000000 > "$E2E_TMP/node$n.log"
  seq 1 "$lines" | sed "s/^/node $n line /" | cmp -s - "$E2E_TMP/node$n.log" ||
    fail "node $n's log is not exactly lines 1..$lines after the outage ($(wc -l < "$E2E_TMP/node$n.log") lines)"
done
echo "figure: workspace down ${outage} s during a 2-node run: about $behind lines behind per node at restart, caught up ${caught} s later, 0 lost, 0 duplicated"
echo "ok: run $id"
