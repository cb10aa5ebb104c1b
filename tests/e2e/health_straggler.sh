#!/usr/bin/env bash
# Stragglers (issue 45): node 1 prints its step lines 4x slower than node 0; with straggler_minutes 1 (a
# minute lasts 1 s here) the run gets an alert naming node 1 and its lag, shown by `air get run`, and
# nothing is stopped. Node 0 is never named.
source "$(dirname "$0")/lib/common.bash"
export AIR_SERVER_MINUTE_MS=1000
cat > "$E2E_TMP/straggler.yaml" <<'YAML'
experiment_name: health-straggler
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  pause=0.1; [ "$NODE_RANK" = 1 ] && pause=0.4
  for i in $(seq 1 40); do echo "step $i/40 | loss 1.0"; sleep $pause; done
straggler_minutes: 1
max_retries: 0
YAML
id=$(submit "$E2E_TMP/straggler.yaml")
wait_state "$id" SUCCEEDED 60
msg=$(run_field "$id" '[a["message"] for a in d.get("alerts", []) if a["kind"] == "straggler"]')
case "$msg" in *"node 1 is a straggler: at step"*"while node 0 is at step"*"behind by"*) ;; *) fail "no straggler alert naming node 1: $msg";; esac
[ "$(run_field "$id" 'len([a for a in d["alerts"] if a["node"] == 0])')" = 0 ] || fail "node 0 was named"
[ "$(run_field "$id" 'len(d["attempts"])')" = 1 ] || fail "a straggler alert stopped the run"
"$AIR" get run "$id" | grep -q "straggler .*node 1 is a straggler" || fail "air get run does not show the straggler alert"
echo "figure: $(run_field "$id" '[a["message"] for a in d["alerts"]][0]')"
echo "ok: run $id"
