#!/usr/bin/env bash
# Quotas on a CPU machine that pretends to have 8 GPUs (docs/scheduler.md "Quotas"): group ml is held to 4
# GPUs in server.conf. Its members' six 1-GPU runs never run more than 4 at once, the others wait saying
# why; an 8-GPU run of ml is refused at submit with the numbers; only admins set quotas (`air quotas`).
# Then borrowing on: ml's runs take the idle GPUs past its quota, and bob's run takes two of them back by
# preemption (the borrowed runs wait again, no retry spent).
source "$(dirname "$0")/lib/common.bash"
export AIR_SANDBOX=off AIR_LOCAL_GPUS=8  # the commands wait on files of this test's folder
start_server() {
  "$AIR" server --port 0 --single-trust-domain > "$E2E_TMP/server.out" 2>&1 &
  for _ in $(seq 100); do "$AIR" server status > /dev/null 2>&1 && break; sleep 0.1; done
  URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
}
as() {  # as TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
printf '[quotas]\ngroup ml = 4 gpus\n' > "$AIR_HOME/server.conf"
start_server
"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
"$AIR" groups create ml > /dev/null
"$AIR" groups add-member ml alice > /dev/null

one() {  # one FILE GPUS COMMAND
  local type=GPU_1xH100; [ "$2" = 8 ] && type=GPU_8xH100
  cat > "$1" <<YAML
experiment_name: quota
compute:
  accelerator_type: $type
  num_accelerators: $2
command: $3
timeout_minutes: 5
max_retries: 0
YAML
}
running_of() {  # running_of USER: how many of USER's runs hold GPUs now
  "$AIR" -o json list --all-users | json_get - "sum(1 for r in d['runs'] if r['user'] == '$1' and r['status'] == 'RUNNING')"
}
ids=()
for k in $(seq 0 5); do
  one "$E2E_TMP/m$k.yaml" 1 "while [ ! -e $E2E_TMP/go$k ]; do sleep 0.1; done"
  ids+=("$(as "$ALICE" -o json run -f "$E2E_TMP/m$k.yaml" | json_get - 'd["run_id"]')")
done
for k in 0 1 2 3; do wait_state "${ids[$k]}" RUNNING 30; done
sleep 0.5
[ "$(running_of alice)" = 4 ] || fail "group ml runs $(running_of alice) runs, its quota is 4 GPUs"
"$AIR" get run "${ids[4]}" > "$E2E_TMP/m4.txt"
grep -q "PENDING  (waiting: quota of group ml, 4 of 4 GPUs in use" "$E2E_TMP/m4.txt" ||
  { cat "$E2E_TMP/m4.txt"; fail "the held run does not say its quota holds it"; }
# Larger than the quota: refused at submit, with the numbers.
one "$E2E_TMP/big.yaml" 8 "sleep 1"
as "$ALICE" run -f "$E2E_TMP/big.yaml" > "$E2E_TMP/big.out" 2>&1 && fail "an 8-GPU run of a group held to 4 was accepted"
grep -q "the run needs 8 GPUs, but the quota of group ml allows 4 at once" "$E2E_TMP/big.out" ||
  fail "the refusal has no numbers: $(cat "$E2E_TMP/big.out")"
# Quotas: everyone lists them, only admins set them.
"$AIR" quotas list | grep -q "^group  ml .* 4 .*server.conf" || fail "quotas list: $("$AIR" quotas list)"
as "$BOB" quotas set group ml --gpus 8 > "$E2E_TMP/bobset.out" 2>&1 && fail "bob set a quota"
grep -q "only workspace admins" "$E2E_TMP/bobset.out" || fail "no reason: $(cat "$E2E_TMP/bobset.out")"
# The held runs start as GPUs of ml free, never more than 4 at once.
for k in 0 1 2 3 4 5; do
  touch "$E2E_TMP/go$k"
  wait_state "${ids[$k]}" SUCCEEDED 30
  n=$(running_of alice)
  [ "$n" -le 4 ] || fail "group ml ran $n runs at once"
done
"$AIR" -o json usage --by group | json_get - '{r["key"]: r["attempts"] for r in d["rows"]}' | grep -q "'ml': 6" ||
  fail "usage by group: $("$AIR" usage --by group)"
"$AIR" server stop > /dev/null
wait

# Borrowing on: idle GPUs lent past the quota, taken back for a run within its quota.
printf '[quotas]\ngroup ml = 4 gpus\n[fair_share]\nborrowing = true\n' > "$AIR_HOME/server.conf"
start_server
ids=()
for k in $(seq 0 7); do
  one "$E2E_TMP/b$k.yaml" 1 "while [ ! -e $E2E_TMP/bgo$k ]; do sleep 0.1; done"
  ids+=("$(as "$ALICE" -o json run -f "$E2E_TMP/b$k.yaml" | json_get - 'd["run_id"]')")
  wait_state "${ids[$k]}" RUNNING 30  # one at a time: start order is submit order
done
[ "$(running_of alice)" = 8 ] || fail "borrowing: ml runs $(running_of alice) of 8 idle GPUs"
one "$E2E_TMP/bob.yaml" 2 "sleep 1"
bob=$(as "$BOB" -o json run -f "$E2E_TMP/bob.yaml" | json_get - 'd["run_id"]')
wait_state "$bob" SUCCEEDED 60
preempted=0
for id in "${ids[@]}"; do
  st=$(run_field "$id" 'd["attempts"][0]["state"]')
  if [ "$st" = PREEMPTED ]; then
    preempted=$((preempted + 1))
    run_field "$id" 'd["attempts"][0]["reason"]' | grep -q "preempted to give borrowed quota back to run $bob" ||
      fail "the preempted attempt does not say why: $(run_field "$id" 'd["attempts"][0]["reason"]')"
  fi
done
[ "$preempted" = 2 ] || fail "$preempted borrowed runs were stopped for bob's 2-GPU run, not 2"
for k in $(seq 0 7); do touch "$E2E_TMP/bgo$k"; done
for id in "${ids[@]}"; do wait_state "$id" SUCCEEDED 60; done
echo "ok: ml held to 4 GPUs, an 8-GPU run refused at submit; with borrowing 8 ran and 2 were handed back to bob"
