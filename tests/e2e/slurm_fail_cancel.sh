#!/usr/bin/env bash
# Failure and cancel on the Slurm test cluster (jobs get whole nodes: --slurm-option=--exclusive):
# 1. node 1's command fails while node 0 sleeps: the attempt is gang-stopped, each attempt is its own
#    sbatch job, retried per max_retries, the run FAILED naming node 1; no job left in the queue.
# 2. a run waiting behind another is PENDING with Slurm's reason; canceling it removes it from the queue.
# 3. `air cancel` of a running run: CANCELED, the job leaves the queue, no process is left on either node.
source "$(dirname "$0")/lib/slurm.bash" --slurm-option=--exclusive

in_queue() { timeout 5 squeue -h -j "$1" -o '%i' 2>/dev/null | grep -qx "$1"; }
wait_gone_from_queue() {
  for _ in $(seq 1 150); do in_queue "$1" || return 0; sleep 0.1; done
  fail "Slurm job $1 is still in the queue: $(timeout 5 squeue -j "$1")"
}

marker="air-e2e-slurm-$$"
cat > "$E2E_TMP/fail.yaml" <<YAML
experiment_name: e2e-slurm-fail
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  echo "attempt \$AIR_ATTEMPT node \$NODE_RANK on \$(hostname)"
  if [ "\$NODE_RANK" = 1 ]; then echo "node 1 gives up" >&2; sleep 0.5; exit 3; fi
  exec -a $marker-fail sleep 300
max_retries: 1
YAML
start=$SECONDS
id=$(submit "$E2E_TMP/fail.yaml")
wait_state "$id" FAILED 60
echo "gang failure with one retry took $((SECONDS - start)) s"
"$AIR" -o json get run "$id" > "$E2E_TMP/fail.json"
[ "$(json_get "$E2E_TMP/fail.json" 'len(d["attempts"])')" = 2 ] || fail "expected 2 attempts (max_retries 1)"
jobs=$(json_get "$E2E_TMP/fail.json" '" ".join(a["job_id"] for a in d["attempts"])')
[ "$(echo $jobs | tr ' ' '\n' | sort -u | wc -l)" = 2 ] || fail "each attempt should be its own Slurm job: $jobs"
for k in 0 1; do
  [ "$(json_get "$E2E_TMP/fail.json" "d['attempts'][$k]['failing_node']")" = 1 ] || fail "attempt $k: failing node is not 1"
  [ "$(json_get "$E2E_TMP/fail.json" "d['attempts'][$k]['failing_exit_code']")" = 3 ] || fail "attempt $k: exit code is not 3"
done
msg=$(json_get "$E2E_TMP/fail.json" 'd["status_message"]')
echo "failed run: $msg"
echo "$msg" | grep -q "^node 1 .*code 3.*(after 2 attempts)" || fail "the run's message does not name node 1: $msg"
"$AIR" get run "$id" | grep -q "first failing node: 1 (exit code 3)" || fail "air get run does not name the failing node"
"$AIR" logs "$id" --attempt 2 --node 0 > "$E2E_TMP/a2n0.log" 2>/dev/null || true  # exits 1: the run FAILED
grep -q "^attempt 2 node 0 on node1$" "$E2E_TMP/a2n0.log" || fail "attempt 2's log of node 0 is wrong: $(cat "$E2E_TMP/a2n0.log")"
for j in $jobs; do wait_gone_from_queue "$j"; done
for _ in $(seq 1 50); do [ -z "$(node_procs slw1 "$marker-fail")" ] && break; sleep 0.1; done
[ -z "$(node_procs slw1 "$marker-fail")$(node_procs slw2 "$marker-fail")" ] || fail "node 0's command survived the gang stop"

cat > "$E2E_TMP/sleep.yaml" <<YAML
experiment_name: e2e-slurm-cancel
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  bash -c 'trap "" TERM; exec -a $marker-stubborn sleep 1000' &
  bash -c 'exec -a $marker-child sleep 1000' &
  echo "started on \$(hostname)"
  wait
max_retries: 0
YAML
a=$(submit "$E2E_TMP/sleep.yaml")
wait_state "$a" RUNNING 30
for _ in $(seq 1 100); do
  [ -n "$(node_procs slw1 "$marker-stubborn")" ] && [ -n "$(node_procs slw2 "$marker-stubborn")" ] && break; sleep 0.1
done
[ -n "$(node_procs slw1 "$marker-stubborn")" ] && [ -n "$(node_procs slw2 "$marker-stubborn")" ] ||
  fail "the commands did not start on both nodes"
job_a=$(run_field "$a" 'd["attempts"][0]["job_id"]')

# Both nodes are taken (exclusive): the next run waits in Slurm's queue and says why.
b=$(submit "$E2E_TMP/sleep.yaml")
msg=""
for _ in $(seq 1 50); do
  msg=$(run_field "$b" 'd["status_message"]')
  case "$msg" in "pending in the Slurm queue as job "*"(reason: "*) break;; esac
  sleep 0.1
done
echo "queued run: $msg"
case "$msg" in "pending in the Slurm queue as job "*"(reason: "*) ;; *) fail "a queued run says '$msg'";; esac
[ "$(run_field "$b" 'd["state"]')" = PENDING ] || fail "the queued run is not PENDING"
job_b=$(run_field "$b" 'd["attempts"][0]["job_id"]')
in_queue "$job_b" || fail "job $job_b is not in the queue"
"$AIR" cancel "$b" >/dev/null
wait_state "$b" CANCELED 20
wait_gone_from_queue "$job_b"

t0=$SECONDS
"$AIR" cancel "$a" 2>&1 | grep -q "Successfully requested cancellation for run $a" || fail "cancel did not confirm"
wait_state "$a" CANCELED 30
wait_gone_from_queue "$job_a"
for _ in $(seq 1 100); do
  [ -z "$(node_procs slw1 "$marker")$(node_procs slw2 "$marker")$(node_procs slw1 'air node')$(node_procs slw2 'air node')" ] && break
  sleep 0.1
done
left="$(node_procs slw1 "$marker")$(node_procs slw2 "$marker")$(node_procs slw1 'air node')$(node_procs slw2 'air node')"
[ -z "$left" ] || fail "processes left on the nodes after cancel: $left"
echo "ok: failure named node 1 over 2 jobs; queued run PENDING and canceled; running run canceled in $((SECONDS - t0)) s, nothing left"
