#!/usr/bin/env bash
# The web page's Usage view (docs/scheduler.md "Quotas and usage"), in headless chromium: after runs of the
# admin (2 GPUs) and bob (1 GPU) on a machine that pretends to have 8 GPUs, the admin's #/usage shows
# both users' GPU time and the quota set with `air quotas set`; bob's shows his own usage only.
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"
export AIR_SANDBOX=off AIR_LOCAL_GPUS=8  # two users' runs without a sandbox: one trust domain
"$AIR" server --port 0 --single-trust-domain > "$E2E_TMP/server.out" 2>&1 &
for _ in $(seq 100); do "$AIR" server status > /dev/null 2>&1 && break; sleep 0.1; done
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
ADMIN=$(json_get "$AIR_HOME/server.json" 'd["token"]')
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
"$AIR" groups create ml > /dev/null
"$AIR" quotas set group ml --gpus 4 > /dev/null
workload() {  # workload GPUS
  cat <<YAML
experiment_name: web-usage
compute: {accelerator_type: GPU_1xH100, num_accelerators: $1}
command: sleep 1
max_retries: 0
YAML
}
workload 2 > "$E2E_TMP/a.yaml"
workload 1 > "$E2E_TMP/b.yaml"
A=$(AIR_HOST="$URL" AIR_TOKEN="$ADMIN" "$AIR" -o json run -f "$E2E_TMP/a.yaml" | json_get - 'd["run_id"]')
B=$(AIR_HOST="$URL" AIR_TOKEN="$BOB" "$AIR" -o json run -f "$E2E_TMP/b.yaml" | json_get - 'd["run_id"]')
wait_state "$A" SUCCEEDED 60
wait_state "$B" SUCCEEDED 60
ADMIN_USER=$(run_field "$A" 'd["user"]')
AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$ADMIN" AIR_WEB_TOKEN_BOB="$BOB" AIR_WEB_ADMIN_USER="$ADMIN_USER" \
AIR_CHROMIUM="$CHROMIUM" NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_usage.mjs" ||
  fail "the browser checks failed"
echo "web_usage: ok"
