#!/usr/bin/env bash
# A CRITICAL run preempts a BEST_EFFORT one (8 pretended GPUs, both need all 8): the BEST_EFFORT attempt
# ends PREEMPTED with the reason, spends no retry (max_retries 0), its run is queued again and its
# second attempt continues from the step its first one saved (a file here, as resume: auto does with
# air-train's checkpoint); `air get run` shows both attempts and the reason.
source "$(dirname "$0")/lib/common.bash"
# The commands coordinate through files of this test's host folder, which a sandboxed command cannot see:
# this test is about the queue, not isolation (tests/e2e/tenant_hostile.sh is), so the sandbox is off.
export AIR_SANDBOX=off
export AIR_LOCAL_GPUS=8
ck="$E2E_TMP/checkpoint"

cat > "$E2E_TMP/be.yaml" <<YAML
experiment_name: sched-best-effort
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 8
priority_class: BEST_EFFORT
max_retries: 0
command: |
  step=\$(cat $ck 2>/dev/null || echo 0)
  echo "resuming at step \$step"
  for i in \$(seq \$((step + 1)) 40); do echo "step \$i"; echo \$i > $ck; sleep 0.1; done
YAML
cat > "$E2E_TMP/crit.yaml" <<YAML
experiment_name: sched-critical
compute:
  accelerator_type: GPU_8xH100
  num_accelerators: 8
priority_class: CRITICAL
command: sleep 2
YAML

be=$(submit "$E2E_TMP/be.yaml")
wait_state "$be" RUNNING 30
for _ in $(seq 1 100); do [ "$(cat "$ck" 2>/dev/null || echo 0)" -ge 5 ] && break; sleep 0.1; done
crit=$(submit "$E2E_TMP/crit.yaml")
wait_state "$crit" SUCCEEDED 60
wait_state "$be" SUCCEEDED 60

"$AIR" get run "$be" > "$E2E_TMP/be.txt"
grep -q "^Attempt 1: PREEMPTED" "$E2E_TMP/be.txt" || { cat "$E2E_TMP/be.txt"; fail "attempt 1 is not PREEMPTED"; }
grep -q "^  reason: preempted by CRITICAL run $crit" "$E2E_TMP/be.txt" || { cat "$E2E_TMP/be.txt"; fail "no reason"; }
grep -q "^Attempt 2: SUCCEEDED" "$E2E_TMP/be.txt" || { cat "$E2E_TMP/be.txt"; fail "attempt 2 did not succeed"; }
grep -q "^  Priority *BEST_EFFORT in pool 'default'" "$E2E_TMP/be.txt" || fail "no Priority row"
"$AIR" logs "$be" --attempt 2 > "$E2E_TMP/a2.log"
resumed=$(sed -n 's/^resuming at step \([0-9]*\)$/\1/p' "$E2E_TMP/a2.log")
[ -n "$resumed" ] && [ "$resumed" -gt 0 ] || { cat "$E2E_TMP/a2.log"; fail "attempt 2 did not resume"; }
crit_start=$(run_field "$crit" 'd["attempts"][0]["started_at_ms"]')
be_end=$(run_field "$be" 'd["attempts"][0]["ended_at_ms"]')
[ "$crit_start" -ge "$be_end" ] || fail "the CRITICAL run started before the preempted attempt gave its GPUs back"
echo "ok: BEST_EFFORT run $be preempted by CRITICAL run $crit, queued again, resumed at step $resumed"
