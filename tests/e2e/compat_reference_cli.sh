#!/usr/bin/env bash
# A user of Databricks' air drives every verb with the reference's flags and reads `-o json` as the reference
# prints it: each output is checked against schemas/cli-output.schema.json (written from the reference), and
# the reference's combination rules and messages hold (issue 28; docs/cli.md, "Reference flag/key -> ours").
source "$(dirname "$0")/lib/common.bash"
python3 -c 'import jsonschema' 2>/dev/null || { echo "skip: python3-jsonschema is not installed"; exit 125; }

SCHEMA="$(cd "$(dirname "$0")/../.." && pwd)/schemas/cli-output.schema.json"
# check DEF FILE: every JSON document (one per line for JSON lines, else the whole file) validates as $defs/DEF.
check() {
  python3 - "$SCHEMA" "$1" "$2" <<'PY' || fail "$2 is not a valid '$1' (schema above)"
import json, sys, jsonschema
schema, name, path = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
text = open(path).read()
docs = [json.loads(l) for l in text.splitlines() if l.strip()] if name.endswith("event") else [json.loads(text)]
assert docs, "no output"
for d in docs:
    try:
        jsonschema.validate(d, {"$ref": "#/$defs/" + name, "$defs": schema["$defs"]})
    except jsonschema.ValidationError as e:
        print(json.dumps(d)[:400], "\n", e.message, file=sys.stderr)
        sys.exit(1)
PY
}

proj="$E2E_TMP/proj"
mkdir -p "$proj"
echo 'print("hello from train.py")' > "$proj/train.py"
# The public docs' flat code_source and an int environment version would be rejected by an older parser.
cat > "$proj/train.yaml" <<'YAML'
experiment_name: compat-ref
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  root_path: .
command: |
  cd "$CODE_SOURCE_PATH" && python3 train.py
  for i in 1 2 3; do echo "line $i of node $NODE_RANK"; done
  [ "$NODE_RANK" = 1 ] && echo "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"
  true
max_retries: 0
mlflow_run_name: compat_ref-run
YAML

# run --dry-run -o json, with an override written the way the reference trims it.
"$AIR" run -f "$proj/train.yaml" --dry-run --override "timeout_minutes = 45" -o json > "$E2E_TMP/dry.json"
check run_dry "$E2E_TMP/dry.json"
[ "$(json_get "$E2E_TMP/dry.json" 'd["timeout_minutes"]')" = 45 ] || fail "the override did not apply"
"$AIR" run -f "$proj/train.yaml" --dry-run 2> "$E2E_TMP/dry.err" > /dev/null
grep -q '^Dry run: configuration for "compat-ref" is valid; not submitting.$' "$E2E_TMP/dry.err" ||
  fail "no reference dry-run line: $(cat "$E2E_TMP/dry.err")"

# run --watch -o json: SUBMITTED, STATUS, LOG/ALERT lines and the final envelope, all JSON lines.
"$AIR" run -f "$proj/train.yaml" --watch --idempotency-key compat-key-1 -o json > "$E2E_TMP/watch.jsonl" ||
  fail "run --watch failed: $(tail -5 "$E2E_TMP/watch.jsonl")"
check watch_event "$E2E_TMP/watch.jsonl"
id=$(head -1 "$E2E_TMP/watch.jsonl" | json_get - 'd["run_id"]')
[ "$(tail -1 "$E2E_TMP/watch.jsonl" | json_get - 'd["status"]')" = SUCCEEDED ] || fail "final envelope not SUCCEEDED"
grep '"type":"LOG"' "$E2E_TMP/watch.jsonl" | grep -q 'hello from train.py' || fail "no LOG event in the watch stream"

# The same idempotency key returns the same run; plain run -o json is the reference's envelope.
"$AIR" run -f "$proj/train.yaml" --idempotency-key compat-key-1 -o json > "$E2E_TMP/again.json"
check run "$E2E_TMP/again.json"
[ "$(json_get "$E2E_TMP/again.json" 'd["run_id"]')" = "$id" ] || fail "the idempotency key gave a new run"

# get: the reference's fields.
"$AIR" get "$id" -o json > "$E2E_TMP/get.json"
check get "$E2E_TMP/get.json"
[ "$(json_get "$E2E_TMP/get.json" 'd["attempt_number"]')" = 0 ] || fail "attempt_number is not 0-based"

# logs: --retry 0 --lines 50 -o json gives LOG lines and an ALERT before the fatal one.
"$AIR" logs "$id" --node 1 --retry 0 --lines 50 -o json > "$E2E_TMP/logs.jsonl"
check log_event "$E2E_TMP/logs.jsonl"
python3 - "$E2E_TMP/logs.jsonl" <<'PY' || fail "logs -o json: wrong events"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
lines = [e["line"] for e in ev if e["type"] == "LOG"]
assert lines[-4:] == ["line 1 of node 1", "line 2 of node 1", "line 3 of node 1",
                      "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB"], lines
i = [e["type"] for e in ev].index("ALERT")
assert ev[i + 1]["type"] == "LOG" and ev[i + 1]["line"] == ev[i]["line"], ev[i:i + 2]
assert all(e["node"] == 1 for e in ev)
PY
[ -z "$("$AIR" logs "$id" --lines 0)" ] || fail "--lines 0 printed something"
[ "$("$AIR" logs "$id" --tail 1)" = "line 3 of node 0" ] || fail "--tail is not --lines"
[ "$("$AIR" logs "$id" --attempt 1 --lines 1)" = "line 3 of node 0" ] || fail "--attempt 1 is not --retry 0"
"$AIR" logs "$id" --download-to "$E2E_TMP/dl" > /dev/null 2>&1 || fail "--download-to failed"
grep -q "line 3 of node 1" "$E2E_TMP/dl/logs/node_1.log" || fail "no DIR/logs/node_1.log"

