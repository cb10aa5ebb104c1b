#!/usr/bin/env bash
# Gang semantics: node 1 fails at once while node 0 would sleep for minutes. The workspace stops node 0
# within seconds, records node 1 as the first failing node with its exit code and last lines, and retries
# the whole attempt max_retries times (3 attempts in all), each attempt's logs kept apart.
source "$(dirname "$0")/lib/common.bash"

# Other e2e scripts run at the same time (ctest -j) and sleep too: this run's commands carry a marker.
marker="air-gang-retry-$$"
cat > "$E2E_TMP/gang.yaml" <<YAML
experiment_name: e2e-gang
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
env_variables:
  AIR_GANG_MARKER: $marker
command: |
  echo "attempt \$AIR_ATTEMPT node \$NODE_RANK"
  if [ "\$NODE_RANK" = 1 ]; then echo "about to fail" >&2; sleep 0.3; exit 3; fi
  sleep 300
max_retries: 2
YAML

start=$(date +%s)
id=$(submit "$E2E_TMP/gang.yaml")
wait_state "$id" FAILED 90
elapsed=$(( $(date +%s) - start ))
[ "$elapsed" -lt 60 ] || fail "three gang-stopped attempts took ${elapsed}s: node 0 was not stopped promptly"

"$AIR" -o json get run "$id" > "$E2E_TMP/run.json"
[ "$(json_get "$E2E_TMP/run.json" 'len(d["attempts"])')" = 3 ] || fail "expected 3 attempts"
for k in 0 1 2; do
  [ "$(json_get "$E2E_TMP/run.json" "d['attempts'][$k]['failing_node']")" = 1 ] || fail "attempt $k: failing node is not 1"
  [ "$(json_get "$E2E_TMP/run.json" "d['attempts'][$k]['failing_exit_code']")" = 3 ] || fail "attempt $k: exit code is not 3"
  [ "$(json_get "$E2E_TMP/run.json" "d['attempts'][$k]['nodes'][0]['state']")" != RUNNING ] || fail "attempt $k: node 0 still running"
done
json_get "$E2E_TMP/run.json" '"\n".join(d["attempts"][2]["failing_lines"])' | grep -q "about to fail" ||
  fail "the failing node's last lines were not recorded"
for k in 1 2 3; do
  "$AIR" logs "$id" --attempt $k --node 0 > "$E2E_TMP/a$k.log" || true   # exits 1: the run FAILED
  grep -qx "attempt $k node 0" "$E2E_TMP/a$k.log" || fail "attempt $k's log of node 0 is wrong: $(cat "$E2E_TMP/a$k.log")"
done
"$AIR" get run "$id" | grep -q "first failing node: 1 (exit code 3)" || fail "air get run does not name the failing node"
! "$AIR" logs "$id" --node 1 >/dev/null || fail "air logs of a FAILED run should exit non-zero"
left=$(grep -l "AIR_GANG_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true)
[ -z "$left" ] || { for p in $left; do ps -o pid=,args= -p "$p"; done; fail "a node's command survived the gang stop"; }
echo "ok: run $id failed 3 times as it should"
