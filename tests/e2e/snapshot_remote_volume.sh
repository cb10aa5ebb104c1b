#!/usr/bin/env bash
# code_source.snapshot.remote_volume: `air run` keeps the snapshot in that volume (<remote_volume>/.internal/
# <sha256>.tar.zst, through the Files API) instead of the workspace's snapshot store; both nodes unpack it from
# there (their node tokens may read that one file, not the rest of the volume); a second run of the same tree
# sends nothing; a run whose snapshot file was deleted from the volume is refused at submit, naming the path;
# a remote_volume that names no volume is a file:line:col error before anything is sent.
source "$(dirname "$0")/lib/common.bash"

proj="$E2E_TMP/proj"
mkdir -p "$proj/pkg"
echo "marker-$$" > "$proj/pkg/data.txt"
cat > "$proj/train.yaml" <<'YAML'
experiment_name: e2e-remote-volume
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: .
    remote_volume: /Volumes/main/default/snapshots
command: |
  echo "DATA=$(cat "$CODE_SOURCE_PATH/pkg/data.txt")"
  # Reading anything else in the snapshot volume with the node token is refused. (The path is spelled in
  # pieces: a /Volumes path written in the command would grant the run that volume.)
  v=Volumes
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $MLFLOW_TRACKING_TOKEN" \
    "$MLFLOW_TRACKING_URI/api/2.0/fs/directories/$v/main/default/snapshots/.internal")
  echo "LIST=$code"
max_retries: 0
YAML

# The dry-run says where the snapshot will be kept.
"$AIR" run -f "$proj/train.yaml" --dry-run > "$E2E_TMP/plan.txt" 2>&1 || { cat "$E2E_TMP/plan.txt"; fail "dry-run failed"; }
grep -qF "stored in: /Volumes/main/default/snapshots/.internal/<sha256>.tar.zst (remote_volume)" "$E2E_TMP/plan.txt" ||
  fail "the plan does not say where the snapshot is kept: $(cat "$E2E_TMP/plan.txt")"

"$AIR" -o json run -f "$proj/train.yaml" --watch > "$E2E_TMP/run1.json" 2> "$E2E_TMP/run1.err" ||
  { cat "$E2E_TMP/run1.err"; fail "air run --watch exited $?"; }
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
[ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed: $(cat "$E2E_TMP/run1.err")"
digest=$(run_field "$id" 'd["snapshot_digest"]')
[ ${#digest} = 64 ] || fail "run $id has no snapshot digest"
"$AIR" fs ls /Volumes/main/default/snapshots/.internal > "$E2E_TMP/ls.txt" || fail "air fs ls failed"
grep -q "$digest.tar.zst" "$E2E_TMP/ls.txt" || fail "the snapshot is not in the volume: $(cat "$E2E_TMP/ls.txt")"
if find "$AIR_HOME" -path '*blobs*' -name "$digest*" | grep -q .; then
  fail "the snapshot also went to the workspace's snapshot store"
fi
for n in 0 1; do
  "$AIR" logs "$id" --node $n > "$E2E_TMP/node$n.log"
  grep -qx "DATA=marker-$$" "$E2E_TMP/node$n.log" || fail "node $n did not unpack the snapshot from the volume: $(cat "$E2E_TMP/node$n.log")"
  grep -qx "LIST=403" "$E2E_TMP/node$n.log" || fail "node $n's token could list the snapshot volume: $(grep LIST "$E2E_TMP/node$n.log")"
done

# The same tree again: found in the volume by name, nothing uploaded.
"$AIR" -o json run -f "$proj/train.yaml" > "$E2E_TMP/run2.json" 2> "$E2E_TMP/run2.err" || { cat "$E2E_TMP/run2.err"; fail "second run failed"; }
[ "$(json_get "$E2E_TMP/run2.json" 'd["snapshot_uploaded_bytes"]')" = 0 ] ||
  fail "an unchanged tree was uploaded again: $(cat "$E2E_TMP/run2.json")"

# Deleted from the volume between upload and submit: the workspace refuses the run and names the path. (The
# CLI checks the volume first, so submit through the API with the digest of the deleted file.)
"$AIR" fs rm "/Volumes/main/default/snapshots/.internal/$digest.tar.zst" || fail "air fs rm failed"
python3 - "$proj/train.yaml" "$digest" > "$E2E_TMP/submit.json" <<'PY' || fail "building the submit request failed"
import json, sys
print(json.dumps({"workload_yaml": open(sys.argv[1]).read(), "file_name": "train.yaml", "base_dir": ".",
                  "snapshot_digest": sys.argv[2]}))
PY
url=$(json_get "$AIR_HOME/server.json" 'd["url"]')
token=$(json_get "$AIR_HOME/server.json" 'd["token"]')
resp=$(curl -s -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  --data-binary @"$E2E_TMP/submit.json" "$url/api/air/v1/runs" || true)
echo "$resp" | grep -q "SNAPSHOT_MISSING" || fail "a run whose snapshot left the volume was not refused: $resp"
echo "$resp" | grep -qF "/Volumes/main/default/snapshots/.internal/$digest.tar.zst does not exist" ||
  fail "the refusal does not name the path: $resp"

# A remote_volume that names no volume: a located error, nothing sent.
sed -i 's#remote_volume: /Volumes/main/default/snapshots#remote_volume: /Volumes/main#' "$proj/train.yaml"
if "$AIR" run -f "$proj/train.yaml" --dry-run > "$E2E_TMP/bad.txt" 2>&1; then fail "a remote_volume outside a volume was accepted"; fi
grep -q "train.yaml:[0-9]*:[0-9]*: error: 'remote_volume' is not a usable volume path" "$E2E_TMP/bad.txt" ||
  fail "no located error for a bad remote_volume: $(cat "$E2E_TMP/bad.txt")"
echo "PASS: snapshot_remote_volume"
