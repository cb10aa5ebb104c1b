#!/usr/bin/env bash
# The node's code cache (launcher/agent/code_cache.h), root workspace with the run sandbox: the nodes of two
# runs of the same snapshot get their code as read-only links to one unpacked copy. A run cannot change a
# snapshot file in place (write, append, chmod), can replace it in its own folder (rm + new file) and add
# files; the next run of the same digest sees the original bytes and none of the first run's files.
source "$(dirname "$0")/lib/common.bash"
[ "$(id -u)" = 0 ] || { echo "skip: the code cache serves a root agent's sandboxed runs (run as root)"; exit 125; }
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }
"$AIR" list > /dev/null
"$AIR" server status | grep -q "isolation: local backend: every run's commands in a sandbox" ||
  { echo "skip: this machine cannot build the run sandbox"; exit 125; }

proj="$E2E_TMP/proj"
mkdir -p "$proj/pkg"
echo "original-$$" > "$proj/pkg/data.txt"
cat > "$E2E_TMP/tamper.yaml" <<'YAML'
experiment_name: e2e-code-cache
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: proj
command: |
  cd "$CODE_SOURCE_PATH"
  echo "SEEN=$(cat pkg/data.txt)"
  ls -a pkg | tr '\n' ' ' | sed 's/^/LIST=/'; echo
  printf tampered > pkg/data.txt 2>/dev/null && echo "WRITE=yes" || echo "WRITE=refused"
  printf tampered >> pkg/data.txt 2>/dev/null && echo "APPEND=yes" || echo "APPEND=refused"
  chmod 666 pkg/data.txt 2>/dev/null && echo "CHMOD=yes" || echo "CHMOD=refused"
  rm pkg/data.txt && echo "mine-$NODE_RANK" > pkg/data.txt && echo "REPLACED=$(cat pkg/data.txt)"
  echo made > pkg/new.txt && echo "NEW=yes"
max_retries: 0
YAML

for round in 1 2; do
  R=$(submit "$E2E_TMP/tamper.yaml")
  wait_state "$R" SUCCEEDED 60
  for node in 0 1; do
    log="$E2E_TMP/r$round-n$node.log"
    "$AIR" logs "$R" --node "$node" --no-follow > "$log"
    grep -qx "SEEN=original-$$" "$log" || fail "round $round node $node did not see the snapshot's bytes: $(cat "$log")"
    grep -qx "LIST=. .. data.txt " "$log" || fail "round $round node $node saw files no snapshot has: $(cat "$log")"
    for op in WRITE APPEND CHMOD; do
      grep -qx "$op=refused" "$log" || fail "round $round node $node: $op on a shared file was not refused: $(cat "$log")"
    done
    grep -qx "REPLACED=mine-$node" "$log" || fail "round $round node $node could not replace its own copy: $(cat "$log")"
    grep -qx "NEW=yes" "$log" || fail "round $round node $node could not add a file: $(cat "$log")"
    agent_log=$(ls "$AIR_HOME"/runs/"$R"/attempt_1/node_"$node"/agent.log)
    grep -q "code ready: .*node's code cache, 1 read-only files linked" "$agent_log" ||
      fail "round $round node $node did not take its code from the cache: $(cat "$agent_log")"
  done
done
# One unpacked copy on the host, still the snapshot's bytes.
copies=$(find "$AIR_HOME/cache/code" -name data.txt | wc -l)
[ "$copies" = 1 ] || fail "expected one cached copy, found $copies"
[ "$(cat "$(find "$AIR_HOME/cache/code" -name data.txt)")" = "original-$$" ] || fail "the cached copy changed"
echo "code_cache_shared: ok"
