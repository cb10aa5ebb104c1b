#!/usr/bin/env bash
# Volumes a team shares (docs/volumes.md): alice makes a volume (in schema main.team, hers as its first
# volume's maker) and puts a file; to bob it does not exist: he can neither list, read nor write it, nor name
# it in his run (refused at submit as making it would be); alice grants
# READ_VOLUME; bob reads but cannot write, and his run sees the volume read-only (its own volume
# read-write, nothing else under /Volumes); `air audit` shows each step.
source "$(dirname "$0")/lib/common.bash"
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
as() {  # as USER_TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')

# alice's volume and file: she owns it.
echo "alice's data" > "$E2E_TMP/a.txt"
as "$ALICE" fs mkdir dbfs:/Volumes/main/team/data
as "$ALICE" fs cp "$E2E_TMP/a.txt" dbfs:/Volumes/main/team/data/a.txt 2> /dev/null
as "$ALICE" volumes list | grep -q "^main.team.data *owner alice" || fail "alice's volumes: $(as "$ALICE" volumes list 2>&1)"

# bob can neither list, read nor write it; /Volumes shows him nothing of it.
expect_refused() {  # expect_refused WHAT PATTERN air-args... (as bob)
  local what=$1 pattern=$2; shift 2
  as "$BOB" "$@" > "$E2E_TMP/refused.out" 2>&1 && fail "bob could $what"
  grep -q "$pattern" "$E2E_TMP/refused.out" || fail "$what: the refusal does not say '$pattern': $(cat "$E2E_TMP/refused.out")"
}
# A volume bob holds nothing on answers as one that does not exist (issue 40), naming no owner; writing
# there is refused as making it would be (schema main.team is alice's).
expect_refused "list alice's volume" "/Volumes/main/team/data does not exist" \
  fs ls dbfs:/Volumes/main/team/data
expect_refused "read alice's file" "/Volumes/main/team/data/a.txt does not exist" \
  fs cp dbfs:/Volumes/main/team/data/a.txt "$E2E_TMP/stolen.txt"
expect_refused "write alice's volume" "schema main.team does not exist or bob lacks USE_SCHEMA on it" \
  fs cp "$E2E_TMP/a.txt" dbfs:/Volumes/main/team/data/bob.txt
expect_refused "grant himself" "volume main.team.data does not exist" volumes grant main.team.data bob READ_VOLUME
grep -q alice "$E2E_TMP/refused.out" && fail "a refusal names the owner: $(cat "$E2E_TMP/refused.out")"
[ -z "$(as "$BOB" fs ls dbfs:/Volumes)" ] || fail "bob sees alice's catalog: $(as "$BOB" fs ls dbfs:/Volumes)"
[ -z "$(as "$BOB" volumes list)" ] || fail "bob's volume list: $(as "$BOB" volumes list)"

# bob's run naming alice's volume is refused at submit, naming the volume and the privilege.
proj="$E2E_TMP/proj"
mkdir -p "$proj"
cat > "$proj/b.yaml" <<'YAML'
experiment_name: bob-reads
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  cat /Volumes/main/team/data/a.txt
  echo "from bob" > /Volumes/main/team/data/bob.txt && echo ALICE-WRITABLE || echo alice-read-only
  echo "mine" > /Volumes/main/bob/out/b.txt && echo own-writable
  ls /Volumes/main
max_retries: 0
YAML
as "$BOB" run -f "$proj/b.yaml" > "$E2E_TMP/bob_submit.out" 2>&1 && fail "bob's run naming alice's volume was accepted"
grep -q "the workload names /Volumes/main/team/data, which does not exist and its owner may not create: .*schema main.team does not exist or bob lacks USE_SCHEMA" \
  "$E2E_TMP/bob_submit.out" || fail "submit refusal: $(cat "$E2E_TMP/bob_submit.out")"

# alice grants READ_VOLUME: bob reads, still cannot write; his run sees it read-only.
as "$ALICE" volumes grant main.team.data bob READ_VOLUME | grep -q "Granted READ_VOLUME on main.team.data to bob" ||
  fail "grant"
as "$ALICE" volumes grants main.team.data | grep -q "^bob *READ_VOLUME" || fail "grants: $(as "$ALICE" volumes grants main.team.data)"
as "$BOB" fs cp dbfs:/Volumes/main/team/data/a.txt "$E2E_TMP/read.txt" 2> /dev/null
cmp -s "$E2E_TMP/a.txt" "$E2E_TMP/read.txt" || fail "bob read something else"
expect_refused "write with READ_VOLUME only" "lacks WRITE_VOLUME on volume main.team.data (owner: alice) (has READ_VOLUME)" \
  fs cp "$E2E_TMP/a.txt" dbfs:/Volumes/main/team/data/bob.txt
B=$(as "$BOB" -o json run -f "$proj/b.yaml" | json_get - 'd["run_id"]')
wait_state "$B" SUCCEEDED 60
as "$BOB" logs "$B" --no-follow > "$E2E_TMP/bob_run.log"
grep -q "alice's data" "$E2E_TMP/bob_run.log" || fail "bob's run could not read: $(cat "$E2E_TMP/bob_run.log")"
grep -q "alice-read-only" "$E2E_TMP/bob_run.log" || fail "bob's run wrote alice's volume: $(cat "$E2E_TMP/bob_run.log")"
grep -q "own-writable" "$E2E_TMP/bob_run.log" || fail "bob's run could not write his own volume: $(cat "$E2E_TMP/bob_run.log")"
[ ! -e "$AIR_HOME/volumes/main/team/data/bob.txt" ] || fail "a file appeared in alice's volume"
grep -q "volumes: /Volumes is .* only /Volumes/main/team/data (read-only) /Volumes/main/bob/out" \
  "$AIR_HOME/runs/$B/attempt_1/node_0/agent.log" || fail "node log: $(grep volumes "$AIR_HOME/runs/$B/attempt_1/node_0/agent.log")"
as "$BOB" volumes list | grep -q "^main.bob.out *owner bob" || fail "the volume bob's run named is not his"

# The audit log: the upload, the refusals, the grant.
"$AIR" -o json audit > "$E2E_TMP/audit.json"
python3 - "$E2E_TMP/audit.json" <<'PY' || fail "the audit log lacks a step"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["entries"]
def has(user, method, route, status, obj=None):
    ok = any(e["user"] == user and e["method"] == method and e["route"] == route and e["status"] == status and
             (obj is None or e["object"] == obj) for e in d)
    if not ok: print("missing:", user, method, route, status, obj, file=sys.stderr)
    return ok
perm = "/api/2.1/unity-catalog/permissions/volume/main.team.data"
checks = [
    has("alice", "PUT", "/api/2.0/fs/files/Volumes/main/team/data/a.txt", 204),
    has("bob", "PUT", "/api/2.0/fs/files/Volumes/main/team/data/bob.txt", 403),
    has("bob", "PATCH", perm, 404, "bob +READ_VOLUME"),
    has("bob", "HEAD", "/api/2.0/fs/directories/Volumes/main/team/data", 404),
    has("bob", "POST", "/api/air/v1/runs", 403),
    has("alice", "PATCH", perm, 200, "bob +READ_VOLUME"),
    has("bob", "POST", "/api/air/v1/runs", 201),
]
sys.exit(0 if all(checks) else 1)
PY
for t in "$ALICE" "$BOB"; do grep -qF "$t" "$E2E_TMP/audit.json" && fail "the audit log holds a token"; done
echo "team_volumes: ok"
