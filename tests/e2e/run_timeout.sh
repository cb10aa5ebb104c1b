#!/usr/bin/env bash
# timeout_minutes ends a run as TIMED_OUT (not retried) and stops its nodes. The workspace is started with
# AIR_SERVER_MINUTE_MS=2000 so that "1 minute" lasts 2 s in this test.
source "$(dirname "$0")/lib/common.bash"

export AIR_SERVER_MINUTE_MS=2000
cat > "$E2E_TMP/timeout.yaml" <<'YAML'
experiment_name: e2e-timeout
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: echo waiting; sleep 600
timeout_minutes: 1
max_retries: 2
YAML
id=$(submit "$E2E_TMP/timeout.yaml")
wait_state "$id" TIMED_OUT 40
[ "$(run_field "$id" 'len(d["attempts"])')" = 1 ] || fail "a timed-out run must not be retried"
run_field "$id" 'd["status_message"]' | grep -q "timed out after 1 minute" || fail "no timeout reason"
set +e
"$AIR" logs "$id" > /dev/null; rc=$?
set -e
[ $rc = 1 ] || fail "air logs of a TIMED_OUT run should exit 1, got $rc"
echo "ok: run $id timed out"
