#!/usr/bin/env bash
# Hostile snapshot archives pushed straight to the API (PUT /snapshots/<sha256> and POST /runs with curl,
# not through our CLI), then fetched and unpacked by real node agents: each is refused with an error naming
# the entry (the node's message), nothing outside the code folder is written or changed, disk use stays
# bounded; a harmless archive with a setuid file runs with the bit dropped.
# The 4096-byte symlink, the compression bomb and the many-entries cases need issue 22's unpack limits
# (`air server --max-unpack-bytes/--max-unpack-entries`); on a workspace without them they are reported
# as skipped, not passed.
source "$(dirname "$0")/lib/common.bash"

outside="$E2E_TMP/outside"
mkdir -p "$outside"
echo original > "$outside/target"
before=$(cd "$outside" && find . -printf '%p %s %m %y\n' | sort; cat target)

limits=0
if "$AIR" server --help 2>&1 | grep -q -- '--max-unpack-bytes'; then
  limits=1
  # --daemon serves in the foreground (it marks the process as the home's local workspace): start it in
  # the background and wait for it to publish server.json.
  setsid "$AIR" server --home "$AIR_HOME" --port 0 --daemon --max-unpack-bytes $((64 << 20)) \
    --max-unpack-entries 5000 > "$E2E_TMP/server.out" 2>&1 < /dev/null &
  for _ in $(seq 1 100); do [ -s "$AIR_HOME/server.json" ] && break; sleep 0.1; done
  [ -s "$AIR_HOME/server.json" ] || { cat "$E2E_TMP/server.out"; fail "server start"; }
fi
"$AIR" list > /dev/null  # starts the embedded workspace when none runs yet
url=$(json_get "$AIR_HOME/server.json" 'd["url"]')
token=$(json_get "$AIR_HOME/server.json" 'd["token"]')
api="$url/api/air/v1"

cases="$E2E_TMP/cases"
python3 "$(dirname "$0")/lib/hostile_archives.py" "$cases" "$outside" $([ $limits = 1 ] && echo big) > /dev/null

# submit NAME FILE: uploads the archive as a snapshot and submits a 1-node run using it; prints the run id.
submit_archive() {
  local name=$1 file=$2 digest
  digest=$(sha256sum "$file" | cut -d' ' -f1)
  curl -sf -X PUT -H "Authorization: Bearer $token" --data-binary @"$file" "$api/snapshots/$digest" > /dev/null \
    || fail "$name: the upload was refused"
  python3 - "$name" "$digest" "$(stat -c %s "$file")" > "$E2E_TMP/$name.req" <<'PY'
import json, sys
name, digest, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
yaml = ("experiment_name: hostile-%s\ncompute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}\n"
        "code_source: {type: snapshot, snapshot: {root_path: .}}\n"
        "command: stat -c 'mode=%%a' $CODE_SOURCE_PATH/suid.sh\nmax_retries: 0\n") % name
print(json.dumps({"workload_yaml": yaml, "file_name": name + ".yaml", "base_dir": "/tmp",
                  "snapshot_digest": digest, "snapshot_bytes": size, "idempotency_key": "hostile-" + name}))
PY
  curl -sf -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    --data-binary @"$E2E_TMP/$name.req" "$api/runs" | json_get - 'd["run_id"]'
}

# name -> the text the node's error must hold
declare -A want=(
  [dotdot]="has a '..' component" [absolute]="has an absolute path"
  [symlink_out]="is a symlink that points outside the destination"
  [symlink_absolute]="is a symlink to an absolute path"
  [symlink_then_file]="is a symlink that points outside the destination"
  [symlink_then_write]="would be written through a symlink"
  [symlink_dir_then_dir]="would be written through a symlink"
  [hardlink_out]="is a hard link to an absolute path" [hardlink_up]="is a hard link with a '..' component"
  [hardlink_missing]="which is not a file unpacked before it"
  [hardlink_with_data]="is a hard link that carries data"
  [long_component]="File name too long" [long_path]="has a path longer than the kernel resolves"
  [duplicate]="appears twice in the archive"
  [duplicate_dir_file]="appears twice in the archive"
  [chardev]="is a character device" [blockdev]="is a block device" [fifo]="is a fifo"
  [sparse_10g]="makes the archive expand beyond"
)
if [ $limits = 1 ]; then
  want[symlink_4096]="longer than the kernel resolves"
  want[bomb]="expand"
  want[many_entries]="entries"
fi

declare -A ids
start=$(date +%s.%N)
for name in "${!want[@]}"; do
  file=$(ls "$cases/$name".tar* | head -1)
  ids[$name]=$(submit_archive "$name" "$file")
done
ok_id=$(submit_archive ok "$cases/ok.tar")

# One listing per poll (not one `get run` per run): the runs end in any order.
for _ in $(seq 1 600); do
  "$AIR" -o json list --all-status | json_get - 'sum(r["status"] in ("PENDING", "RUNNING") for r in d["runs"])' \
    | grep -qx 0 && break
  sleep 0.2
done
refused=0
for name in "${!want[@]}"; do
  id=${ids[$name]}
  [ "$(run_field "$id" 'd["state"]')" = FAILED ] || fail "$name: run $id is $(run_field "$id" 'd["state"]'), not FAILED"
  msg=$(run_field "$id" 'd["attempts"][0]["nodes"][0]["message"]')
  case "$msg" in
    *"${want[$name]}"*) refused=$((refused + 1));;
    *) fail "$name: the node's error does not say '${want[$name]}': $msg";;
  esac
  case "$msg" in unsafe*|cannot*|corrupt*) ;; *) fail "$name: unclear error: $msg";; esac
  code="$AIR_HOME/runs/$id/attempt_1/node_0/code"
  [ ! -e "$code" ] || fail "$name: a code folder was left behind: $(ls -la "$code" | head)"
done
wait_state "$ok_id" SUCCEEDED 90
"$AIR" logs "$ok_id" | grep -qx 'mode=755' || fail "the setuid/setgid bits survived: $("$AIR" logs "$ok_id")"

after=$(cd "$outside" && find . -printf '%p %s %m %y\n' | sort; cat target)
[ "$before" = "$after" ] || fail "something outside the code folders changed: $after"
escaped=$(find "$AIR_HOME" -name 'dotdot.txt' -o -name 'absolute.txt' -o -name 'escape.txt' -o -name through.txt \
  -o -name made | head -3)
[ -z "$escaped" ] || fail "an entry was written through a link: $escaped"
used_kb=$(du -sk "$AIR_HOME" | cut -f1)
[ "$used_kb" -lt $((64 * 1024)) ] || fail "the home grew to $used_kb KiB: unpacking was not bounded"
secs=$(python3 -c "import time; print(round(time.time() - $start, 1))")
echo "ok: $refused hostile archives refused through the API (0 escapes, home $used_kb KiB, ${secs}s)"
[ $limits = 1 ] || echo "skipped: symlink_4096, bomb, many_entries (this workspace has no --max-unpack-bytes; issue 22)"
