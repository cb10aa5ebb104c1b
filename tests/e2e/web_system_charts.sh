#!/usr/bin/env bash
# The run page's per-node system charts in headless chromium (issue 45): a 2-node run whose agents read a
# fake NVML (node 0's GPU busy, node 1's half idle) and whose node 1 prints its steps 4x slower, so a
# straggler alert names it; the page draws one line per node, highlights node 1, and a click on the
# legend highlights node 0 instead (tests/e2e/web/browser_system.mjs). Screenshot in build/web-test/.
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"
fake="$AIR_BIN_DIR/libair_fake_nvml.so"
[ -f "$fake" ] || { echo "skip: $fake not built (target air_fake_nvml)"; exit 125; }
export AIR_NVML_LIBRARY="$fake" AIR_FAKE_NVML_STATE="$E2E_TMP/gpu_{node}" AIR_SERVER_MINUTE_MS=1000
echo "92 40000 81559 500" > "$E2E_TMP/gpu_0"
echo "45 20000 81559 250" > "$E2E_TMP/gpu_1"
cat > "$E2E_TMP/sys.yaml" <<'YAML'
experiment_name: web-system
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 2}
command: |
  pause=0.1; [ "$NODE_RANK" = 1 ] && pause=0.4
  for i in $(seq 1 150); do echo "step $i/150 | loss 1.0"; sleep $pause; done
system_metrics_interval: 0.25
straggler_minutes: 1
max_retries: 0
YAML
id=$(submit "$E2E_TMP/sys.yaml")
wait_state "$id" RUNNING 60
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$("$AIR" ui --token | tail -n 1)" AIR_WEB_RUN="$id" AIR_WEB_OUT="$OUT_DIR" \
AIR_CHROMIUM="$CHROMIUM" NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_system.mjs" \
  || fail "the browser checks failed"
"$AIR" cancel "$id" > /dev/null
echo "ok: per-node system charts; screenshot $OUT_DIR/system-charts.png"
