# Shared by the slurm_*.sh scenarios: the 2-node test cluster (scripts/slurm/cluster-up: network namespaces
# slw1/slw2 with node1 10.213.0.11 and node2 10.213.0.12, the controller on the bridge 10.213.0.1), and an
# `air server --backend slurm` listening on the bridge so that jobs in the namespaces reach it. Torn down
# on exit whatever happens. Skips (125) where the machine cannot make namespaces or lacks Slurm.
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
: "${AIR_SOURCE_DIR:?AIR_SOURCE_DIR must name the source tree}"
SLURM_SCRIPTS="$AIR_SOURCE_DIR/scripts/slurm"
SERVER_PID=""

slurm_cleanup() {
  local rc=$?
  set +e
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    # Every user's runs (the admin's token sees them all with --all-users), so that no job outlives the test.
    local ids
    ids=$("$AIR" -o json list --all-users 2>/dev/null | python3 -c 'import json,sys; print(" ".join(r["run_id"] for r in json.load(sys.stdin)["data"]["runs"]))' 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$ids" ] && "$AIR" cancel $ids >/dev/null 2>&1
    for _ in $(seq 1 100); do
      [ "$("$AIR" -o json list --all-users 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]["runs"]))' 2>/dev/null)" = 0 ] && break
      sleep 0.1
    done
    kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
  fi
  if [ $rc -ne 0 ] && [ $rc -ne 125 ]; then
    echo "---- squeue"; timeout 5 squeue 2>&1
    echo "---- workspace output"; tail -n 30 "$E2E_TMP/server.out" 2>/dev/null
    for f in "$AIR_HOME"/runs/*/attempt_*/slurm-*.out; do [ -f "$f" ] && { echo "---- $f"; tail -n 20 "$f"; }; done
    echo "---- slurmctld"; tail -n 15 /var/log/slurm/slurmctld.log 2>/dev/null
  fi
  "$SLURM_SCRIPTS/cluster-down" >/dev/null 2>&1
  (exit $rc)
  cleanup
}
trap slurm_cleanup EXIT

command -v sbatch >/dev/null || { echo "skip: Slurm's client commands are not installed (scripts/setup)"; exit 125; }
# cluster-up exits 125 itself when there is no root or no network namespaces.
set +e
"$SLURM_SCRIPTS/cluster-up" > "$E2E_TMP/cluster-up.out" 2>&1
up=$?
set -e
if [ $up -eq 125 ]; then echo "skip: $(tail -n 1 "$E2E_TMP/cluster-up.out")"; exit 125; fi
[ $up -eq 0 ] || { cat "$E2E_TMP/cluster-up.out"; fail "the Slurm test cluster did not come up"; }

# As root the workspace submits each job as its owner's account (air-u-<user>, sbatch --uid), which must
# be able to enter the folders above $AIR_HOME: mktemp made E2E_TMP 0700.
chmod 0711 "$E2E_TMP"

# The workspace on the bridge; the nodes reach it at 10.213.0.1 (127.0.0.1 inside a namespace is its own).
"$AIR" server --home "$AIR_HOME" --backend slurm --host 10.213.0.1 --port 0 \
  --advertise-url http://10.213.0.1 "$@" > "$E2E_TMP/server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$AIR_HOME/server.json" ] && break; sleep 0.05; done
[ -s "$AIR_HOME/server.json" ] || { cat "$E2E_TMP/server.out"; fail "air server --backend slurm did not start"; }
export AIR_HOST=$(json_get "$AIR_HOME/server.json" 'd["url"]')
export AIR_TOKEN=$(json_get "$AIR_HOME/server.json" 'd["token"]')

# Processes of a node (its network namespace) whose command line matches PATTERN.
node_procs() {  # node_procs slw1 PATTERN
  local pid
  for pid in $(ip netns pids "$1" 2>/dev/null); do
    tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$2" && echo "$pid $(tr '\0' ' ' < /proc/$pid/cmdline)"
  done
  true
}
