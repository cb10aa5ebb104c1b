#!/usr/bin/env bash
# Submission order survives a workspace restart: six 8-GPU runs wait behind a running one (on a CPU
# machine that pretends to have 8 GPUs); the workspace is killed and comes back; they start one after
# another in the order they were submitted (run ids are random, so id order would not give it).
source "$(dirname "$0")/lib/common.bash"
# The commands coordinate through files of this test's host folder, which a sandboxed command cannot see:
# this test is about the queue, not isolation (tests/e2e/tenant_hostile.sh is), so the sandbox is off.
export AIR_SANDBOX=off
export AIR_LOCAL_GPUS=8

gang() {  # gang FILE COMMAND
  cat > "$1" <<YAML
experiment_name: sched-order
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 8
command: $2
max_retries: 0
YAML
}
gang "$E2E_TMP/blocker.yaml" "while [ ! -e $E2E_TMP/go ]; do sleep 0.1; done"  # holds the GPUs until told
gang "$E2E_TMP/short.yaml" "sleep 0.5"

blocker=$(submit "$E2E_TMP/blocker.yaml")
wait_state "$blocker" RUNNING 30
ids=()
for _ in $(seq 1 6); do ids+=("$(submit "$E2E_TMP/short.yaml")"); done
[ "$(run_field "${ids[5]}" 'd["queue_position"]')" = 6 ] || fail "the sixth run is not 6th in the queue"

pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
kill -9 "$pid"
"$AIR" list >/dev/null    # starts the workspace again on demand
[ "$(json_get "$AIR_HOME/server.json" 'd["pid"]')" != "$pid" ] || fail "the workspace was not restarted"
for k in 0 1 2 3 4 5; do
  [ "$(run_field "${ids[$k]}" 'd["queue_position"]')" = $((k + 1)) ] || \
    { "$AIR" list; fail "after the restart run ${ids[$k]} is not at position $((k + 1))"; }
done

touch "$E2E_TMP/go"
prev=0
for id in "${ids[@]}"; do
  wait_state "$id" SUCCEEDED 60
  s=$(run_field "$id" 'd["attempts"][0]["started_at_ms"]')
  [ "$s" -gt "$prev" ] || fail "run $id started before a run submitted earlier"
  prev=$s
done
echo "ok: 6 queued runs started in submission order across a workspace kill -9 (ids: ${ids[*]})"
