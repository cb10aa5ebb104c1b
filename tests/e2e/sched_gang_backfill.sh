#!/usr/bin/env bash
# Issue 30's adversarial case on a CPU machine that pretends to have 8 GPUs: eight 1-GPU runs hold every
# GPU, an 8-GPU run arrives, then a stream of 1-GPU runs. The 8-GPU run must start as soon as the first
# eight end (its reservation), before any 1-GPU run submitted after it; while it waits, `air get run`
# says where it stands. Before issue 30 it waited for the whole stream to end.
source "$(dirname "$0")/lib/common.bash"
export AIR_LOCAL_GPUS=8

one() {  # one FILE NAME SECONDS GPUS
  local type=GPU_1xH100; [ "$4" = 8 ] && type=GPU_8xH100
  cat > "$1" <<YAML
experiment_name: $2
compute:
  accelerator_type: $type
  num_accelerators: $4
command: sleep $3
timeout_minutes: 1
max_retries: 0
YAML
}
one "$E2E_TMP/one.yaml" sched-one 10 1
one "$E2E_TMP/gang.yaml" sched-gang 2 8
one "$E2E_TMP/late.yaml" sched-late 6 1

first=()
for _ in $(seq 1 8); do first+=("$(submit "$E2E_TMP/one.yaml")"); done
gang=$(submit "$E2E_TMP/gang.yaml")
late=()
for _ in $(seq 1 6); do late+=("$(submit "$E2E_TMP/late.yaml")"); sleep 1; done

"$AIR" get run "$gang" > "$E2E_TMP/gang.txt"
grep -q "PENDING  (queued: position 1 of .*, waiting for 8 GPUs, reserved: . of 8 held, estimated start in" \
  "$E2E_TMP/gang.txt" || { cat "$E2E_TMP/gang.txt"; fail "the waiting gang does not say where it stands"; }
grep -q "^  Queue *position 1 of " "$E2E_TMP/gang.txt" || fail "air get run shows no Queue row"

wait_state "$gang" SUCCEEDED 60
gang_start=$(run_field "$gang" 'd["attempts"][0]["started_at_ms"]')
last_first_end=0
for id in "${first[@]}"; do
  wait_state "$id" SUCCEEDED 30
  e=$(run_field "$id" 'd["attempts"][0]["ended_at_ms"]')
  [ "$e" -gt "$last_first_end" ] && last_first_end=$e
done
for id in "${late[@]}"; do
  wait_state "$id" SUCCEEDED 60
  s=$(run_field "$id" 'd["attempts"][0]["started_at_ms"]')
  [ "$s" -ge "$gang_start" ] || fail "1-GPU run $id (submitted after the gang) started before it"
done
waited=$(( (gang_start - last_first_end) ))
[ "$waited" -lt 5000 ] || fail "the gang started $waited ms after the first eight runs ended"
echo "ok: the 8-GPU run started ${waited} ms after the GPUs it reserved were free, before all 6 later 1-GPU runs"
