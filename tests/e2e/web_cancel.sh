#!/usr/bin/env bash
# Cancelling from the run page (docs/web.md): headless chromium signs in as bob, who may view alice's run
# (permissions: CAN_VIEW) but not cancel it: the page shows the workspace's refusal and the run goes on. One
# click only arms the button. Then alice, signed in, cancels her run with two clicks: the page shows it
# CANCELED and the Cancel button is gone, and `air get run` agrees.
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"

web_two_users
cat > "$E2E_TMP/a.yaml" <<'YAML'
experiment_name: web-cancel
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}
command: echo cancel-me; sleep 600
max_retries: 0
permissions:
  - user_name: bob
    level: CAN_VIEW
YAML
A=$(AIR_HOST="$URL" AIR_TOKEN="$ALICE" "$AIR" -o json run -f "$E2E_TMP/a.yaml" | json_get - 'd["run_id"]')
wait_state "$A" RUNNING 60

AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$ALICE" AIR_WEB_TOKEN_BOB="$BOB" AIR_WEB_ALICE_RUN="$A" \
AIR_CHROMIUM="$CHROMIUM" NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_cancel.mjs" ||
  fail "the browser checks failed"
wait_state "$A" CANCELED 60
echo "web_cancel: ok"
