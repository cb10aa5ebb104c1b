#!/usr/bin/env bash
# A run is a route (issue 40, docs/security.md "Threat model"), local backend: alice's workload (a secret, a
# volume, code) is running; bob's workload knows every host path of the workspace and tries to read
# /proc/*/environ, $AIR_HOME (also by walking up from CODE_SOURCE_PATH), the blobs, alice's run folder,
# server.json and the key files, to write into alice's volume's host folder and to signal her processes.
# It finds and changes nothing: checked in bob's log and on the host. Then the same machine without a
# sandbox (AIR_SANDBOX=off): `air server status` says so, a second user's run is refused with the reason,
# and `--single-trust-domain` lets it start.
source "$(dirname "$0")/lib/common.bash"
command -v bwrap >/dev/null || { echo "skip: bwrap (Debian package bubblewrap) not installed"; exit 125; }

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
"$AIR" server status > "$E2E_TMP/status.txt"
grep -q "isolation: local backend: every run's commands in a sandbox" "$E2E_TMP/status.txt" ||
  { echo "skip: this machine cannot build the run sandbox: $(cat "$E2E_TMP/status.txt")"; exit 125; }
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
as() {  # as USER_TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}
"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')

# alice: a secret, a volume with a file, code with a marker; her command keeps running.
SECRET="alice-secret-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
CODE_MARK="alice-code-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
as "$ALICE" secrets create-scope alice_scope
printf %s "$SECRET" | as "$ALICE" secrets put-secret alice_scope token
echo "alice's data" > "$E2E_TMP/a.txt"
as "$ALICE" fs mkdir dbfs:/Volumes/main/alice/data
as "$ALICE" fs cp "$E2E_TMP/a.txt" dbfs:/Volumes/main/alice/data/a.txt 2> /dev/null
mkdir -p "$E2E_TMP/alice_proj"
echo "print('$CODE_MARK')" > "$E2E_TMP/alice_proj/train.py"
# alice (not an admin) sends her code as a snapshot, as every user does.
cat > "$E2E_TMP/alice_proj/a.yaml" <<YAML
experiment_name: alice-private
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: |
  grep -q '$CODE_MARK' "\$CODE_SOURCE_PATH/train.py" || { echo "alice's code is missing"; exit 3; }
  echo "written by alice's run" > /Volumes/main/alice/data/run.txt
  echo alice-started
  exec sleep 3017
secrets:
  ALICE_SECRET: alice_scope/token
max_retries: 0
YAML
A=$(as "$ALICE" -o json run -f "$E2E_TMP/alice_proj/a.yaml" | json_get - 'd["run_id"]')
wait_state "$A" RUNNING 60
for _ in $(seq 100); do as "$ALICE" logs "$A" --no-follow 2>/dev/null | grep -q alice-started && break; sleep 0.1; done
as "$ALICE" logs "$A" --no-follow | grep -q alice-started || fail "alice's command did not start"
alice_pid=$(pgrep -f "^sleep 3017$" | head -1)
[ -n "$alice_pid" ] || fail "alice's sleep is not on the host"
tr '\0' '\n' < "/proc/$alice_pid/environ" | grep -qx "ALICE_SECRET=$SECRET" || fail "alice's command lacks her secret"
VOL="$AIR_HOME/volumes/main/alice/data"
[ -f "$VOL/run.txt" ] || fail "alice's run did not write her volume"
sums() { (cd "$VOL" && sha256sum -- *) ; sha256sum "$AIR_HOME/server.json"; }
sums > "$E2E_TMP/before.sums"
ALICE_RUN_DIR="$AIR_HOME/runs/$A"
ALICE_UID=$(stat -c %u "/proc/$alice_pid")

# bob's attack: he knows every host path (as an attacker reading the docs or `air get run` would).
cat > "$E2E_TMP/b.yaml" <<YAML
experiment_name: bob-hostile
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: |
  H='$AIR_HOME'
  echo "bob runs as \$(id -un) (uid \$(id -u))"
  echo "AIR_HOME in env: \${AIR_HOME:-unset}"
  echo "processes seen: \$(ls /proc | grep -cE '^[0-9]+\$')"
  for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < "\$f"; done 2>/dev/null | sed 's/^/ENV: /'
  for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < "\$f"; echo; done 2>/dev/null | sed 's/^/CMD: /'
  d="\$CODE_SOURCE_PATH"
  while [ "\$d" != / ]; do d=\$(dirname "\$d"); echo "WALK \$d: \$(ls -A "\$d" 2>&1 | tr '\\n' ' ')"; done
  for p in "\$H/server.json" "\$H/workspace.db" "\$H/blobs" "\$H/runs/$A" "\$H/volumes/main/alice/data/a.txt" \\
           '$ALICE_RUN_DIR/attempt_1/node_0/code/train.py'; do
    if [ -e "\$p" ]; then echo "FOUND \$p"; cat "\$p" 2>/dev/null | head -c 2000; fi
  done
  find / \\( -path /proc -o -path /sys -o -path /usr -o -path /dev \\) -prune -o \\( -name server.json -o -name 'workspace.db*' \\
    -o -name '*.key' -o -name 'master_key*' -o -name daemon.lock -o -name 'node_*.agent.log' \\) -print 2>/dev/null | sed 's/^/FIND /'
  grep -rl --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=dev --exclude-dir=opt \\
    "${CODE_MARK%-*}-""${CODE_MARK##*-}" / 2>/dev/null | sed 's/^/CODE /'
  mkdir -p "\$H/volumes/main/alice/data" 2>/dev/null
  echo bob > "\$H/volumes/main/alice/data/a.txt" 2>/dev/null && echo "WROTE alice's volume"
  echo bob > "\$H/volumes/main/alice/data/bob.txt" 2>/dev/null && echo "WROTE a file into alice's volume"
  kill -9 $alice_pid 2>/dev/null && echo "KILLED alice's pid"
  pkill -9 -f "sleep \$((3000 + 17))" && echo "PKILLED alice's sleep"
  kill -9 -1 2>/dev/null
  echo bob-done
max_retries: 0
YAML
B=$(as "$BOB" -o json run -f "$E2E_TMP/b.yaml" | json_get - 'd["run_id"]')
wait_state "$B" SUCCEEDED 60
as "$BOB" logs "$B" --no-follow > "$E2E_TMP/bob.log"
grep -q "bob-done" "$E2E_TMP/bob.log" || fail "bob's command did not finish: $(cat "$E2E_TMP/bob.log")"

# In bob's log: none of alice's, nothing of the workspace.
grep -qF "$SECRET" "$E2E_TMP/bob.log" && fail "bob's log holds alice's secret value"
grep -qF "$CODE_MARK" "$E2E_TMP/bob.log" && fail "bob's log holds alice's code"
grep -q "alice's data" "$E2E_TMP/bob.log" && fail "bob read alice's volume"
grep -E "^(FOUND|FIND|CODE|WROTE|KILLED|PKILLED)" "$E2E_TMP/bob.log" && fail "bob reached the workspace or alice's run (above)"
grep -q "AIR_HOME in env: unset" "$E2E_TMP/bob.log" || fail "bob's command has AIR_HOME: $(grep AIR_HOME "$E2E_TMP/bob.log")"
grep -q "ENV: AIR_NODE_TOKEN" "$E2E_TMP/bob.log" && fail "bob's command read a node agent's environment"
grep -q "sleep 3017" "$E2E_TMP/bob.log" && fail "bob saw alice's processes"
seen=$(sed -n 's/.*processes seen: \([0-9]*\).*/\1/p' "$E2E_TMP/bob.log")
[ -n "$seen" ] && [ "$seen" -le 8 ] || fail "bob's command sees $seen processes (its own are a handful)"
grep "^WALK" "$E2E_TMP/bob.log" | grep -q "server.json\|workspace.db\|blobs\|$A" &&
  fail "walking up from CODE_SOURCE_PATH shows the workspace: $(grep "^WALK" "$E2E_TMP/bob.log")"
# The folders above his node's folder are bare path components: $AIR_HOME holds only runs/, runs/ only his run.
grep -qx "WALK $AIR_HOME: runs " "$E2E_TMP/bob.log" || fail "bob sees in \$AIR_HOME: $(grep "^WALK $AIR_HOME:" "$E2E_TMP/bob.log")"
grep -qx "WALK $AIR_HOME/runs: $B " "$E2E_TMP/bob.log" || fail "bob sees in runs/: $(grep "^WALK $AIR_HOME/runs:" "$E2E_TMP/bob.log")"
if [ "$(id -u)" = 0 ]; then  # a root workspace: each owner's own unix account
  grep -q "bob runs as air-u-bob" "$E2E_TMP/bob.log" || fail "bob's command: $(grep 'runs as' "$E2E_TMP/bob.log")"
  [ "$(id -u air-u-alice)" = "$ALICE_UID" ] || fail "alice's command runs as uid $ALICE_UID, not air-u-alice"
fi

# On the host: alice's command lives on, her files and the workspace's are as they were.
kill -0 "$alice_pid" 2>/dev/null || fail "alice's command (pid $alice_pid) was killed"
[ "$(run_field "$A" 'd["state"]')" = RUNNING ] || fail "alice's run is $(run_field "$A" 'd["state"]')"
sums > "$E2E_TMP/after.sums"
cmp -s "$E2E_TMP/before.sums" "$E2E_TMP/after.sums" || { diff "$E2E_TMP/before.sums" "$E2E_TMP/after.sums"; fail "files changed"; }
[ ! -e "$VOL/bob.txt" ] || fail "a file appeared in alice's volume"
"$AIR" cancel "$A" > /dev/null
wait_state "$A" CANCELED 30

# Without a sandbox on this machine: said at start and by status; a second user's run is refused, the
# admin's own still runs; --single-trust-domain lets everyone's start.
"$AIR" server stop > /dev/null
start_server() {  # start_server [flags...]: a foreground workspace on this AIR_HOME, without a sandbox
  AIR_SANDBOX=off "$AIR" server --port 0 "$@" > "$E2E_TMP/server.out" 2>&1 &
  for _ in $(seq 100); do "$AIR" server status > /dev/null 2>&1 && break; sleep 0.1; done
  URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
  ADMIN=$(json_get "$AIR_HOME/server.json" 'd["token"]')
}
start_server
grep -q "isolation: NONE on the local backend (AIR_SANDBOX=off)" "$E2E_TMP/server.out" ||
  fail "air server does not say there is no sandbox: $(cat "$E2E_TMP/server.out")"
"$AIR" server status | grep -q "isolation: NONE on the local backend" || fail "status: $("$AIR" server status)"
"$AIR" -o json server status | json_get - 'd["isolation"]["sandbox"]' | grep -qx False || fail "status -o json"
cat > "$E2E_TMP/plain.yaml" <<'YAML'
experiment_name: plain
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 1
command: echo plain-ok
max_retries: 0
YAML
as "$BOB" run -f "$E2E_TMP/plain.yaml" > "$E2E_TMP/refused.out" 2>&1 && fail "bob's run was accepted without a sandbox"
grep -q "cannot seal runs off from each other on the local backend (AIR_SANDBOX=off), and it has 3 users" \
  "$E2E_TMP/refused.out" || fail "the refusal does not say why: $(cat "$E2E_TMP/refused.out")"
grep -q "single-trust-domain" "$E2E_TMP/refused.out" || fail "the refusal does not name --single-trust-domain"
R=$(as "$ADMIN" -o json run -f "$E2E_TMP/plain.yaml" | json_get - 'd["run_id"]')
AIR_HOST="$URL" AIR_TOKEN="$ADMIN" wait_state "$R" SUCCEEDED 60
as "$ADMIN" logs "$R" --no-follow | grep -q "sandbox: none on this node (AIR_SANDBOX=off)" ||
  fail "the admin's run log does not say it ran without a sandbox"
"$AIR" server stop > /dev/null
wait
start_server --single-trust-domain
grep -q "single-trust-domain: every user's runs start anyway" "$E2E_TMP/server.out" || fail "$(cat "$E2E_TMP/server.out")"
R=$(as "$BOB" -o json run -f "$E2E_TMP/plain.yaml" | json_get - 'd["run_id"]')
AIR_HOST="$URL" AIR_TOKEN="$ADMIN" wait_state "$R" SUCCEEDED 60
"$AIR" server stop > /dev/null
wait
echo "tenant_hostile: ok"
