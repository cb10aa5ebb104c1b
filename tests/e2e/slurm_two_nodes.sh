#!/usr/bin/env bash
# A 2-node run on the Slurm test cluster: one sbatch job, one agent per node through srun. The nodes are
# different hosts (node1, node2) with NODE_RANK 0 and 1 from SLURM_NODEID, the same MASTER_ADDR (node 0's
# address, 10.213.0.11) and MASTER_PORT, and node 1 reaches node 0 there over TCP. `air logs --node`,
# `air get run` (the Slurm job id) and the job name in the queue work as on the local backend.
source "$(dirname "$0")/lib/slurm.bash"

cat > "$E2E_TMP/env.yaml" <<'YAML'
experiment_name: e2e-slurm-env
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  echo "HOST=$(hostname) NODE_RANK=$NODE_RANK NUM_NODES=$NUM_NODES MASTER=$MASTER_ADDR:$MASTER_PORT JOB=$SLURM_JOB_ID"
  if [ "$NODE_RANK" = 0 ]; then
    python3 -c '
  import os, socket
  s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
  s.bind(("0.0.0.0", int(os.environ["MASTER_PORT"]))); s.listen(1); s.settimeout(30)
  c, a = s.accept(); print("MASTER_GOT", c.recv(100).decode().strip(), "FROM", a[0])'
  else
    for i in $(seq 1 150); do
      if (exec 3<>"/dev/tcp/$MASTER_ADDR/$MASTER_PORT" && echo "hello-from-$(hostname)" >&3) 2>/dev/null; then
        echo "CONNECTED $MASTER_ADDR:$MASTER_PORT"; break
      fi
      sleep 0.1
    done
  fi
max_retries: 0
timeout_minutes: 5
YAML

start=$SECONDS
id=$(submit "$E2E_TMP/env.yaml")
# The job is in Slurm's queue under the run's name.
job=""
for _ in $(seq 1 50); do
  job=$(run_field "$id" 'd["attempts"][0]["job_id"]')
  [ -n "$job" ] && break; sleep 0.1
done
[ -n "$job" ] || fail "the run has no Slurm job id"
timeout 5 squeue -h --states=all -j "$job" -o '%j' | grep -qx "air-$id-1" || fail "job $job is not named air-$id-1"
wait_state "$id" SUCCEEDED 60
echo "run $id (Slurm job $job) succeeded in $((SECONDS - start)) s"

"$AIR" logs "$id" --node 0 > "$E2E_TMP/n0.log"
"$AIR" logs "$id" --node 1 > "$E2E_TMP/n1.log"
cat "$E2E_TMP/n0.log" "$E2E_TMP/n1.log"
l0=$(grep '^HOST=' "$E2E_TMP/n0.log") || fail "node 0 printed no environment"
l1=$(grep '^HOST=' "$E2E_TMP/n1.log") || fail "node 1 printed no environment"
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
[ "$(field "$l0" NODE_RANK)" = 0 ] && [ "$(field "$l1" NODE_RANK)" = 1 ] || fail "NODE_RANK is not 0 and 1"
[ "$(field "$l0" NUM_NODES)" = 2 ] && [ "$(field "$l1" NUM_NODES)" = 2 ] || fail "NUM_NODES is not 2 on both"
[ "$(field "$l0" HOST)" != "$(field "$l1" HOST)" ] || fail "both nodes ran on host $(field "$l0" HOST)"
[ "$(field "$l0" MASTER)" = "$(field "$l1" MASTER)" ] || fail "MASTER_ADDR:PORT differ: $(field "$l0" MASTER) vs $(field "$l1" MASTER)"
# node 0 is the first host of the allocation; its address on the cluster network, not a loopback.
h0=$(field "$l0" HOST)
want=$(getent ahostsv4 "$h0" | awk '{print $1; exit}')
[ "$(field "$l0" MASTER)" = "$want:$(field "$l0" MASTER | cut -d: -f2)" ] || fail "MASTER_ADDR is not node 0's address $want"
[ "$(field "$l0" JOB)" = "$job" ] || fail "the command did not run in Slurm job $job"
grep -q "^CONNECTED $want:" "$E2E_TMP/n1.log" || fail "node 1 did not reach node 0 at MASTER_ADDR:MASTER_PORT"
grep -q "^MASTER_GOT hello-from-$(field "$l1" HOST) FROM 10.213.0.12" "$E2E_TMP/n0.log" || fail "node 0 did not hear from node 1"
"$AIR" get run "$id" | grep -q "$job" || fail "air get run does not show the Slurm job"
# The node token appears in no file the workspace wrote for Slurm.
! grep -Eq "air_[A-Za-z0-9_-]{32}" "$AIR_HOME"/runs/"$id"/attempt_1/slurm_job.sh || fail "the batch script holds a token"
echo "ok: 2 Slurm nodes, ranks 0/1 on $(field "$l0" HOST)/$(field "$l1" HOST), master $(field "$l0" MASTER)"
