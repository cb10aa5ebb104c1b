#!/usr/bin/env bash
# Two tenants, one workspace, through the API (issue 40, items 3-7; tenant_hostile.sh tries the same from
# inside a run): alice (not an admin) runs a workload WITH CODE through `air run --watch`; bob tries her
# snapshot digest (a run naming it, GET/HEAD/PUT /snapshots), her volume names (a volume in her schema,
# squatting main.default/air_checkpoints before her), her run, and forged audit parameters (query against
# body). Each fails, answering as if her objects did not exist, naming no owner; the audit log shows each
# refusal as bob's. A dry-run naming someone else's volume says whose it is.
source "$(dirname "$0")/lib/common.bash"
command -v curl > /dev/null || { echo "skip: curl not installed"; exit 125; }

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
as() {  # as USER_TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
api() {  # api TOKEN METHOD PATH [BODY] -> prints "STATUS BODY"
  local tok=$1 method=$2 path=$3 body=${4:-}
  local args=(-s -o "$E2E_TMP/api.body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok")
  [ -n "$body" ] && args+=(-H "Content-Type: application/json" --data-binary "$body")
  local code
  code=$(curl "${args[@]}" "$URL$path")
  echo "$code $(cat "$E2E_TMP/api.body" 2>/dev/null)"
}
expect() {  # expect WHAT STATUS PATTERN -- the last api answer in $R
  case "$R" in "$2 "*) ;; *) fail "$1: expected $2, got: $R" ;; esac
  [ -z "$3" ] || printf '%s' "$R" | grep -q -- "$3" || fail "$1: the answer does not say '$3': $R"
  printf '%s' "$R" | grep -q alice && fail "$1: the answer names alice: $R"
  return 0
}

"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')

# bob squats main.default/air_checkpoints before alice: main.default is the admin's, CREATE_VOLUME by grant.
as "$BOB" fs mkdir dbfs:/Volumes/main/default/air_checkpoints > "$E2E_TMP/squat.out" 2>&1 && fail "bob made main.default.air_checkpoints"
grep -q "lacks CREATE_VOLUME on schema main.default" "$E2E_TMP/squat.out" || fail "squat refusal: $(cat "$E2E_TMP/squat.out")"
"$AIR" volumes grant main.default alice CREATE_VOLUME | grep -q "Granted CREATE_VOLUME on main.default to alice" || fail "admin grant"

# alice's workload with code: a snapshot of her project, her volume named in env_variables.
proj="$E2E_TMP/proj"
mkdir -p "$proj"
printf 'echo "code-ok from $(basename "$CODE_SOURCE_PATH")"\n' > "$proj/train.sh"
cat > "$proj/train.yaml" <<'YAML'
experiment_name: alice-train
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
code_source:
  type: snapshot
  snapshot:
    root_path: .
env_variables:
  OUT: /Volumes/main/default/air_checkpoints/run1
command: sh "$CODE_SOURCE_PATH/train.sh"
max_retries: 0
YAML
as "$ALICE" run -f "$proj/train.yaml" --watch > "$E2E_TMP/alice_run.out" 2>&1 ||
  fail "alice (not an admin) could not run code: $(cat "$E2E_TMP/alice_run.out")"
