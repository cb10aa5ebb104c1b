#!/usr/bin/env bash
# A sweep of one-node runs submitted in a shell loop against the local workspace (issue 22, finding 1: 70
# such runs once split the home between 18 daemons). Throughout: exactly one daemon for the home, `air
# server status` names it, and at the end every run SUCCEEDED with its whole log.
source "$(dirname "$0")/lib/common.bash"

runs=${AIR_SWEEP_RUNS:-30}
lines=50
cat > "$E2E_TMP/sweep.yaml" <<YAML
experiment_name: e2e-sweep
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  for i in \$(seq 1 $lines); do echo "line \$i"; done; sleep 2
max_retries: 0
YAML

daemons() {  # the air server processes started for this home
  pgrep -f -- "server --home $AIR_HOME " | wc -l
}
ids=()
for i in $(seq 1 "$runs"); do
  ids+=("$(submit "$E2E_TMP/sweep.yaml")")
  n=$(daemons)
  [ "$n" = 1 ] || fail "after $i submits: $n daemons for one home"
done
pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
"$AIR" server status | grep -q "running (pid $pid)" || fail "air server status does not name the daemon (pid $pid)"
for id in "${ids[@]}"; do
  wait_state "$id" SUCCEEDED 120
  got=$("$AIR" logs "$id" | grep -c '^line ')
  [ "$got" = "$lines" ] || fail "run $id has $got of $lines log lines"
  [ "$(daemons)" = 1 ] || fail "more than one daemon while waiting"
done
[ "$(json_get "$AIR_HOME/server.json" 'd["pid"]')" = "$pid" ] || fail "the daemon changed during the sweep"
echo "ok: $runs runs, one daemon (pid $pid) throughout, every run SUCCEEDED with its $lines lines"
