#!/usr/bin/env bash
# `air cancel` leaves no process behind: each node's command starts children and grandchildren (one of
# them ignoring SIGTERM); after the cancel the process table holds none of them and the run is CANCELED.
source "$(dirname "$0")/lib/common.bash"

marker="air-e2e-cancel-$$"
cat > "$E2E_TMP/cancel.yaml" <<YAML
experiment_name: e2e-cancel
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  bash -c 'trap "" TERM; exec -a $marker-stubborn sleep 1000' &
  bash -c 'exec -a $marker-child sleep 1000' &
  echo started
  wait
max_retries: 0
YAML

id=$(submit "$E2E_TMP/cancel.yaml")
for _ in $(seq 1 100); do
  [ "$(pgrep -fc "$marker" || true)" -ge 4 ] && break
  sleep 0.1
done
[ "$(pgrep -fc "$marker" || true)" -ge 4 ] || fail "the commands' children did not start: $(pgrep -af "$marker")"
"$AIR" cancel "$id" 2>&1 | grep -q "Successfully requested cancellation for run $id" || fail "cancel did not confirm"
wait_state "$id" CANCELED 40
for _ in $(seq 1 150); do
  pgrep -f "$marker" >/dev/null || break
  sleep 0.1
done
if pgrep -f "$marker" >/dev/null; then pgrep -af "$marker"; fail "processes survived the cancel"; fi
for n in 0 1; do
  pid=$(run_field "$id" 'd["attempts"][0]["nodes"]['$n']["pid"]')
  [ "$pid" = None ] || ! kill -0 "$pid" 2>/dev/null || fail "node $n's command (pid $pid) is still alive"
done
"$AIR" cancel "$id" | grep -q "had already ended" || fail "a second cancel should say the run ended"
"$AIR" cancel nosuchrun >/dev/null 2>&1 && fail "cancelling an unknown run should fail"
echo "ok: run $id canceled, no process left"
