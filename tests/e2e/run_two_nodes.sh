#!/usr/bin/env bash
# A 2-node run on the embedded local workspace: both nodes see the right NUM_NODES / NODE_RANK /
# MASTER_ADDR / MASTER_PORT, CODE_SOURCE_PATH holds the snapshot, HYPERPARAMETERS_PATH parses back to
# `parameters`; `air run --watch` exits 0, `air logs --node 1` and `air get run` work afterwards; each
# node's session runs at autogroup nice 3 (the local workspace keeps its share of a shared CPU). The snapshot
# is handed to the local workspace without a copy (its blob is the CLI's cached archive, linked), and the
# nodes read the code from it.
source "$(dirname "$0")/lib/common.bash"

proj="$E2E_TMP/proj"
mkdir -p "$proj/pkg"
echo "marker-$$" > "$proj/pkg/data.txt"
cat > "$proj/train.yaml" <<'YAML'
experiment_name: e2e-two-nodes
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: |
  echo "NUM_NODES=$NUM_NODES"
  echo "NODE_RANK=$NODE_RANK"
  echo "MASTER_ADDR=$MASTER_ADDR"
  echo "MASTER_PORT=$MASTER_PORT"
  echo "GREETING=$GREETING"
  echo "DATA=$(cat "$CODE_SOURCE_PATH/pkg/data.txt")"
  echo "HP_PATH=$HYPERPARAMETERS_PATH"
  python3 -c 'import yaml,json,os; print("HP_JSON=" + json.dumps(yaml.safe_load(open(os.environ["HYPERPARAMETERS_PATH"])), sort_keys=True))'
  echo "to stderr" >&2
  echo "AUTOGROUP=$(cat /proc/self/autogroup 2>/dev/null || echo none)"
env_variables:
  GREETING: hello there
parameters:
  learning_rate: 0.001
  max_steps: 10
  model: {name: tiny, layers: [1, 2]}
max_retries: 0
YAML

out="$E2E_TMP/watch.out"
"$AIR" run -f "$proj/train.yaml" --watch > "$out" 2> "$E2E_TMP/watch.err" || { cat "$E2E_TMP/watch.err"; fail "air run --watch exited $?"; }
grep -q "NODE_RANK=0" "$out" || fail "--watch did not show node 0's log"
grep -q "snapshot [0-9a-f]* (.*): handed to the local workspace (not copied)" "$E2E_TMP/watch.err" ||
  fail "the local workspace did not adopt the snapshot: $(cat "$E2E_TMP/watch.err")"
digest=$(sed -n 's/^  snapshot \([0-9a-f]*\) .*/\1/p' "$E2E_TMP/watch.err")
cached=$(ls "$AIR_HOME"/cache/snapshots/"$digest"*.tar.zst)
blob=$(ls "$AIR_HOME"/blobs/sha256/*/"$digest"*)
[ "$(stat -c %i "$cached")" = "$(stat -c %i "$blob")" ] || fail "the workspace's blob is a copy of $cached, not the file"
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
[ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed"

want_hp='{"learning_rate": 0.001, "max_steps": 10, "model": {"layers": [1, 2], "name": "tiny"}}'
ports=()
for n in 0 1; do
  log="$E2E_TMP/node$n.log"
  "$AIR" logs "$id" --node $n > "$log"
  grep -qx "NUM_NODES=2" "$log" || fail "node $n: NUM_NODES wrong: $(cat "$log")"
  grep -qx "NODE_RANK=$n" "$log" || fail "node $n: NODE_RANK wrong"
  grep -qx "MASTER_ADDR=127.0.0.1" "$log" || fail "node $n: MASTER_ADDR wrong"
  grep -qx "GREETING=hello there" "$log" || fail "node $n: env_variables missing"
  grep -qx "DATA=marker-$$" "$log" || fail "node $n: CODE_SOURCE_PATH does not hold the snapshot"
  grep -qxF "HP_JSON=$want_hp" "$log" || fail "node $n: hyperparameters do not parse back: $(grep HP_JSON "$log")"
  grep -qx "to stderr" "$log" || fail "node $n: stderr not captured"
  # A node's session weighs less than the workspace's (server/backends/local.cc), where autogroups exist.
  if [ -r /proc/self/autogroup ]; then
    grep -qE "^AUTOGROUP=/autogroup-[0-9]+ nice 3$" "$log" || fail "node $n: session not at autogroup nice 3: $(grep AUTOGROUP "$log")"
  fi
  ports+=("$(sed -n 's/^MASTER_PORT=//p' "$log")")
done
[ -n "${ports[0]}" ] && [ "${ports[0]}" = "${ports[1]}" ] || fail "nodes disagree on MASTER_PORT: ${ports[*]}"

"$AIR" get run "$id" > "$E2E_TMP/get.txt"
grep -q "SUCCEEDED" "$E2E_TMP/get.txt" || fail "air get run does not show SUCCEEDED"
"$AIR" logs "$id" --all-nodes | grep -q "^\[node 1\] NODE_RANK=1$" || fail "--all-nodes lacks the node prefix"

# An unchanged re-submit uploads nothing.
"$AIR" -o json run -f "$proj/train.yaml" > "$E2E_TMP/again.json"
[ "$(json_get "$E2E_TMP/again.json" 'd["snapshot_uploaded_bytes"]')" = 0 ] || fail "re-submit uploaded the snapshot again"
echo "ok: run $id"
