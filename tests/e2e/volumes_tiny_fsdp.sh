#!/usr/bin/env bash
# Volumes end to end, as a non-root user (as root, the script makes one and runs itself as it): the tiny
# FSDP example with output_dir /Volumes/main/default/ckpt/tiny through `air run --watch`; the checkpoint
# lands in the workspace's volume storage (owned by the user), `air get run` lists it, `air fs ls` shows
# it, `air fs cp -r` brings it back and air-train loads it. Then the fallback: with namespaces off, the
# notice is said at submit and in the node log, and air-train maps output_dir through AIR_VOLUMES_ROOT.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }

if [ "$(id -u)" = 0 ]; then
  user=air-e2e-vol
  id "$user" >/dev/null 2>&1 || useradd --system --create-home --shell /bin/bash "$user" ||
    { echo "skip: cannot create a non-root user"; exit 125; }
  # The checkout may sit where that user cannot read (/root): give it copies of what it needs.
  copy=$(mktemp -d /tmp/air-e2e-vol-src-XXXXXX)
  mkdir -p "$copy/bin" "$copy/tests/e2e"
  cp "$BIN/air" "$BIN/air-torchrun" "$BIN/air-train" "$copy/bin/"
  cp -r "$SRC/examples" "$copy/"
  cp -r "$(dirname "$0")/." "$copy/tests/e2e/"
  chmod -R a+rX "$copy"
  set +e
  runuser -u "$user" -- env AIR_SOURCE_DIR="$copy" AIR_BIN_DIR="$copy/bin" HOME="$(getent passwd "$user" | cut -d: -f6)" \
    PATH="$PATH" bash "$copy/tests/e2e/$(basename "$0")" "$@"
  rc=$?
  rm -rf "$copy"
  exit $rc
fi
[ -e /Volumes ] && { echo "skip: this machine has a /Volumes of its own"; exit 125; }
source "$(dirname "$0")/lib/common.bash"
export OMP_NUM_THREADS=1
echo "running as $(id -un) (uid $(id -u))"

# The tiny example with its checkpoint in a volume (and fewer steps: this test is about where it lands).
sed -e "s|root_path: \.\.|root_path: $SRC/examples|" -e 's|output_dir: checkpoint|output_dir: /Volumes/main/default/ckpt/tiny|' \
  -e 's|max_steps: 30|max_steps: 4|' -e 's|warmup_steps: 3|warmup_steps: 1|' "$SRC/examples/tiny_fsdp/train.yaml" > "$E2E_TMP/train.yaml"
grep -q 'output_dir: /Volumes/main/default/ckpt/tiny' "$E2E_TMP/train.yaml" || fail "could not rewrite the example"

"$AIR" run -f "$E2E_TMP/train.yaml" --watch > "$E2E_TMP/watch.out" 2> "$E2E_TMP/watch.err" ||
  { cat "$E2E_TMP/watch.err"; tail -30 "$E2E_TMP/watch.out"; fail "air run --watch exited non-zero"; }
grep -q "note: volumes" "$E2E_TMP/watch.err" && fail "a fallback notice although bwrap works: $(cat "$E2E_TMP/watch.err")"
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
store="$AIR_HOME/volumes/main/default/ckpt/tiny"
for f in config.json model.safetensors tokenizer.json; do
  [ -f "$store/$f" ] || fail "the checkpoint is not in the volume storage: $store/$f missing"
done
[ "$(stat -c %u "$store/config.json")" = "$(id -u)" ] || fail "the checkpoint's files are not owned by $(id -un)"
[ -e /Volumes ] && fail "the run created /Volumes on the host"
grep -q "volumes: /Volumes is $AIR_HOME/volumes" "$AIR_HOME/runs/$id/attempt_1/node_0/agent.log" ||
  fail "node 0's agent log does not say how /Volumes was mapped"

