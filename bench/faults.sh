#!/usr/bin/env bash
# The fault tests at full size (issue 15), each printing its figure line: the workspace killed 5 times
# during a 2-node run of 200,000 lines per node; both agents of such a run killed and the run retried; 20 command kills and 20 agent kills for the gang-stop
# latency; a 30 s workspace outage; 20 runs canceled and 20 timing out together; the stall watchdog.
# Usage: bench/faults.sh   (AIR_BIN_DIR defaults to build/bin)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export AIR_BIN_DIR="${AIR_BIN_DIR:-$here/../build/bin}" AIR_SOURCE_DIR="$here/.."
e2e="$here/../tests/e2e"
echo "load before: $(uptime)"
FAULT_LINES=200000 FAULT_KILLS=5 bash "$e2e/fault_workspace_kill.sh" | grep '^figure:'
FAULT_LINES=200000 bash "$e2e/fault_agent_kill.sh" | grep '^figure:'
FAULT_TRIES=20 bash "$e2e/fault_gang_stop.sh" | grep '^figure:'
FAULT_OUTAGE=30 bash "$e2e/fault_workspace_outage.sh" | grep '^figure:'
FAULT_RUNS=20 bash "$e2e/fault_mass_stop.sh" | grep '^figure:'
bash "$e2e/fault_stall.sh" | grep '^figure:'
echo "load after: $(uptime)"