grep -q "code-ok" "$E2E_TMP/alice_run.out" || fail "alice's code did not run: $(cat "$E2E_TMP/alice_run.out")"
grep -q "check AIR_TOKEN" "$E2E_TMP/alice_run.out" && fail "a token hint: $(cat "$E2E_TMP/alice_run.out")"
A=$(as "$ALICE" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
DIGEST=$(as "$ALICE" -o json get run "$A" | json_get - 'd["snapshot_digest"]')
[ ${#DIGEST} = 64 ] || fail "no digest on alice's run: '$DIGEST'"
as "$ALICE" volumes list | grep -q "^main.default.air_checkpoints *owner alice" || fail "the volume is not alice's"
# Her unchanged tree uploads nothing the second time.
as "$ALICE" run -f "$proj/train.yaml" > "$E2E_TMP/again.out" 2>&1 || fail "second run: $(cat "$E2E_TMP/again.out")"
grep -q "already in the workspace" "$E2E_TMP/again.out" || fail "an unchanged tree was uploaded again: $(cat "$E2E_TMP/again.out")"

# bob and her digest: every answer is the one for a digest nobody uploaded.
NEVER=$(printf 'never uploaded' | sha256sum | cut -d' ' -f1)
R=$(api "$BOB" GET "/api/air/v1/snapshots/$DIGEST"); expect "bob GETs her snapshot" 404 ""
R2=$(api "$BOB" GET "/api/air/v1/snapshots/$NEVER")
[ "${R//$DIGEST/D}" = "${R2//$NEVER/D}" ] || fail "GET tells her digest from a new one: '$R' vs '$R2'"
for d in "$DIGEST" "$NEVER"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -I -H "Authorization: Bearer $BOB" "$URL/api/air/v1/snapshots/$d")
  [ "$code" = 404 ] || fail "bob's HEAD of $d: $code"
done
printf 'bob guesses' > "$E2E_TMP/guess"
R=$(curl -s -w ' %{http_code}' -X PUT -H "Authorization: Bearer $BOB" --data-binary @"$E2E_TMP/guess" "$URL/api/air/v1/snapshots/$DIGEST")
R2=$(curl -s -w ' %{http_code}' -X PUT -H "Authorization: Bearer $BOB" --data-binary @"$E2E_TMP/guess" "$URL/api/air/v1/snapshots/$NEVER")
case "$R" in *" 400") ;; *) fail "bob's PUT under her digest: $R" ;; esac
[ "${R//$DIGEST/D}" = "${R2//$NEVER/D}" ] || fail "PUT tells her digest from a new one: '$R' vs '$R2'"
submit_body() {  # submit_body DIGEST: a CPU workload naming that snapshot
  python3 -c 'import json, sys; print(json.dumps({"workload_yaml": "experiment_name: b\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: ls\n", "file_name": "b.yaml", "snapshot_digest": sys.argv[1]}))' "$1"
}
R=$(api "$BOB" POST /api/air/v1/runs "$(submit_body "$DIGEST")"); expect "bob's run naming her digest" 400 "SNAPSHOT_MISSING"
R2=$(api "$BOB" POST /api/air/v1/runs "$(submit_body "$NEVER")")
[ "${R//$DIGEST/D}" = "${R2//$NEVER/D}" ] || fail "submit tells her digest from a new one: '$R' vs '$R2'"

# bob and her run, her volume, her schema.
R=$(api "$BOB" GET "/api/air/v1/runs/$A"); expect "bob gets her run" 404 "run $A not found"
R=$(api "$BOB" POST "/api/air/v1/runs/$A/cancel"); expect "bob cancels her run" 404 "not found"
R=$(api "$BOB" GET /api/2.0/fs/directories/Volumes/main/default/air_checkpoints); expect "bob lists her volume" 404 "does not exist"
R=$(api "$BOB" GET /api/2.1/unity-catalog/volumes/main.default.air_checkpoints); expect "bob gets her volume" 404 "does not exist"
as "$ALICE" fs mkdir dbfs:/Volumes/main/labs/data > /dev/null || fail "alice's own schema"
R=$(api "$BOB" PUT /api/2.0/fs/directories/Volumes/main/labs/bobs); expect "bob makes a volume in her schema" 403 "lacks USE_SCHEMA"
"$AIR" volumes grant main.default bob CREATE_VOLUME > /dev/null
R=$(api "$BOB" PUT /api/2.0/fs/directories/Volumes/main/default/air_checkpoints/x); expect "bob writes her volume" 409 "already exists"

