#!/usr/bin/env bash
# 20 runs canceled at once, then 20 runs timing out together: every run ends in its final state and no
# process is left behind, checked by a marker in the commands' environment (/proc/*/environ) and by the
# process groups of the commands. Each command starts a child that ignores SIGTERM and a grandchild.
# FAULT_RUNS runs per phase (default 8 in CI; bench/faults.sh runs 20).
source "$(dirname "$0")/lib/common.bash"

export AIR_SERVER_MINUTE_MS=3000  # "1 minute" of timeout_minutes lasts 3 s here: the timeout is 6 s
runs=${FAULT_RUNS:-8}
marker="air-fault-mass-$$"
write_yaml() {  # write_yaml FILE EXTRA_KEY
  cat > "$1" <<YAML
experiment_name: fault-mass
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
env_variables:
  AIR_FAULT_MARKER: $marker
command: |
  bash -c 'trap "" TERM; sleep 1000 & wait' &
  bash -c 'sleep 1000' &
  echo started
  wait
max_retries: 0
$2
YAML
}
write_yaml "$E2E_TMP/cancel.yaml" ""
write_yaml "$E2E_TMP/timeout.yaml" "timeout_minutes: 2"

# marked: pids whose environment holds the marker.
marked() { grep -l "AIR_FAULT_MARKER=$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }

phase() {  # phase NAME FILE FINAL_STATE
  local name=$1 file=$2 final=$3 ids=() pgids="" want=$((runs * 4))  # 4 marked processes per command
  for _ in $(seq 1 "$runs"); do ids+=("$(submit "$file")"); done
  local t0; t0=$(date +%s.%N)
  local scan_end=$(( $(date +%s) + 8 ))
  for _ in $(seq 1 300); do
    # A process may end between the scan and ps (the timeout phase kills them meanwhile): not an error.
    pgids="$pgids $(for p in $(marked); do ps -o pgid= -p "$p" 2>/dev/null || true; done)"
    [ "$(marked | wc -l)" -ge $want ] && break
    # The timeout phase's first runs may end before the last start, so the count need not reach $want:
    # scan until just past the 6 s timeout (scanning on for 300 rounds made the figure read ~90 s).
    [ "$name" = timeout ] && [ "$(date +%s)" -ge $scan_end ] && break
    sleep 0.1
  done
  [ "$name" = timeout ] || [ "$(marked | wc -l)" -ge $want ] || fail "$name: the commands did not all start ($(marked | wc -l) processes)"
  pgids=$(echo $pgids | tr ' ' '\n' | sort -u)
  [ "$name" = cancel ] && "$AIR" cancel --all -y > /dev/null
  for id in "${ids[@]}"; do wait_state "$id" "$final" 60; done
  local t_end; t_end=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  # The same bound (15 s) for the marked processes and for their groups: the agent's guardian (which sits in
  # the command's group) ends the group with a SIGKILL that takes itself too, after the grace period.
  groups_alive() { for g in $pgids; do pgrep -g "$g" > /dev/null && echo "$g"; done; true; }
  for _ in $(seq 1 150); do [ -z "$(marked)" ] && [ -z "$(groups_alive)" ] && break; sleep 0.1; done
  [ -z "$(marked)" ] || fail "$name: processes left behind: $(for p in $(marked); do ps -o pid=,args= -p "$p"; done)"
  for g in $(groups_alive); do fail "$name: process group $g still has processes: $(pgrep -a -g "$g")"; done
  echo "figure: $runs runs ${name}: all $final ${t_end} s after submission, 0 processes left ($(echo "$pgids" | wc -w) process groups checked)"
}
phase cancel "$E2E_TMP/cancel.yaml" CANCELED
phase timeout "$E2E_TMP/timeout.yaml" TIMED_OUT
echo "ok"
