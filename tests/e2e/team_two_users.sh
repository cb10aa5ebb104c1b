#!/usr/bin/env bash
# Two people on one workspace (docs/security.md): the admin adds alice and bob with their own tokens; alice
# stores team/hf_token and runs a workload (with code) that reads it; bob can neither read the secret nor see, follow or
# cancel alice's run until alice grants it in permissions:; bob's run naming alice's scope is refused at
# submit; a revoked token stops working; `air audit` shows each step, and never a value or a token.
source "$(dirname "$0")/lib/common.bash"

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
as() {  # as USER_TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
VALUE="hf_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"

"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
"$AIR" users list > "$E2E_TMP/users.out"
grep -q "^.*alice" "$E2E_TMP/users.out" && grep -q "bob" "$E2E_TMP/users.out" || fail "users list: $(cat "$E2E_TMP/users.out")"
# A non-admin may not add users, and is told why.
as "$BOB" users add mallory > "$E2E_TMP/mallory.out" 2>&1 && fail "bob added a user"
grep -q "only workspace admins" "$E2E_TMP/mallory.out" || fail "no reason: $(cat "$E2E_TMP/mallory.out")"

# alice's scope and secret; she holds MANAGE as its creator.
as "$ALICE" secrets create-scope team > /dev/null
printf %s "$VALUE" | as "$ALICE" secrets put-secret team hf_token > /dev/null 2>&1
as "$ALICE" secrets list-acls team | grep -q "alice *MANAGE" || fail "the creator lacks MANAGE: $(as "$ALICE" secrets list-acls team)"

# bob cannot read the value, nor list the keys.
get_secret() {  # get_secret TOKEN -> "STATUS BODY"
  python3 - "$URL" "$1" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1] + "/api/2.0/secrets/get?scope=team&key=hf_token",
                             headers={"Authorization": "Bearer " + sys.argv[2]})
try:
    r = urllib.request.urlopen(req); print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
PY
}
get_secret "$BOB" > "$E2E_TMP/bob_get.out"
grep -q "^403 .*PERMISSION_DENIED.*lacks READ permission on secret scope 'team'" "$E2E_TMP/bob_get.out" ||
  fail "bob read the secret or got no reason: $(cat "$E2E_TMP/bob_get.out")"
grep -qF "$VALUE" "$E2E_TMP/bob_get.out" && fail "the refusal holds the value"
as "$BOB" secrets list-secrets team > "$E2E_TMP/bob_list.out" 2>&1 && fail "bob listed alice's keys"

proj="$E2E_TMP/proj"
mkdir -p "$proj"
# The workloads carry code (a snapshot of $proj): a non-admin's `air run` uploads it (issue 40: HEAD of a
# new digest once answered users 403, so no non-admin could run code).
printf 'echo code-ok\n' > "$proj/hello.sh"
workload() {  # workload FILE NAME [permissions yaml]
  cat > "$1" <<YAML
experiment_name: $2
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: |
  sh "\$CODE_SOURCE_PATH/hello.sh"
  [ "\$(printf %s "\$HF_TOKEN" | sha256sum | cut -d' ' -f1)" = "$(printf %s "$VALUE" | sha256sum | cut -d' ' -f1)" ] && echo token-ok
  for i in \$(seq 1 3000); do [ -f "$E2E_TMP/stop" ] && break; echo "tick \$i"; sleep 0.1; done
secrets:
  HF_TOKEN: team/hf_token
max_retries: 0
${3:-}
YAML
}
workload "$proj/a.yaml" team-a
A=$(AIR_HOST="$URL" AIR_TOKEN="$ALICE" "$AIR" -o json run -f "$proj/a.yaml" | json_get - 'd["run_id"]')
for _ in $(seq 1 300); do
  as "$ALICE" logs "$A" --no-follow 2>/dev/null | grep -q token-ok && break
  sleep 0.1
done
as "$ALICE" logs "$A" --no-follow | grep -q token-ok || fail "alice's run did not get her secret: $(as "$ALICE" logs "$A" --no-follow 2>&1 | head -5)"
as "$ALICE" logs "$A" --no-follow | grep -q code-ok || fail "alice's run did not run her code: $(as "$ALICE" logs "$A" --no-follow 2>&1 | head -5)"

