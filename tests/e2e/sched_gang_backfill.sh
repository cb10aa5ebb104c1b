#!/usr/bin/env bash
# Issue 30's adversarial case on a CPU machine that pretends to have 8 GPUs: eight 1-GPU runs hold every
# GPU, an 8-GPU run arrives, then 1-GPU runs. The eight end one by one (each waits for its own file), and
# each freed GPU is held for the 8-GPU run instead of going to a later 1-GPU run (which is what happened
# before: the gang waited until the stream ended). While it waits, `air get run` says where it stands.
source "$(dirname "$0")/lib/common.bash"
# The commands coordinate through files of this test's host folder, which a sandboxed command cannot see:
# this test is about the queue, not isolation (tests/e2e/tenant_hostile.sh is), so the sandbox is off.
export AIR_SANDBOX=off
export AIR_LOCAL_GPUS=8

one() {  # one FILE NAME GPUS COMMAND
  local type=GPU_1xH100; [ "$3" = 8 ] && type=GPU_8xH100
  cat > "$1" <<YAML
experiment_name: $2
compute:
  accelerator_type: $type
  num_accelerators: $3
command: $4
timeout_minutes: 5
max_retries: 0
YAML
}
first=()
for k in 0 1 2 3 4 5 6 7; do
  one "$E2E_TMP/one$k.yaml" sched-one 1 "while [ ! -e $E2E_TMP/go$k ]; do sleep 0.1; done"
  first+=("$(submit "$E2E_TMP/one$k.yaml")")
done
one "$E2E_TMP/gang.yaml" sched-gang 8 "sleep 2"
one "$E2E_TMP/late.yaml" sched-late 1 "sleep 2"
gang=$(submit "$E2E_TMP/gang.yaml")
late=()
for _ in 1 2 3 4; do late+=("$(submit "$E2E_TMP/late.yaml")"); done

"$AIR" get run "$gang" > "$E2E_TMP/gang.txt"
grep -q "PENDING  (queued: position 1 of 5, waiting for 8 GPUs, reserved: 0 of 8 held, estimated start in" \
  "$E2E_TMP/gang.txt" || { cat "$E2E_TMP/gang.txt"; fail "the waiting gang does not say where it stands"; }
grep -q "^  Queue *position 1 of 5, estimated start " "$E2E_TMP/gang.txt" || fail "air get run shows no Queue row"
"$AIR" list | grep -q "^${late[3]} .* PENDING #5 " || { "$AIR" list; fail "air list does not show the place"; }

# Free the GPUs one at a time; none may go to a later 1-GPU run.
for k in 0 1 2 3 4 5 6; do
  touch "$E2E_TMP/go$k"
  wait_state "${first[$k]}" SUCCEEDED 30
  sleep 0.5
  for id in "${late[@]}"; do
    [ "$(run_field "$id" 'd["current_attempt"]')" = 0 ] || \
      { "$AIR" list; "$AIR" get run "$id"; "$AIR" get run "$gang"; fail "1-GPU run $id took a GPU reserved for the gang"; }
  done
done
held=$(run_field "$gang" 'd["gpus_reserved"]')
[ "$held" = 7 ] || fail "the gang holds $held GPUs, not 7"
touch "$E2E_TMP/go7"
wait_state "$gang" SUCCEEDED 60
gang_start=$(run_field "$gang" 'd["attempts"][0]["started_at_ms"]')
freed=$(run_field "${first[7]}" 'd["attempts"][0]["ended_at_ms"]')
for id in "${late[@]}"; do
  wait_state "$id" SUCCEEDED 60
  s=$(run_field "$id" 'd["attempts"][0]["started_at_ms"]')
  [ "$s" -ge "$gang_start" ] || fail "1-GPU run $id (submitted after the gang) started before it"
done
echo "ok: the 8-GPU run held 7 freed GPUs against 4 later 1-GPU runs and started $((gang_start - freed)) ms after the 8th was free"
