#!/usr/bin/env bash
# The stall watchdog judged by the GPUs too (issue 45), with a fake NVML whose readings this script writes
# (tests/core/health/fake_nvml.cc; AIR_NVML_LIBRARY points the agents at it) and no stall_timeout_minutes
# set: the default applies because the nodes report GPUs. A minute lasts 500 ms here, so the default 20
# minutes is 10 s and its alert comes at 5 s (room for a loaded CI machine's late heartbeats).
#  1. Both nodes silent for 14 s with busy GPUs: not stopped, one attempt, SUCCEEDED; their GPU figures
#     are in the attempt's MLflow run as system/node_<rank>/... metrics.
#  2. Node 1 silent with idle GPUs (node 0 keeps printing): alerted first ("node 1: no output and GPUs idle"),
#     then its attempt ends naming node 1, and the retry succeeds.
source "$(dirname "$0")/lib/common.bash"
fake="$AIR_BIN_DIR/libair_fake_nvml.so"
[ -f "$fake" ] || { echo "skip: $fake not built (target air_fake_nvml)"; exit 125; }
export AIR_NVML_LIBRARY="$fake" AIR_FAKE_NVML_STATE="$E2E_TMP/gpu_{node}" AIR_SERVER_MINUTE_MS=500

# 1. Silent but busy.
echo "95 30000 81559 450" > "$E2E_TMP/gpu_0"
echo "97 31000 81559 460" > "$E2E_TMP/gpu_1"
cat > "$E2E_TMP/busy.yaml" <<'YAML'
experiment_name: health-busy
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  echo "node $NODE_RANK computing silently"
  sleep 14
  echo "node $NODE_RANK done"
system_metrics_interval: 0.2
max_retries: 0
YAML
id=$(submit "$E2E_TMP/busy.yaml")
wait_state "$id" SUCCEEDED 60
[ "$(run_field "$id" 'len(d["attempts"])')" = 1 ] || fail "the busy silent run was retried: $(run_field "$id" 'd["attempts"][0]["reason"]')"
[ "$(run_field "$id" 'len(d.get("alerts", []))')" = 0 ] || fail "a busy silent node was alerted: $(run_field "$id" 'd["alerts"]')"
util=$(run_field "$id" '[m["value"] for m in d["attempts"][0]["metrics"] if m["key"] == "system/node_1/gpu_0_utilization_percentage"]')
[ "$util" = "[97.0]" ] || fail "node 1's GPU utilisation metric is $util, wanted [97.0]"
for m in gpu_0_memory_usage_megabytes gpu_0_power_usage_watts cpu_utilization_percentage system_memory_usage_megabytes \
         disk_usage_percentage network_receive_megabytes network_transmit_megabytes; do
  n=$(run_field "$id" "len([x for x in d['attempts'][0]['metrics'] if x['key'] == 'system/node_0/$m'])")
  [ "$n" = 1 ] || fail "no system/node_0/$m metric"
done
"$AIR" get run "$id" > "$E2E_TMP/get_busy.txt"
grep -q "node 1 .*GPU util .*97" "$E2E_TMP/get_busy.txt" || { cat "$E2E_TMP/get_busy.txt"; fail "air get run shows no GPU summary for node 1"; }
echo "busy: run $id succeeded after 14 s of silence (default stall timeout 10 s here), no alert"

# 2. Silent and idle. Node 1's GPU reads 100% utilisation with its memory untouched: a kernel spinning on a
# flag, as NCCL's do in a collective whose peer is gone; that is no work (core/health/nvml.h gpu_working).
echo "0 500 81559 60" > "$E2E_TMP/gpu_0"
echo "100 500 81559 131 0" > "$E2E_TMP/gpu_1"
cat > "$E2E_TMP/idle.yaml" <<'YAML'
experiment_name: health-idle
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  if [ "$AIR_ATTEMPT" = 1 ]; then
    if [ "$NODE_RANK" = 1 ]; then echo "node 1 hangs"; sleep 120; fi
    for i in $(seq 1 600); do echo "node 0 tick $i"; sleep 0.2; done
  fi
  echo "attempt $AIR_ATTEMPT ok"
system_metrics_interval: 0.2
max_retries: 1
YAML
# Watched as a user would: the alert is said in the stream (an ALERT line) before the attempt ends.
"$AIR" -o json run -f "$E2E_TMP/idle.yaml" --watch > "$E2E_TMP/watch.jsonl" || fail "the watched run did not succeed"
id=$(python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
alerts = [l for l in lines if l.get("type") == "ALERT" and l["kind"] == "stall" and l["node"] == 1]
assert alerts, "no ALERT line for node 1 in the watched stream"
assert alerts[0]["message"].startswith("node 1: no output and GPUs idle for"), alerts[0]["message"]
print([l for l in lines if "data" in l][-1]["data"]["run_id"])
' "$E2E_TMP/watch.jsonl") || { cat "$E2E_TMP/watch.jsonl"; fail "the watched stream lacks the alert"; }
wait_state "$id" SUCCEEDED 60
reason=$(run_field "$id" 'd["attempts"][0]["reason"]')
case "$reason" in *"node 1 stalled: no log line or metric and GPUs idle"*) ;; *) fail "attempt 1's reason: $reason";; esac
[ "$(run_field "$id" 'd["attempts"][0]["failing_node"]')" = 1 ] || fail "failing node is not 1"
[ "$(run_field "$id" 'd["attempts"][1]["state"]')" = SUCCEEDED ] || fail "the retry did not succeed"
alert=$(run_field "$id" '[a["message"] for a in d["alerts"] if a["kind"] == "stall" and a["node"] == 1 and a["attempt"] == 1][0]')
case "$alert" in "node 1: no output and GPUs idle for"*) ;; *) fail "no stall alert for node 1 before the end: $alert";; esac
alert_at=$(run_field "$id" '[a["at_ms"] for a in d["alerts"] if a["kind"] == "stall"][0]')
ended=$(run_field "$id" 'd["attempts"][0]["ended_at_ms"]')
[ "$alert_at" -lt "$ended" ] || fail "the alert ($alert_at) did not come before the attempt ended ($ended)"
[ "$(run_field "$id" 'len([a for a in d["alerts"] if a["node"] == 0])')" = 0 ] || fail "node 0 (printing) was alerted"
"$AIR" get run "$id" | grep -q "stall .*node 1: no output and GPUs idle" || fail "air get run does not show the alert"
running=$(run_field "$id" 'd["attempts"][0]["nodes"][1]["running_at_ms"]')
echo "figure: idle silent node alerted $(( (alert_at - running) )) ms and ended $(( (ended - running) )) ms after it started (default timeout 10 s here); alert: $alert"
echo "ok: runs busy and idle"
