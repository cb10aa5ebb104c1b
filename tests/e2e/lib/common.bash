# Shared by the run_*.sh scenarios: a private AIR_HOME, the air binary, JSON field access, waiting, cleanup.
# Each scenario sources this file; it is not a test itself (the e2e glob takes *.sh only).
set -euo pipefail

: "${AIR_BIN_DIR:?AIR_BIN_DIR must name the folder holding the air binary}"
AIR="$AIR_BIN_DIR/air"
[ -x "$AIR" ] || { echo "skip: $AIR not built"; exit 125; }
# The scenarios need the node agent (`air node`).
"$AIR" node --help >/dev/null 2>&1 || { echo "skip: this air has no 'node' verb"; exit 125; }

E2E_TMP="$(mktemp -d /tmp/air-e2e-XXXXXX)"
export AIR_HOME="$E2E_TMP/home"
export AIR_CONFIG_FILE="$E2E_TMP/no-config" DATABRICKS_CONFIG_FILE="$E2E_TMP/no-databrickscfg"
unset AIR_HOST AIR_TOKEN DATABRICKS_HOST DATABRICKS_TOKEN DATABRICKS_CONFIG_PROFILE
mkdir -p "$AIR_HOME"

cleanup() {
  local rc=$?
  # Runs still active (a re-submit, a failed check) are canceled first so that no agent outlives the test.
  # Every user's runs (the admin's token sees them all with --all-users).
  if "$AIR" server status >/dev/null 2>&1; then
    local ids
    ids=$("$AIR" -o json list --all-users 2>/dev/null | python3 -c 'import json,sys; print(" ".join(r["run_id"] for r in json.load(sys.stdin)["data"]["runs"]))' 2>/dev/null || true)
    # shellcheck disable=SC2086
    [ -n "$ids" ] && { "$AIR" cancel $ids >/dev/null 2>&1 || true; }
    for _ in $(seq 1 150); do
      [ "$("$AIR" -o json list --all-users 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["runs"]))' 2>/dev/null)" = 0 ] && break
      sleep 0.1
    done
  fi
  "$AIR" server stop >/dev/null 2>&1 || true
  if [ $rc -ne 0 ] && [ $rc -ne 125 ]; then
    echo "---- failure ($rc); workspace log:"; tail -n 40 "$AIR_HOME/server.log" 2>/dev/null || true
    for f in "$AIR_HOME"/runs/*/attempt_*/node_*.agent.log; do
      [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }
    done
  fi
  rm -rf "$E2E_TMP"
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# json_get FILE_OR_- PYTHON_EXPR: evaluates EXPR with `d` bound to the parsed JSON; an `-o json` envelope
# ({"v":1,"ts":...,"data":{...}}, docs/cli.md) is unwrapped, so `d` is its data.
json_get() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]) if sys.argv[1] != "-" else sys.stdin); d=d["data"] if isinstance(d, dict) and d.get("v") == 1 and "data" in d else d; print(eval(sys.argv[2]))' "$@"
}

run_field() {  # run_field ID EXPR
  "$AIR" -o json get run "$1" | json_get - "$2"
}

# wait_state ID STATE [SECONDS]
wait_state() {
  local id=$1 want=$2 secs=${3:-60} st=""
  for _ in $(seq 1 $((secs * 10))); do
    st=$(run_field "$id" 'd["state"]')
    [ "$st" = "$want" ] && return 0
    case "$st" in SUCCEEDED|FAILED|CANCELED|TIMED_OUT) [ "$st" != "$want" ] && fail "run $id ended $st, wanted $want";; esac
    sleep 0.1
  done
  fail "run $id is $st after ${secs}s, wanted $want"
}

# submit FILE [air run flags...] -> prints the run id
submit() {
  local f=$1; shift
  "$AIR" -o json run -f "$f" "$@" | json_get - 'd["run_id"]'
}

# numbered_workload FILE NAME LINES PAUSE MAX_RETRIES: a 2-node workload whose nodes print "node R line I"
# for I = 1..LINES, flushing every 1,000 lines and sleeping PAUSE seconds (the fault tests' log oracle).
numbered_workload() {
  cat > "$1" <<YAML
experiment_name: $2
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  python3 -u -c '
  import sys, time
  for i in range(1, $3 + 1):
      sys.stdout.write("node %s line %d\n" % (sys.argv[1], i))
      if i % 1000 == 0:
          sys.stdout.flush(); time.sleep($4)
  ' \$NODE_RANK
max_retries: $5
YAML
}

# expect_numbered_log LOG NODE LINES WHAT: LOG must be exactly "node NODE line I" for I = 1..LINES (the oracle
# of numbered_workload); else the first differences are shown and the test fails with "WHAT: ...".
expect_numbered_log() {
  local want="$1.want"
  seq 1 "$3" | sed "s/^/node $2 line /" > "$want"
  cmp -s "$want" "$1" || {
    diff "$want" "$1" | head -10 || true
    fail "$4: the log is not exactly lines 1..$3"; }
}