# The reference's combination rules, in its words; the error envelope on stdout with -o json.
expect_usage() {  # expect_usage MESSAGE ARGS...
  local msg=$1; shift
  local rc=0
  "$AIR" "$@" -o json > "$E2E_TMP/err.json" 2> /dev/null || rc=$?
  [ "$rc" = 2 ] || fail "air $* exited $rc, not 2"
  check error_envelope "$E2E_TMP/err.json"
  [ "$(json_get "$E2E_TMP/err.json" 'd["error"]["code"]')" = INVALID_ARGS ] || fail "air $*: not INVALID_ARGS"
  json_get "$E2E_TMP/err.json" 'd["error"]["message"]' | grep -qF -- "$msg" || fail "air $*: $(cat "$E2E_TMP/err.json")"
}
expect_usage "--download-to writes complete logs, so it cannot be combined with --lines or --minutes" \
  logs "$id" --download-to "$E2E_TMP/x" --lines 5
expect_usage "cannot combine --lines with --minutes" logs "$id" --lines 5 --minutes 3
expect_usage "invalid --node -1: must not be negative" logs "$id" --node -1
expect_usage "invalid retry 3: available retries are 0 to 0" logs "$id" --retry 3
expect_usage "invalid --node 5: run has 2 node(s), indexed 0 to 1" logs "$id" --node 5
expect_usage "cannot combine JOB_RUN_ID arguments with --all" cancel "$id" --all
expect_usage "provide at least one JOB_RUN_ID, or use --all" cancel
expect_usage "unsupported --filter key \"colour\"" list --filter colour=red
expect_usage "invalid --limit 0: must be > 0" list --limit 0

rc=0
"$AIR" get nosuchrun -o json > "$E2E_TMP/nf.json" 2> /dev/null || rc=$?
[ "$rc" = 1 ] || fail "get of an unknown run exited $rc"
check error_envelope "$E2E_TMP/nf.json"
[ "$(json_get "$E2E_TMP/nf.json" 'd["error"]["kind"]')" = NOT_FOUND ] || fail "unknown run is not NOT_FOUND"

# list with the reference's flags.
"$AIR" list --all-status --all-users --limit 5 --filter "experiment=COMPAT-*" --filter "user=$(id -un)" \
  --filter accelerator_type=cpu --filter num_accelerators=2 -o json > "$E2E_TMP/list.json"
check list "$E2E_TMP/list.json"
[ "$(json_get "$E2E_TMP/list.json" '[r["run_id"] for r in d["runs"]]')" = "['$id']" ] || fail "list filters"
"$AIR" list --all-status --filter user=somebody-else -o json | json_get - 'len(d["runs"])' | grep -qx 0 ||
  fail "a user filter for another user matched"

# cancel --all -y with the reference's JSON; a running run gets cancelled.
sed -e 's/experiment_name: compat-ref/experiment_name: compat-long/' -e 's/^  true$/  sleep 600/' \
  "$proj/train.yaml" > "$proj/long.yaml"
long=$(submit "$proj/long.yaml")
wait_state "$long" RUNNING 60
"$AIR" cancel --all -y -o json > "$E2E_TMP/cancel.json" 2> "$E2E_TMP/cancel.err"
check cancel "$E2E_TMP/cancel.json"
[ "$(json_get "$E2E_TMP/cancel.json" 'd["cancelled"]')" = "['$long']" ] || fail "cancel --all: $(cat "$E2E_TMP/cancel.json")"
grep -q "$long" "$E2E_TMP/cancel.err" || fail "cancel --all printed no preview"
wait_state "$long" CANCELED 40
"$AIR" cancel --all -y -o json > "$E2E_TMP/none.json"
check cancel "$E2E_TMP/none.json"

# Profiles: auth login writes ~/.databrickscfg (here DATABRICKS_CONFIG_FILE) and -p reaches the workspace.
url=$(json_get "$AIR_HOME/server.json" 'd["url"]')
json_get "$AIR_HOME/server.json" 'd["token"]' | "$AIR" auth login --host "$url" -p compat --token-stdin > /dev/null
grep -q '^\[compat\]$' "$DATABRICKS_CONFIG_FILE" || fail "no [compat] profile written"
[ "$(stat -c %a "$DATABRICKS_CONFIG_FILE")" = 600 ] || fail "the profile file is not 0600"
"$AIR" auth profiles | grep -q "^compat \*" || fail "auth profiles does not list compat as the default"
"$AIR" -p compat get "$id" -o json > /dev/null || fail "-p compat does not reach the workspace"
DATABRICKS_CONFIG_PROFILE=compat "$AIR" list --all-status -o json > /dev/null || fail "DATABRICKS_CONFIG_PROFILE"
rc=0
"$AIR" -p nosuch list > /dev/null 2> "$E2E_TMP/nosuch.err" || rc=$?
[ "$rc" = 2 ] && grep -q "unknown profile 'nosuch'" "$E2E_TMP/nosuch.err" || fail "an unknown profile is not an error"
token=$(json_get "$AIR_HOME/server.json" 'd["token"]')
! grep -rqF "$token" "$E2E_TMP"/*.json "$E2E_TMP"/*.jsonl "$E2E_TMP"/*.err || fail "a token appeared in the output"
echo "ok: compat_reference_cli ($id)"
