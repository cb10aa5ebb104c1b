#!/usr/bin/env bash
# A node that hangs instead of exiting (its command SIGSTOPs itself, like a rank stuck in a collective):
# with stall_timeout_minutes the attempt fails naming the stalled node, the stopped process is killed,
# and the retry succeeds. Prints how long after the last line the stall was detected.
source "$(dirname "$0")/lib/common.bash"

marker="air-fault-stall-$$"
# 0.05 minutes = 3 s.
cat > "$E2E_TMP/stall.yaml" <<YAML
experiment_name: fault-stall
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  if [ "\$AIR_ATTEMPT" = 1 ]; then
    if [ "\$NODE_RANK" = 1 ]; then echo "last words"; exec -a $marker bash -c 'kill -STOP \$\$'; fi
    for i in \$(seq 1 200); do echo "node 0 tick \$i"; sleep 0.5; done
  fi
  echo "attempt \$AIR_ATTEMPT ok"
stall_timeout_minutes: 0.05
max_retries: 1
YAML

id=$(submit "$E2E_TMP/stall.yaml")
t0=$(date +%s.%N)
wait_state "$id" SUCCEEDED 60
reason=$(run_field "$id" 'd["attempts"][0]["reason"]')
ended=$(run_field "$id" 'd["attempts"][0]["ended_at_ms"]')
running=$(run_field "$id" 'd["attempts"][0]["nodes"][1]["running_at_ms"]')
case "$reason" in *"node 1 stalled"*) ;; *) fail "attempt 1's reason does not name the stalled node: $reason";; esac
[ "$(run_field "$id" 'd["attempts"][0]["failing_node"]')" = 1 ] || fail "failing node is not 1"
[ "$(run_field "$id" 'len(d["attempts"])')" = 2 ] || fail "the stalled attempt was not retried"
"$AIR" logs "$id" --node 0 | grep -q "attempt 2 ok" || fail "the retry did not run"
for _ in $(seq 1 100); do pgrep -f "$marker" > /dev/null || break; sleep 0.1; done
pgrep -f "$marker" > /dev/null && fail "the stopped process was left behind: $(pgrep -af "$marker")"
echo "figure: stalled node detected and attempt ended $(python3 -c "print(round(($ended - $running) / 1000, 1))") s after it started (stall_timeout 3 s); reason: $reason"
echo "ok: run $id"