# bob: alice's run is not his to see, follow or cancel.
as "$BOB" -o json list --all-users | json_get - '[r["run_id"] for r in d["runs"]]' | grep -q "$A" && fail "bob's list shows alice's run"
as "$BOB" get run "$A" > "$E2E_TMP/bob_get_run.out" 2>&1 && fail "bob got alice's run"
# A run bob may not view answers as one that does not exist (issue 40: no existence oracle, no owner named).
grep -q "run $A not found" "$E2E_TMP/bob_get_run.out" || fail "no reason: $(cat "$E2E_TMP/bob_get_run.out")"
grep -q alice "$E2E_TMP/bob_get_run.out" && fail "the refusal names the owner: $(cat "$E2E_TMP/bob_get_run.out")"
timeout 20 env AIR_HOST="$URL" AIR_TOKEN="$BOB" "$AIR" logs "$A" --follow > "$E2E_TMP/bob_follow.out" 2>&1 && fail "bob followed alice's run"
grep -q "not found" "$E2E_TMP/bob_follow.out" || fail "follow refusal: $(cat "$E2E_TMP/bob_follow.out")"
grep -q tick "$E2E_TMP/bob_follow.out" && fail "bob saw alice's log lines"
as "$BOB" cancel "$A" > "$E2E_TMP/bob_cancel.out" 2>&1 && fail "bob canceled alice's run"
grep -q "not found" "$E2E_TMP/bob_cancel.out" || fail "cancel refusal: $(cat "$E2E_TMP/bob_cancel.out")"
[ "$(as "$ALICE" -o json get run "$A" | json_get - 'd["state"]')" = RUNNING ] || fail "alice's run is no longer running"

# bob's own run naming alice's scope is refused at submit, naming the scope and the permission.
workload "$proj/b.yaml" bob-steals
as "$BOB" run -f "$proj/b.yaml" > "$E2E_TMP/bob_submit.out" 2>&1 && fail "bob's run with alice's secret was accepted"
grep -q "lacks READ permission on secret scope 'team'" "$E2E_TMP/bob_submit.out" || fail "submit refusal: $(cat "$E2E_TMP/bob_submit.out")"

# alice grants bob CAN_VIEW on a run: he sees and follows it, but may not cancel it.
workload "$proj/v.yaml" team-view "permissions:
  - user_name: bob
    level: CAN_VIEW"
V=$(AIR_HOST="$URL" AIR_TOKEN="$ALICE" "$AIR" -o json run -f "$proj/v.yaml" | json_get - 'd["run_id"]')
as "$BOB" -o json list --all-users | json_get - '[r["run_id"] for r in d["runs"]]' | grep -q "$V" || fail "bob cannot list the run he may view"
as "$BOB" -o json list | json_get - '[r["run_id"] for r in d["runs"]]' | grep -q "$V" && fail "air list (bob's own runs) shows alice's"
as "$BOB" -o json get run "$V" | json_get - 'd["user"]' | grep -qx alice || fail "bob cannot get the run he may view"
for _ in $(seq 1 300); do
  as "$BOB" logs "$V" --no-follow 2>/dev/null | grep -q "tick" && break
  sleep 0.1
done
as "$BOB" logs "$V" --no-follow | grep -q tick || fail "bob cannot read the logs he may view"
as "$BOB" cancel "$V" > "$E2E_TMP/bob_cancel_v.out" 2>&1 && fail "CAN_VIEW canceled a run"
grep -q "lacks CAN_MANAGE_RUN on run $V (owner: alice).*(you have CAN_VIEW)" "$E2E_TMP/bob_cancel_v.out" || fail "cancel refusal: $(cat "$E2E_TMP/bob_cancel_v.out")"

# ... and with CAN_MANAGE_RUN he may cancel it.
workload "$proj/m.yaml" team-manage "permissions:
  - user_name: bob
    level: CAN_MANAGE_RUN"