# air get run lists what the run wrote under /Volumes.
"$AIR" get run "$id" > "$E2E_TMP/get.txt"
files=$(find "$store" -type f | wc -l) bytes=$(find "$store" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
grep -q "/Volumes/main/default/ckpt/tiny  $files file(s), $bytes bytes" "$E2E_TMP/get.txt" ||
  fail "air get run does not list the volume ($files files, $bytes bytes): $(grep -A3 Volumes "$E2E_TMP/get.txt")"
[ "$(run_field "$id" 'd["volumes"][0]["files"]')" = "$files" ] || fail "get run -o json: wrong file count"

# air fs ls / cp -r: the checkpoint comes back through the Files API and air-train loads it.
"$AIR" fs ls dbfs:/Volumes/main/default/ckpt/tiny > "$E2E_TMP/ls.txt"
grep -qx "config.json" "$E2E_TMP/ls.txt" || fail "air fs ls does not show config.json: $(cat "$E2E_TMP/ls.txt")"
"$AIR" fs ls -o json /Volumes/main/default/ckpt/tiny | json_get - '[e["name"] for e in d["files"]]' | grep -q model.safetensors ||
  fail "air fs ls -o json does not show model.safetensors"
"$AIR" fs cp -r dbfs:/Volumes/main/default/ckpt/tiny "$E2E_TMP/fetched" 2> "$E2E_TMP/cp.err" || { cat "$E2E_TMP/cp.err"; fail "air fs cp -r failed"; }
for f in $(cd "$store" && find . -type f); do
  cmp -s "$store/$f" "$E2E_TMP/fetched/$f" || fail "fetched $f differs from the volume's"
done
"$BIN/air-train" --set "model_name=$E2E_TMP/fetched" --set "dataset_name=$SRC/examples/data/alpaca_tiny.json" \
  --set init=pretrained --set max_seq_len=128 --set max_steps=1 --set save=false > "$E2E_TMP/reload.log" 2>&1 ||
  { tail -20 "$E2E_TMP/reload.log"; fail "air-train cannot load the fetched checkpoint"; }
echo "ok: checkpoint in the volume ($files files, $bytes bytes), fetched with air fs cp -r, loaded by air-train"

# Uploads go back the same way; an existing file needs --overwrite.
echo hello > "$E2E_TMP/up.txt"
"$AIR" fs cp "$E2E_TMP/up.txt" dbfs:/Volumes/main/default/ckpt/ 2>/dev/null
[ "$(cat "$AIR_HOME/volumes/main/default/ckpt/up.txt")" = hello ] || fail "air fs cp upload did not land"
"$AIR" fs cp "$E2E_TMP/up.txt" dbfs:/Volumes/main/default/ckpt/up.txt 2> "$E2E_TMP/again.err" && fail "cp replaced a file without --overwrite"
grep -q "add --overwrite" "$E2E_TMP/again.err" || fail "no hint about --overwrite: $(cat "$E2E_TMP/again.err")"
# An upload killed mid-write leaves nothing under its name (and its temporary file goes away).
head -c 400000000 /dev/zero > "$E2E_TMP/big.bin"
"$AIR" fs cp "$E2E_TMP/big.bin" dbfs:/Volumes/main/default/ckpt/big.bin 2>/dev/null & cp_pid=$!
for _ in $(seq 1 500); do ls -a "$AIR_HOME/volumes/main/default/ckpt" | grep -q '\.air-part-' && break; sleep 0.01; done
ls -a "$AIR_HOME/volumes/main/default/ckpt" | grep -q '\.air-part-' || fail "the upload never started writing"
kill -9 $cp_pid; wait $cp_pid 2>/dev/null || true
for _ in $(seq 1 200); do ls -a "$AIR_HOME/volumes/main/default/ckpt" | grep -q '\.air-part-' || break; sleep 0.05; done
[ -e "$AIR_HOME/volumes/main/default/ckpt/big.bin" ] && fail "a killed upload left big.bin"
ls -a "$AIR_HOME/volumes/main/default/ckpt" | grep -q '\.air-part-' && fail "a killed upload left its temporary file"
rm -f "$E2E_TMP/big.bin"
echo "ok: an upload killed mid-write left no file under its name"
"$AIR" fs rm -r dbfs:/Volumes/main/default/ckpt/tiny
[ -e "$store" ] && fail "air fs rm -r left $store"

# ---- the fallback: no namespaces (forced), AIR_VOLUMES_ROOT instead ----
"$AIR" server stop >/dev/null
export AIR_SANDBOX=off
cat > "$E2E_TMP/fallback.yaml" <<EOF
experiment_name: volumes-fallback
compute: {accelerator_type: CPU_1xHOST, num_accelerators: 1}
env_variables: {OUT: /Volumes/main/default/fb}
command: test ! -e /Volumes && echo "root=\$AIR_VOLUMES_ROOT" && echo ok > "\$AIR_VOLUMES_ROOT/main/default/fb/x"
EOF
"$AIR" run -f "$E2E_TMP/fallback.yaml" --watch > "$E2E_TMP/fb.out" 2> "$E2E_TMP/fb.err" || { cat "$E2E_TMP/fb.err"; fail "the fallback run failed"; }
[ "$(grep -c "note: volumes: cannot give the command a private /Volumes (AIR_SANDBOX=off)" "$E2E_TMP/fb.err")" = 1 ] ||
  fail "the fallback is not said once at submit: $(cat "$E2E_TMP/fb.err")"
fid=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
"$AIR" logs "$fid" | grep -q "air node: volumes: cannot give the command a private /Volumes" || fail "the node log does not say it"
[ "$(cat "$AIR_HOME/volumes/main/default/fb/x")" = ok ] || fail "the fallback run did not write through AIR_VOLUMES_ROOT"
AIR_VOLUMES_ROOT="$E2E_TMP/vroot" "$BIN/air-train" --set "model_name=$SRC/examples/tiny_model" \
  --set "dataset_name=$SRC/examples/data/alpaca_tiny.json" --set init=random --set max_seq_len=64 --set max_steps=1 \
  --set output_dir=/Volumes/main/default/ckpt/direct > "$E2E_TMP/direct.log" 2>&1 || { tail "$E2E_TMP/direct.log"; fail "air-train with AIR_VOLUMES_ROOT failed"; }
[ -f "$E2E_TMP/vroot/main/default/ckpt/direct/config.json" ] || fail "air-train did not map output_dir through AIR_VOLUMES_ROOT"
echo "ok: fallback said at submit and in the node log; AIR_VOLUMES_ROOT honoured by the command and air-train"
