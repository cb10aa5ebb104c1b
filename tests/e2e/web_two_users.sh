#!/usr/bin/env bash
# The run page for two people (docs/web.md, docs/security.md): headless chromium signs in with bob's token
# (kept in sessionStorage only) and sees his run but not alice's, is refused her run's page (as an unknown
# run, none of her log shown), signs out leaving no token behind, then signs in as alice and sees hers.
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"

web_two_users
STOP="$E2E_TMP/stop"
workload() {  # workload NAME LINE
  cat <<YAML
experiment_name: $1
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}
command: echo $2; for i in \$(seq 1 1200); do [ -f $STOP ] && exit 0; sleep 0.1; done
max_retries: 0
YAML
}
workload web-alice alice-log-line > "$E2E_TMP/a.yaml"
workload web-bob bob-log-line > "$E2E_TMP/b.yaml"
A=$(AIR_HOST="$URL" AIR_TOKEN="$ALICE" "$AIR" -o json run -f "$E2E_TMP/a.yaml" | json_get - 'd["run_id"]')
B=$(AIR_HOST="$URL" AIR_TOKEN="$BOB" "$AIR" -o json run -f "$E2E_TMP/b.yaml" | json_get - 'd["run_id"]')
wait_state "$A" RUNNING 60
wait_state "$B" RUNNING 60

AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$ALICE" AIR_WEB_TOKEN_BOB="$BOB" AIR_WEB_ALICE_RUN="$A" AIR_WEB_BOB_RUN="$B" \
AIR_CHROMIUM="$CHROMIUM" NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_two_users.mjs" ||
  fail "the browser checks failed"
touch "$STOP"
wait_state "$A" SUCCEEDED 60
wait_state "$B" SUCCEEDED 60
echo "web_two_users: ok"
