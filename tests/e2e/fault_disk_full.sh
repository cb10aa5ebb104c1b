#!/usr/bin/env bash
# Disk full while a node writes its log (issue 15): the workspace's home is a 32 MiB tmpfs in a private
# mount namespace (unshare -rm; skipped where user namespaces are not allowed). A node prints ~70 MB. The
# workspace keeps the last free space for its database (logs stop at a reserve), answers the agent 507
# DISK_FULL, the agent stops waiting after AIR_AGENT_DISK_FULL_GRACE_MS and ends the node saying how much
# log was not stored and why; the run reaches its final state, the database passes PRAGMA integrity_check,
# the workspace keeps answering, and once space is freed the next run succeeds with its whole log.
set -euo pipefail
if [ -z "${AIR_DISKFULL_NS:-}" ]; then
  if ! unshare -rm true 2>/dev/null; then echo "skip: no unprivileged user + mount namespace here"; exit 125; fi
  AIR_DISKFULL_NS=1 exec unshare -rm bash "$0" "$@"
fi
source "$(dirname "$0")/lib/common.bash"
mount -t tmpfs -o size=32m tmpfs "$AIR_HOME" || { echo "skip: cannot mount a tmpfs in the namespace"; exit 125; }
# The home is a mount point: stop the workspace and unmount it before common.bash's cleanup removes E2E_TMP.
unmount_home() {
  local rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 125 ]; then tail -n 20 "$AIR_HOME/server.log" 2>/dev/null || true; fi
  "$AIR" cancel --all -y >/dev/null 2>&1 || true
  "$AIR" server stop >/dev/null 2>&1 || true
  umount "$AIR_HOME" 2>/dev/null || true
  (exit $rc)
  cleanup
}
trap unmount_home EXIT
export AIR_AGENT_DISK_FULL_GRACE_MS=2000

cat > "$E2E_TMP/big.yaml" <<'YAML'
experiment_name: e2e-disk-full
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  awk 'BEGIN { for (i = 1; i <= 700000; i++) printf "line %d %090d\n", i, 0 }'
max_retries: 0
YAML
t0=$(date +%s)
id=$("$AIR" -o json run -f "$E2E_TMP/big.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_id"])')
state=""
for _ in $(seq 1 120); do
  state=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["state"])')
  case $state in SUCCEEDED|FAILED) break ;; esac
  sleep 0.5
done
echo "run $id: $state after $(( $(date +%s) - t0 )) s; $(df -h "$AIR_HOME" | tail -1 | awk '{print $4 " free of " $2}')"
[ "$state" = SUCCEEDED ] || [ "$state" = FAILED ] || fail "the run did not end with its disk full (state $state)"
msg=$("$AIR" -o json get run "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["attempts"][0]["nodes"][0]["message"])')
echo "node 0: $msg"
case $msg in *"the workspace's disk is full"*|*"log spool could not be written"*) ;; *) fail "the node's message does not say the disk is full" ;; esac
"$AIR" list >/dev/null || fail "the workspace stopped answering"
integrity=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("PRAGMA integrity_check").fetchone()[0])' "$AIR_HOME/workspace.db")
[ "$integrity" = ok ] || fail "PRAGMA integrity_check: $integrity"
stored=$(stat -c %s "$AIR_HOME/runs/$id/attempt_1/node_0.log")
python3 - "$AIR_HOME/runs/$id/attempt_1/node_0.log" <<'PY' || fail "the stored part of the log is not a clean prefix"
import sys
n = 0
for line in open(sys.argv[1], errors="replace"):
    if not line.startswith("line ") and "line " not in line:
        continue
    n += 1
    if f"line {n} " not in line:
        sys.exit(f"line {n} missing or out of order: {line[:60]!r}")
print(f"stored: lines 1..{n} in order")
PY

# A snapshot upload while the disk is full (straight to the API, as the CLI's archive would not fit its
# cache either): 507 DISK_FULL, not 413, and no half-written blob left behind.
snap=$(dirname "$E2E_TMP")/air-snap-$$.bin  # beside E2E_TMP: not on the full tmpfs
head -c 12000000 /dev/urandom > "$snap"
digest=$(sha256sum "$snap" | cut -d' ' -f1)
url=$(json_get "$AIR_HOME/server.json" 'd["url"]'); token=$(json_get "$AIR_HOME/server.json" 'd["token"]')
code=$(curl -s -o "$E2E_TMP/snap.out" -w '%{http_code}' -X PUT -H "Authorization: Bearer $token" \
  --data-binary @"$snap" "$url/api/air/v1/snapshots/$digest" || true)
rm -f "$snap"
echo "snapshot upload with the disk full: HTTP $code $(head -c 200 "$E2E_TMP/snap.out")"
[ "$code" = 507 ] && grep -q DISK_FULL "$E2E_TMP/snap.out" || fail "a snapshot upload on a full disk was not answered 507 DISK_FULL"
[ -z "$(ls -A "$AIR_HOME/blobs/tmp" 2>/dev/null)" ] || fail "a half-written blob was left in blobs/tmp"

# Free the space the run's spool and log took: the workspace takes the next run whole.
rm -f "$AIR_HOME/runs/$id/attempt_1/node_0.log" "$AIR_HOME/runs/$id/attempt_1/node_0/log.spool"
cat > "$E2E_TMP/small.yaml" <<'YAML'
experiment_name: e2e-after-disk-full
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  for i in $(seq 1 200); do echo "after $i"; done
max_retries: 0
YAML
id2=$("$AIR" -o json run -f "$E2E_TMP/small.yaml" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["run_id"])')
"$AIR" logs "$id2" --follow > "$E2E_TMP/after.txt" || true
state2=$("$AIR" -o json get run "$id2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["state"])')
[ "$state2" = SUCCEEDED ] || fail "the run after freeing space ended $state2"
[ "$(grep -c '^after ' "$E2E_TMP/after.txt")" = 200 ] || fail "the run after freeing space lost lines"
echo "ok: disk full -> run $state with the reason in its node message ($stored bytes of log stored), database intact, next run SUCCEEDED with 200 of 200 lines"
