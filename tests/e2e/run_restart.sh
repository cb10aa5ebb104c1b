#!/usr/bin/env bash
# kill -9 of the workspace in the middle of a run: the agents keep running and spooling; the restarted
# workspace (same port, same state) takes them back, and every node's log is complete: each line the
# command printed arrives exactly once, in order (0 lost, 0 duplicated).
source "$(dirname "$0")/lib/common.bash"

lines=400
cat > "$E2E_TMP/restart.yaml" <<YAML
experiment_name: e2e-restart
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  for i in \$(seq 1 $lines); do echo "node \$NODE_RANK line \$i"; sleep 0.01; done
max_retries: 0
YAML

id=$(submit "$E2E_TMP/restart.yaml")
wait_state "$id" RUNNING 30
sleep 1
pid=$(json_get "$AIR_HOME/server.json" 'd["pid"]')
kill -9 "$pid"
sleep 2   # the agents go on printing and spooling while nobody listens
"$AIR" server status >/dev/null && fail "the killed workspace still answers"
"$AIR" list >/dev/null    # starts the workspace again on demand
[ "$(json_get "$AIR_HOME/server.json" 'd["pid"]')" != "$pid" ] || fail "the workspace was not restarted"
wait_state "$id" SUCCEEDED 60
for n in 0 1; do
  "$AIR" logs "$id" --node $n > "$E2E_TMP/node$n.log"
  seq 1 $lines | sed "s/^/node $n line /" > "$E2E_TMP/want$n.log"
  if ! cmp -s "$E2E_TMP/want$n.log" "$E2E_TMP/node$n.log"; then
    echo "lines: $(wc -l < "$E2E_TMP/node$n.log") of $lines; duplicated: $(sort "$E2E_TMP/node$n.log" | uniq -d | wc -l)"
    diff "$E2E_TMP/want$n.log" "$E2E_TMP/node$n.log" | head -20
    fail "node $n's log is not complete and exact after the restart"
  fi
done
echo "ok: run $id survived a workspace kill -9 with complete logs"
