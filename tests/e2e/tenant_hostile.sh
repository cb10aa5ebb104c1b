#!/usr/bin/env bash
# A run is a route (issue 40, docs/security.md "Threat model"), local backend: alice's workload (a secret, a
# volume, code) is running; bob's workload knows every host path of the workspace and tries to read
# /proc/*/environ, $AIR_HOME (also by walking up from CODE_SOURCE_PATH), the blobs, alice's run folder,
# server.json and the key files, to write into alice's volume's host folder and to signal her processes.
# It finds and changes nothing: checked in bob's log and on the host. Then the same machine without a
# sandbox (AIR_SANDBOX=off): `air server status` says so, a second user's run is refused with the reason,
# and `--single-trust-domain` lets it start.
source "$(dirname "$0")/lib/common.bash"
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
"$AIR" server status > "$E2E_TMP/status.txt"
grep -q "isolation: local backend: every run's commands in a sandbox" "$E2E_TMP/status.txt" ||
  { echo "skip: this machine cannot build the run sandbox: $(cat "$E2E_TMP/status.txt")"; exit 125; }
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
source "$(dirname "$0")/lib/tenant_attack.bash"
tenant_users
tenant_alice_starts
tenant_bob_attacks
tenant_bob_found_nothing
"$AIR" cancel "$A" > /dev/null
wait_state "$A" CANCELED 30

# Without a sandbox on this machine: said at start and by status; a second user's run is refused, the
# admin's own still runs; --single-trust-domain lets everyone's start.
"$AIR" server stop > /dev/null
start_server() {  # start_server [flags...]: a foreground workspace on this AIR_HOME, without a sandbox
  AIR_SANDBOX=off "$AIR" server --port 0 "$@" > "$E2E_TMP/server.out" 2>&1 &
  for _ in $(seq 100); do "$AIR" server status > /dev/null 2>&1 && break; sleep 0.1; done
  URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
  ADMIN=$(json_get "$AIR_HOME/server.json" 'd["token"]')
}
start_server
grep -q "isolation: NONE on the local backend (AIR_SANDBOX=off)" "$E2E_TMP/server.out" ||
  fail "air server does not say there is no sandbox: $(cat "$E2E_TMP/server.out")"
"$AIR" server status | grep -q "isolation: NONE on the local backend" || fail "status: $("$AIR" server status)"
"$AIR" -o json server status | json_get - 'd["isolation"]["sandbox"]' | grep -qx False || fail "status -o json"
cat > "$E2E_TMP/plain.yaml" <<'YAML'
experiment_name: plain
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: echo plain-ok
max_retries: 0
YAML
as "$BOB" run -f "$E2E_TMP/plain.yaml" > "$E2E_TMP/refused.out" 2>&1 && fail "bob's run was accepted without a sandbox"
grep -q "cannot seal runs off from each other on the local backend (AIR_SANDBOX=off), and it has 3 users" \
  "$E2E_TMP/refused.out" || fail "the refusal does not say why: $(cat "$E2E_TMP/refused.out")"
grep -q "single-trust-domain" "$E2E_TMP/refused.out" || fail "the refusal does not name --single-trust-domain"
R=$(as "$ADMIN" -o json run -f "$E2E_TMP/plain.yaml" | json_get - 'd["run_id"]')
AIR_HOST="$URL" AIR_TOKEN="$ADMIN" wait_state "$R" SUCCEEDED 60
as "$ADMIN" logs "$R" --no-follow | grep -q "sandbox: none on this node (AIR_SANDBOX=off)" ||
  fail "the admin's run log does not say it ran without a sandbox"
"$AIR" server stop > /dev/null
wait
start_server --single-trust-domain
grep -q "single-trust-domain: every user's runs start anyway" "$E2E_TMP/server.out" || fail "$(cat "$E2E_TMP/server.out")"
R=$(as "$BOB" -o json run -f "$E2E_TMP/plain.yaml" | json_get - 'd["run_id"]')
AIR_HOST="$URL" AIR_TOKEN="$ADMIN" wait_state "$R" SUCCEEDED 60
"$AIR" server stop > /dev/null
wait
echo "tenant_hostile: ok"