M=$(AIR_HOST="$URL" AIR_TOKEN="$ALICE" "$AIR" -o json run -f "$proj/m.yaml" | json_get - 'd["run_id"]')
as "$BOB" cancel "$M" > /dev/null 2>&1 || fail "CAN_MANAGE_RUN could not cancel"
wait_state_as() { for _ in $(seq 1 300); do [ "$(as "$1" -o json get run "$2" | json_get - 'd["state"]')" = "$3" ] && return 0; sleep 0.1; done; fail "run $2 is not $3"; }
wait_state_as "$ALICE" "$M" CANCELED

# A revoked token is refused on the next request; a removed user's token too.
as "$ALICE" -o json tokens create --lifetime 1h --comment e2e > "$E2E_TMP/t2.json"
T2=$(json_get "$E2E_TMP/t2.json" 'd["token_value"]'); T2_ID=$(json_get "$E2E_TMP/t2.json" 'd["token_id"]')
as "$T2" list > /dev/null || fail "a fresh token does not work"
as "$ALICE" tokens revoke "$T2_ID" > /dev/null
as "$T2" list > "$E2E_TMP/revoked.out" 2>&1 && fail "a revoked token still works"
grep -q "revoked" "$E2E_TMP/revoked.out" || fail "revoked: $(cat "$E2E_TMP/revoked.out")"
"$AIR" users remove bob > /dev/null
as "$BOB" list > /dev/null 2>&1 && fail "a removed user's token still works"

# alice ends her runs.
as "$ALICE" cancel "$A" "$V" > /dev/null 2>&1
wait_state_as "$ALICE" "$A" CANCELED

# The audit log: each step, who, the answer; no value, no token.
"$AIR" -o json audit > "$E2E_TMP/audit.json"
"$AIR" audit --user bob --since 1h > "$E2E_TMP/audit_bob.out"
python3 - "$E2E_TMP/audit.json" "$A" "$M" <<'PY' || fail "the audit log lacks a step"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["entries"]
run_a, run_m = sys.argv[2], sys.argv[3]
def has(user, method, route, status, obj=None):
    ok = any(e["user"] == user and e["method"] == method and e["route"] == route and e["status"] == status and
             (obj is None or e["object"] == obj) for e in d)
    if not ok: print("missing:", user, method, route, status, obj, file=sys.stderr)
    return ok
checks = [
    has("alice", "POST", "/api/2.0/secrets/scopes/create", 200, "team"),
    has("alice", "POST", "/api/2.0/secrets/put", 200, "team/hf_token"),
    has("bob", "GET", "/api/2.0/secrets/get", 403, "team/hf_token"),
    has("node:%s:1" % run_a, "GET", "/api/2.0/secrets/get", 200, "team/hf_token"),
    has("alice", "POST", "/api/air/v1/runs", 201),
    has("bob", "POST", "/api/air/v1/runs", 403),
    has("bob", "POST", "/api/air/v1/runs/%s/cancel" % run_a, 404),
    has("bob", "GET", "/api/air/v1/runs/%s" % run_a, 404),
    has("bob", "POST", "/api/air/v1/runs/%s/cancel" % run_m, 200),
    has("alice", "POST", "/api/2.0/token/delete", 200),
]
sys.exit(0 if all(checks) else 1)
PY
grep -q "bob" "$E2E_TMP/audit_bob.out" || fail "air audit --user bob: $(cat "$E2E_TMP/audit_bob.out")"
grep -qF "$VALUE" "$E2E_TMP/audit.json" && fail "the audit log holds the secret value"
for t in "$ALICE" "$BOB" "$T2"; do grep -qF "$t" "$E2E_TMP/audit.json" && fail "the audit log holds a token"; done
grep -rlaF "$VALUE" "$AIR_HOME" > /dev/null 2>&1 && fail "a file under AIR_HOME holds the value: $(grep -rlaF "$VALUE" "$AIR_HOME" | head -3)"
grep -rlaF "$ALICE" "$AIR_HOME" > /dev/null 2>&1 && fail "a file under AIR_HOME holds alice's token"
echo "team_two_users: ok"
