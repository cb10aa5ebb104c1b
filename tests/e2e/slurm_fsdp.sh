#!/usr/bin/env bash
# The tiny FSDP training workload (examples/tiny_fsdp: air-torchrun + air-train) on the Slurm test
# cluster: 2 nodes x 2 CPU ranks rendezvous across the network namespaces at node 0's address, the loss
# falls, the checkpoint is written, and both nodes' logs come back through `air logs --node`.
# Skipped (125) when air-train / air-torchrun were not built (-DAIR_BUILD_TRAINER=OFF).
[ -x "${AIR_BIN_DIR:?}/air-train" ] && [ -x "$AIR_BIN_DIR/air-torchrun" ] || {
  echo "skip: air-train / air-torchrun not built"; exit 125; }
[ -f "${AIR_SOURCE_DIR:?}/examples/tiny_model/tokenizer.json" ] || { echo "skip: examples/tiny_model is incomplete"; exit 125; }
source "$(dirname "$0")/lib/slurm.bash"
source "$(dirname "$0")/lib/train_steps.bash"

# The example as it is, but each node first says where it is and where it meets the others (air-torchrun
# and the non-zero ranks of air-train print nothing), and the snapshot root is given absolutely.
python3 - "$AIR_SOURCE_DIR/examples/tiny_fsdp/train.yaml" "$E2E_TMP/train.yaml" "$AIR_SOURCE_DIR/examples" <<'PY'
import sys
src, dst, root = sys.argv[1:]
text = open(src).read()
assert "root_path: ..\n" in text and "command: |\n" in text
text = text.replace("root_path: ..\n", "root_path: " + root + "\n")
text = text.replace("command: |\n", 'command: |\n  echo "node $NODE_RANK of $NUM_NODES on $(hostname): rendezvous at $MASTER_ADDR:$MASTER_PORT"\n')
open(dst, "w").write(text)
PY
start=$SECONDS
id=$(submit "$E2E_TMP/train.yaml" --override parameters.max_steps=12)
wait_state "$id" SUCCEEDED 400
echo "FSDP on 2 Slurm nodes x 2 ranks took $((SECONDS - start)) s"

"$AIR" logs "$id" --node 0 > "$E2E_TMP/n0.log"
"$AIR" logs "$id" --node 1 > "$E2E_TMP/n1.log"
# Each node's air-torchrun saw the job's shape; node 1 joined node 0's rendezvous at its cluster address.
master=$(getent ahostsv4 node1 | awk '{print $1; exit}')
no_json_steps "$E2E_TMP/n0.log"
losses=$(log_losses "$E2E_TMP/n0.log" | cut -d' ' -f2)
[ "$(echo "$losses" | wc -l)" -ge 10 ] || { cat "$E2E_TMP/n0.log"; fail "node 0 logged fewer than 10 loss lines"; }
first=$(echo "$losses" | head -n 1) last=$(echo "$losses" | tail -n 1)
python3 -c "import sys; sys.exit(0 if $last < $first - 0.3 else 1)" || fail "loss did not fall: $first -> $last"
echo "loss $first -> $last"
"$AIR" -o json get run "$id" > "$E2E_TMP/run.json"
[ "$(json_get "$E2E_TMP/run.json" 'd["attempts"][0]["job_id"] != ""')" = True ] || fail "the run has no Slurm job"
spec_master=$(grep -ho "MASTER_ADDR [0-9.]*" "$AIR_HOME/runs/$id/attempt_1/node_1/agent.log" | awk '{print $2}')
[ "$spec_master" = "$master" ] || fail "node 1's MASTER_ADDR is '$spec_master', not node 0's address $master"
ckpt="$AIR_HOME/runs/$id/attempt_1/node_0/code/checkpoint"
ls "$ckpt"/*.safetensors >/dev/null 2>&1 && [ -f "$ckpt/config.json" ] || fail "no checkpoint in $ckpt: $(ls -la "$ckpt" 2>&1)"
grep -q "^node 0 of 2 on node1: rendezvous at $master:" "$E2E_TMP/n0.log" || fail "node 0's log lacks its line: $(head -n 3 "$E2E_TMP/n0.log")"
grep -q "^node 1 of 2 on node2: rendezvous at $master:" "$E2E_TMP/n1.log" || fail "node 1's log lacks its line: $(cat "$E2E_TMP/n1.log")"
echo "ok: tiny FSDP over 2 Slurm nodes, loss $first -> $last, checkpoint in $ckpt"
