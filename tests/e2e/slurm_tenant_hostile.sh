#!/usr/bin/env bash
# A run is a route, on the 2-node Slurm cluster (issue 40; docs/security.md "Threat model"): alice's
# workload (a secret, a volume, code) runs as a Slurm job; bob's job tries every attack of tenant_hostile.sh
# (lib/tenant_attack.bash) from a node and finds and changes nothing; his API forgeries with her digest,
# her volume and forged audit parameters fail and are logged as his. As root (the test cluster needs it),
# each job is submitted as its owner's own account (sbatch --uid=air-u-<user>): Slurm's queue shows it,
# the agents and the commands run as it, alice's run folder is hers alone, and bob's account cannot read it.
source "$(dirname "$0")/lib/slurm.bash"
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }
command -v curl >/dev/null || { echo "skip: curl not installed"; exit 125; }
URL=$AIR_HOST
source "$(dirname "$0")/lib/tenant_attack.bash"

"$AIR" server status > "$E2E_TMP/status.txt"
grep -q "isolation: slurm backend: each node builds the run sandbox itself" "$E2E_TMP/status.txt" ||
  fail "status does not describe the Slurm isolation: $(cat "$E2E_TMP/status.txt")"
if [ "$(id -u)" = 0 ]; then
  grep -q "each job is submitted as its owner's own unix account (sbatch --uid=air-u-<user>)" "$E2E_TMP/status.txt" ||
    fail "status does not say whose account a job runs as: $(cat "$E2E_TMP/status.txt")"
fi

tenant_users
tenant_alice_starts
job_a=$(run_field "$A" 'd["attempts"][0]["job_id"]')
[ -n "$job_a" ] || fail "alice's run has no Slurm job"
tenant_bob_attacks
tenant_bob_found_nothing
tenant_bob_api_forgeries
job_b=$(run_field "$B" 'd["attempts"][0]["job_id"]')

if [ "$(id -u)" = 0 ]; then
  # Slurm's own view: each job is its owner's.
  [ "$(timeout 5 squeue -h -j "$job_a" -o '%u')" = air-u-alice ] || fail "alice's job runs as $(timeout 5 squeue -h -j "$job_a" -o '%u')"
  grep -q "bob runs as air-u-bob" "$E2E_TMP/bob.log" || fail "bob's command is not air-u-bob's"
  # Her node agents run as her account, outside the sandbox; nothing of hers runs as root.
  agents=$(node_procs slw1 "air node --slurm.*--run $A"; node_procs slw2 "air node --slurm.*--run $A")
  [ -n "$agents" ] || agents=$(pgrep -af "node --slurm .*--run $A" || true)
  [ -n "$agents" ] || fail "alice's node agent is not on any node"
  for pid in $(echo "$agents" | awk '{print $1}'); do
    [ "$(stat -c %U "/proc/$pid")" = air-u-alice ] || fail "alice's agent $pid runs as $(stat -c %U "/proc/$pid")"
  done
  [ "$(stat -c %U "/proc/$alice_pid")" = air-u-alice ] || fail "alice's command runs as $(stat -c %U "/proc/$alice_pid")"
  # Her run folder is hers alone: bob's account (his agent, outside any sandbox) cannot list or read it,
  # nor the workspace's own files; it may only pass through $AIR_HOME.
  [ "$(stat -c %U:%a "$ALICE_RUN_DIR/attempt_1")" = air-u-alice:700 ] ||
    fail "alice's attempt folder is $(stat -c %U:%a "$ALICE_RUN_DIR/attempt_1")"
  runuser -u air-u-alice -- ls "$ALICE_RUN_DIR/attempt_1/node_0/code" > /dev/null || fail "air-u-alice cannot list her own run folder"
  runuser -u air-u-bob -- ls "$ALICE_RUN_DIR/attempt_1" > /dev/null 2>&1 && fail "air-u-bob lists alice's run folder"
  runuser -u air-u-bob -- cat "$ALICE_RUN_DIR/attempt_1/node_0/code/train.py" > /dev/null 2>&1 && fail "air-u-bob reads alice's code"
  runuser -u air-u-bob -- ls "$AIR_HOME" > /dev/null 2>&1 && fail "air-u-bob lists \$AIR_HOME"
  runuser -u air-u-bob -- cat "$AIR_HOME/server.json" > /dev/null 2>&1 && fail "air-u-bob reads server.json"
  # An account that is not air's (nobody) cannot even enter $AIR_HOME.
  runuser -u air-u-bob -- stat "$AIR_HOME/runs" > /dev/null || fail "air-u-bob cannot pass through \$AIR_HOME"
  runuser -u nobody -- stat "$AIR_HOME/runs" > /dev/null 2>&1 && fail "nobody enters \$AIR_HOME"
  # bob's job ran as him, in Slurm's records while it is known.
  u=$(timeout 5 squeue -h --states=all -j "$job_b" -o '%u' 2>/dev/null || true)
  [ -z "$u" ] || [ "$u" = air-u-bob ] || fail "bob's job ran as $u"
fi
"$AIR" cancel "$A" > /dev/null
wait_state "$A" CANCELED 60

# A volume alice shares for writing: what her job makes in it (as air-u-alice, umask 022) bob's job (as
# air-u-bob, granted WRITE_VOLUME) may write into; the workspace opened the folder before submitting.
as "$ALICE" fs mkdir dbfs:/Volumes/main/alice/shared > /dev/null
as "$ALICE" volumes grant main.alice.shared bob READ_VOLUME > /dev/null
as "$ALICE" volumes grant main.alice.shared bob WRITE_VOLUME > /dev/null
one_job() {  # one_job TOKEN NAME COMMAND -> the job's log in $E2E_TMP/NAME.log
  printf 'experiment_name: %s\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: %s\nmax_retries: 0\n' \
    "$2" "$3" > "$E2E_TMP/$2.yaml"
  local id
  id=$(as "$1" -o json run -f "$E2E_TMP/$2.yaml" | json_get - 'd["run_id"]')
  wait_state "$id" SUCCEEDED 60
  as "$1" logs "$id" --no-follow > "$E2E_TMP/$2.log"
}
one_job "$ALICE" alice-ckpt "'umask 022; mkdir -p /Volumes/main/alice/shared/ckpt && echo alice > /Volumes/main/alice/shared/ckpt/a.txt && echo made as \$(id -un)'"
grep -q "made as air-u-alice" "$E2E_TMP/alice-ckpt.log" || [ "$(id -u)" != 0 ] || fail "alice's job: $(cat "$E2E_TMP/alice-ckpt.log")"
one_job "$BOB" bob-ckpt "'cd /Volumes/main/alice/shared/ckpt && echo bob > b.txt && echo bob >> a.txt && echo WROTE-OK'"
grep -q "WROTE-OK" "$E2E_TMP/bob-ckpt.log" || fail "bob (WRITE_VOLUME) cannot write into alice's folder: $(cat "$E2E_TMP/bob-ckpt.log")"
[ "$(cat "$AIR_HOME/volumes/main/alice/shared/ckpt/a.txt")" = "$(printf 'alice\nbob')" ] || fail "her file: $(cat "$AIR_HOME/volumes/main/alice/shared/ckpt/a.txt")"
echo "slurm_tenant_hostile: ok (jobs $job_a, $job_b)"