# Forged audit parameters: bob's scope in the body, hers in the query (and the reverse).
as "$ALICE" secrets create-scope hers > /dev/null
printf 'alice-value' | as "$ALICE" secrets put-secret hers k > /dev/null 2>&1
as "$BOB" secrets create-scope his > /dev/null
printf 'bob-value' | as "$BOB" secrets put-secret his k > /dev/null 2>&1
R=$(api "$BOB" GET "/api/2.0/secrets/get?scope=hers&key=k" '{"scope": "his", "key": "k"}')
case "$R" in "200 "*) ;; *) fail "bob's own secret: $R" ;; esac
R=$(api "$BOB" GET "/api/2.0/secrets/get?scope=his&key=k" '{"scope": "hers", "key": "k"}')
case "$R" in "403 "*) ;; *) fail "bob read her secret through the body: $R" ;; esac

# A dry-run naming a volume someone else owns says whose it is.
cat > "$proj/w.yaml" <<'YAML'
experiment_name: alice-writes
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: echo hi > /Volumes/main/bob/out/x
YAML
as "$BOB" fs mkdir dbfs:/Volumes/main/bob/out > /dev/null
as "$BOB" volumes grant main.bob.out alice WRITE_VOLUME > /dev/null
as "$BOB" volumes grant main.bob.out alice READ_VOLUME > /dev/null
as "$ALICE" run -f "$proj/w.yaml" --dry-run > /dev/null 2> "$E2E_TMP/dry.err" || fail "dry-run: $(cat "$E2E_TMP/dry.err")"
grep -q "warning: the workload names /Volumes/main/bob/out, which is owned by 'bob', not by you ('alice')" "$E2E_TMP/dry.err" ||
  fail "no owner warning in the dry-run: $(cat "$E2E_TMP/dry.err")"
as "$ALICE" run -f "$proj/w.yaml" > /dev/null 2> "$E2E_TMP/submit.err" || fail "submit: $(cat "$E2E_TMP/submit.err")"
grep -q "warning: the workload names /Volumes/main/bob/out, which is owned by 'bob'" "$E2E_TMP/submit.err" ||
  fail "no owner warning at submit: $(cat "$E2E_TMP/submit.err")"

# The audit log: every refusal above, as bob's, with the object the handler used.
"$AIR" -o json audit --limit 100000 > "$E2E_TMP/audit.json"
python3 - "$E2E_TMP/audit.json" "$DIGEST" "$A" <<'PY' || fail "the audit log lacks a refusal"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["entries"]
digest, run = sys.argv[2], sys.argv[3]
def has(user, method, route, status, obj=None):
    ok = any(e["user"] == user and e["method"] == method and e["route"] == route and e["status"] == status and
             (obj is None or e["object"] == obj) for e in d)
    if not ok: print("missing:", user, method, route, status, obj, file=sys.stderr)
    return ok
checks = [
    has("bob", "PUT", "/api/2.0/fs/directories/Volumes/main/default/air_checkpoints", 403),
    has("bob", "GET", "/api/air/v1/snapshots/" + digest, 404),
    has("bob", "HEAD", "/api/air/v1/snapshots/" + digest, 404),
    has("bob", "PUT", "/api/air/v1/snapshots/" + digest, 400),
    has("bob", "POST", "/api/air/v1/runs", 400),
    has("bob", "GET", "/api/air/v1/runs/" + run, 404),
    has("bob", "POST", "/api/air/v1/runs/%s/cancel" % run, 404),
    has("bob", "GET", "/api/2.1/unity-catalog/volumes/main.default.air_checkpoints", 404),
    has("bob", "PUT", "/api/2.0/fs/directories/Volumes/main/labs/bobs", 403),
    has("bob", "PUT", "/api/2.0/fs/directories/Volumes/main/default/air_checkpoints/x", 409),
    has("bob", "GET", "/api/2.0/secrets/get", 200, "his/k"),
    has("bob", "GET", "/api/2.0/secrets/get", 403, "hers/k"),
]
# Nothing of bob's is logged under another name, and every entry names someone.
checks.append(all(e["user"] for e in d))
checks.append(not any(e["user"] != "bob" and e["route"] == "/api/2.0/secrets/get" and e["object"] == "his/k" for e in d))
sys.exit(0 if all(checks) else 1)
PY
for t in "$ALICE" "$BOB"; do grep -qF "$t" "$E2E_TMP/audit.json" && fail "the audit log holds a token"; done
echo "tenant_hostile_api: ok"
