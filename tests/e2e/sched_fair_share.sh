#!/usr/bin/env bash
# Issue 44's team on a CPU machine that pretends to have 8 GPUs: alice submits 16 one-GPU runs, then bob
# one. Before fair share bob's run was 9th of 9 and waited for two waves of alice's; now it is first in the
# queue and starts on the next GPU that frees, before alice's 9th; alice's waiting runs say why they wait.
source "$(dirname "$0")/lib/common.bash"
# The commands coordinate through files of this test's folder (a sandboxed command cannot see it): this
# test is about the queue, so the sandbox is off and the workspace is one trust domain.
export AIR_SANDBOX=off AIR_LOCAL_GPUS=8
"$AIR" server --port 0 --single-trust-domain > "$E2E_TMP/server.out" 2>&1 &
for _ in $(seq 100); do "$AIR" server status > /dev/null 2>&1 && break; sleep 0.1; done
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
as() {  # as TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')

one() {  # one FILE NAME COMMAND
  cat > "$1" <<YAML
experiment_name: $2
compute:
  accelerator_type: GPU_1xH100
  num_accelerators: 1
command: $3
timeout_minutes: 5
max_retries: 0
YAML
}
sweep=()
for k in $(seq 0 15); do
  one "$E2E_TMP/a$k.yaml" sweep "while [ ! -e $E2E_TMP/go$k ]; do sleep 0.1; done"
  sweep+=("$(as "$ALICE" -o json run -f "$E2E_TMP/a$k.yaml" | json_get - 'd["run_id"]')")
done
for k in $(seq 0 7); do wait_state "${sweep[$k]}" RUNNING 30; done
one "$E2E_TMP/b.yaml" interactive "sleep 1"
bob=$(as "$BOB" -o json run -f "$E2E_TMP/b.yaml" | json_get - 'd["run_id"]')
sleep 0.5
[ "$(run_field "$bob" 'd["queue_position"]')" = 1 ] || { "$AIR" get run "$bob"; fail "bob's run is not first in the queue"; }
"$AIR" get run "${sweep[8]}" > "$E2E_TMP/a8.txt"
grep -q "PENDING  (queued: position 2 of 9, behind 1 run of a user with less recent use, waiting for 1 GPU" "$E2E_TMP/a8.txt" ||
  { cat "$E2E_TMP/a8.txt"; fail "alice's waiting run does not say why it waits"; }

touch "$E2E_TMP/go0"  # one GPU frees: it goes to bob, not to alice's 9th
wait_state "$bob" SUCCEEDED 30
bob_start=$(run_field "$bob" 'd["attempts"][0]["started_at_ms"]')
freed=$(run_field "${sweep[0]}" 'd["attempts"][0]["ended_at_ms"]')
for k in $(seq 1 15); do touch "$E2E_TMP/go$k"; done
for k in $(seq 8 15); do
  wait_state "${sweep[$k]}" SUCCEEDED 60
  s=$(run_field "${sweep[$k]}" 'd["attempts"][0]["started_at_ms"]')
  [ "$s" -ge "$bob_start" ] || fail "alice's run ${sweep[$k]} started before bob's"
done
# Usage records: alice's 16 attempts and bob's one, in GPU-seconds (admin's view).
"$AIR" -o json usage > "$E2E_TMP/usage.json"
json_get "$E2E_TMP/usage.json" '{r["key"]: r["attempts"] for r in d["rows"]}' | grep -q "'alice': 16" ||
  fail "usage: $(cat "$E2E_TMP/usage.json")"
json_get "$E2E_TMP/usage.json" '{r["key"]: r["attempts"] for r in d["rows"]}' | grep -q "'bob': 1" ||
  fail "usage: $(cat "$E2E_TMP/usage.json")"
# bob sees only his own usage, and may not ask for alice's.
as "$BOB" -o json usage | json_get - '[r["key"] for r in d["rows"]]' | grep -qx "\['bob'\]" || fail "bob sees others' usage"
as "$BOB" usage --user alice > "$E2E_TMP/bob_usage.out" 2>&1 && fail "bob read alice's usage"
grep -q "only workspace admins" "$E2E_TMP/bob_usage.out" || fail "no reason: $(cat "$E2E_TMP/bob_usage.out")"
echo "ok: bob's run started $((bob_start - freed)) ms after the first GPU freed, ahead of alice's 8 waiting runs"
