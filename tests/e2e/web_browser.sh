#!/usr/bin/env bash
# The run page in a real browser (Debian's chromium, headless, driven by playwright-core from npm): a live
# 2-node run (both nodes' logs appear and grow; node write -> visible latency), its loss chart (as many
# points as the metrics API returns), a failed run (its failing node highlighted, the OOM line marked), a
# 1,000,000-line log (opens and reaches its end in < 2 s), a 200,000-point metric (opens like a 100-point
# one), and no secret value in the DOM, storage or network traffic. Screenshots land in build/web-test/.
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"
# One GPU for the scheduler (commands that only wait need none): a second GPU run queues behind the first.
export AIR_LOCAL_GPUS=1

VALUE="hf_web_$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
"$AIR" secrets create-scope web_scope > /dev/null
printf %s "$VALUE" | "$AIR" secrets put-secret web_scope token > /dev/null

proj="$E2E_TMP/proj"
mkdir -p "$proj"
cp "$(dirname "$0")/web/log_metrics.py" "$proj/"
# live: waits for the browser (file $GO), then both nodes tick every 50 ms until $STOP (each tick carries its
# write time, for the latency figure); rank 0 logs loss and lr for 100 steps as it goes; the secret is
# printed (and redacted by the agent).
# The commands wait on files this test touches: a volume's (the one folder a sandboxed command shares with
# the host). $VIN is the volume inside a command, $SIGNALS the same folder on this machine.
"$AIR" fs mkdir dbfs:/Volumes/main/default/web_e2e > /dev/null
VIN=/Volumes/main/default/web_e2e SIGNALS="$AIR_HOME/volumes/main/default/web_e2e"
GO="$SIGNALS/go" STOP="$SIGNALS/stop"
cat > "$proj/live.yaml" <<YAML
experiment_name: web-e2e
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 2}
code_source: {type: snapshot, snapshot: {root_path: .}}
command: |
  echo "node \$NODE_RANK starts; token is \$HF_TOKEN"
  for i in \$(seq 1 600); do [ -f $VIN/go ] && break; sleep 0.1; done
  if [ "\$NODE_RANK" = 0 ]; then python3 log_metrics.py live 100 0.05 & fi
  i=0; while [ ! -f $VIN/stop ] && [ \$i -lt 1200 ]; do i=\$((i+1)); echo "tick \$(date +%s%3N) node \$NODE_RANK line \$i"; sleep 0.05; done
  wait
secrets: {HF_TOKEN: web_scope/token}
max_retries: 0
YAML
cat > "$proj/fail.yaml" <<'YAML'
experiment_name: web-e2e
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 2}
command: |
  if [ "$NODE_RANK" = 1 ]; then
    echo "loading shards"; sleep 0.5
    echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2
    exit 3
  fi
  echo "node 0 waits"; sleep 60
max_retries: 0
YAML
# big: prints nothing and waits; the test gives it a 1,000,000-line log and a 200,000-point loss through the
# workspace's own append and MLflow routes (web/fill_big_run.py), then lets it end.
BIGSTOP="$SIGNALS/bigstop"
cat > "$proj/big.yaml" <<YAML
experiment_name: web-e2e-big
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}
command: for i in \$(seq 1 1200); do [ -f $VIN/bigstop ] && exit 0; sleep 0.1; done; exit 1
max_retries: 0
YAML

# hold takes the one GPU until $STOP; queued waits behind it (PENDING #1 on the runs page).
cat > "$proj/hold.yaml" <<YAML
experiment_name: web-e2e-queue
compute: {accelerator_type: GPU_1xH100, num_accelerators: 1}
command: for i in \$(seq 1 1800); do [ -f $VIN/stop ] && exit 0; sleep 0.1; done; exit 1
max_retries: 0
YAML
sed 's/^command: .*/command: "true"/' "$proj/hold.yaml" > "$proj/queued.yaml"
hold=$(submit "$proj/hold.yaml")
wait_state "$hold" RUNNING 60
queued=$(submit "$proj/queued.yaml")
big=$(submit "$proj/big.yaml")
failed=$(submit "$proj/fail.yaml")
wait_state "$big" RUNNING 60
python3 "$(dirname "$0")/web/fill_big_run.py" "$AIR_HOME/server.json" "$big" 1000000 200000
touch "$BIGSTOP"
wait_state "$big" SUCCEEDED 60
echo "1,000,000-line run filled after ${SECONDS}s"
wait_state "$failed" FAILED 60
live=$(submit "$proj/live.yaml")

URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
[ "$("$AIR" ui)" = "$URL/" ] || fail "air ui printed $("$AIR" ui), wanted $URL/"
[ "$("$AIR" get run "$live" --web 2>/dev/null)" = "$URL/#/runs/$live" ] || fail "air get run --web printed the wrong URL"
curl -fsS "$URL/" | grep -q 'web/app.js' || fail "the workspace does not serve the page at /"

AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$("$AIR" ui --token | tail -n 1)" AIR_WEB_SECRET="$VALUE" \
AIR_WEB_LIVE="$live" AIR_WEB_FAILED="$failed" AIR_WEB_QUEUED="$queued" AIR_WEB_BIG="$big" AIR_WEB_OUT="$OUT_DIR" AIR_WEB_GO="$GO" AIR_WEB_STOP="$STOP" AIR_CHROMIUM="$CHROMIUM" \
NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_test.mjs" || fail "the browser checks failed"
wait_state "$live" SUCCEEDED 60
wait_state "$hold" SUCCEEDED 60
wait_state "$queued" SUCCEEDED 60
echo "browser checks done after ${SECONDS}s"
echo "ok: web page checks passed; screenshots in $OUT_DIR"
