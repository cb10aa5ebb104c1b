# Shared by tenant_hostile.sh (local backend) and slurm_tenant_hostile.sh (the 2-node Slurm cluster):
# alice's workload (a secret, a volume, code) keeps running while bob's workload, knowing every host path,
# tries to read /proc/*/environ, $AIR_HOME (also by walking up from CODE_SOURCE_PATH), the blobs, alice's
# run folder, server.json and the key files, to write into her volume's host folder and to signal her
# processes (docs/security.md, "Threat model"). Sourced after common.bash; the caller sets URL (the
# workspace's address) and has the admin's token in AIR_TOKEN or the local daemon's server.json.

as() {  # as USER_TOKEN air-args...
  local tok=$1; shift
  AIR_HOST="$URL" AIR_TOKEN="$tok" "$AIR" "$@"
}

# Sets ALICE and BOB (their tokens).
tenant_users() {
  "$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
  "$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
  ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
  BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
}

# alice: a secret, a volume with a file, code with a marker; her command keeps running (sleep 3017).
# Sets SECRET, CODE_MARK, A (her run), alice_pid, ALICE_UID, VOL (her volume's host folder), ALICE_RUN_DIR.
tenant_alice_starts() {
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
  for _ in $(seq 150); do as "$ALICE" logs "$A" --no-follow 2>/dev/null | grep -q alice-started && break; sleep 0.1; done
  as "$ALICE" logs "$A" --no-follow | grep -q alice-started || fail "alice's command did not start: $(as "$ALICE" logs "$A" --no-follow)"
  alice_pid=$(pgrep -f "^sleep 3017$" | head -1)
  [ -n "$alice_pid" ] || fail "alice's sleep is not on the host"
  tr '\0' '\n' < "/proc/$alice_pid/environ" | grep -qx "ALICE_SECRET=$SECRET" || fail "alice's command lacks her secret"
  VOL="$AIR_HOME/volumes/main/alice/data"
  [ -f "$VOL/run.txt" ] || fail "alice's run did not write her volume"
  ALICE_RUN_DIR="$AIR_HOME/runs/$A"
  ALICE_UID=$(stat -c %u "/proc/$alice_pid")
  tenant_sums > "$E2E_TMP/before.sums"
}

tenant_sums() { (cd "$VOL" && sha256sum -- *) ; sha256sum "$AIR_HOME/server.json"; }

# bob's workload: every attack, each printing a marker only where it worked. Sets B; his log in bob.log.
tenant_bob_attacks() {
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
  # Her volume's host folder: reached only if her file is there (a folder made at that path in the
  # sandbox's private /tmp, where \$H lies in these tests, is his alone: the host check below tells).
  [ -e "\$H/volumes/main/alice/data/a.txt" ] && echo bob > "\$H/volumes/main/alice/data/a.txt" 2>/dev/null && echo "WROTE alice's volume"
  mkdir -p "\$H/volumes/main/alice/data" 2>/dev/null
  echo bob > "\$H/volumes/main/alice/data/bob.txt" 2>/dev/null
  kill -9 $alice_pid 2>/dev/null && echo "KILLED alice's pid"
  pkill -9 -f "sleep \$((3000 + 17))" && echo "PKILLED alice's sleep"
  kill -9 -1 2>/dev/null
  echo bob-done
max_retries: 0
YAML
  B=$(as "$BOB" -o json run -f "$E2E_TMP/b.yaml" | json_get - 'd["run_id"]')
  wait_state "$B" SUCCEEDED 90
  as "$BOB" logs "$B" --no-follow > "$E2E_TMP/bob.log"
  grep -q "bob-done" "$E2E_TMP/bob.log" || fail "bob's command did not finish: $(cat "$E2E_TMP/bob.log")"
}

# bob's log holds none of alice's and nothing of the workspace; on the host her command lives on and no
# file changed.
tenant_bob_found_nothing() {
  local log="$E2E_TMP/bob.log" seen
  grep -qF "$SECRET" "$log" && fail "bob's log holds alice's secret value"
  grep -qF "$CODE_MARK" "$log" && fail "bob's log holds alice's code"
  grep -q "alice's data" "$log" && fail "bob read alice's volume"
  grep -E "^(FOUND|FIND|CODE|WROTE|KILLED|PKILLED)" "$log" && fail "bob reached the workspace or alice's run (above)"
  grep -q "AIR_HOME in env: unset" "$log" || fail "bob's command has AIR_HOME: $(grep AIR_HOME "$log")"
  grep -q "ENV: AIR_NODE_TOKEN" "$log" && fail "bob's command read a node agent's environment"
  grep -q "sleep 3017" "$log" && fail "bob saw alice's processes"
  seen=$(sed -n 's/.*processes seen: \([0-9]*\).*/\1/p' "$log")
  [ -n "$seen" ] && [ "$seen" -le 8 ] || fail "bob's command sees $seen processes (its own are a handful)"
  grep "^WALK" "$log" | grep -q "server.json\|workspace.db\|blobs\|$A" &&
    fail "walking up from CODE_SOURCE_PATH shows the workspace: $(grep "^WALK" "$log")"
  # The folders above his node's folder are bare path components: $AIR_HOME holds only runs/, runs/ only his run.
  grep -qx "WALK $AIR_HOME: runs " "$log" || fail "bob sees in \$AIR_HOME: $(grep "^WALK $AIR_HOME:" "$log")"
  grep -qx "WALK $AIR_HOME/runs: $B " "$log" || fail "bob sees in runs/: $(grep "^WALK $AIR_HOME/runs:" "$log")"
  if [ "$(id -u)" = 0 ]; then  # a root workspace: each owner's own unix account
    grep -q "bob runs as air-u-bob" "$log" || fail "bob's command: $(grep 'runs as' "$log")"
    [ "$(id -u air-u-alice)" = "$ALICE_UID" ] || fail "alice's command runs as uid $ALICE_UID, not air-u-alice"
  fi
  kill -0 "$alice_pid" 2>/dev/null || fail "alice's command (pid $alice_pid) was killed"
  [ "$(run_field "$A" 'd["state"]')" = RUNNING ] || fail "alice's run is $(run_field "$A" 'd["state"]')"
  tenant_sums > "$E2E_TMP/after.sums"
  cmp -s "$E2E_TMP/before.sums" "$E2E_TMP/after.sums" || { diff "$E2E_TMP/before.sums" "$E2E_TMP/after.sums"; fail "files changed"; }
  [ ! -e "$VOL/bob.txt" ] || fail "a file appeared in alice's volume"
}

# bob through the API with what he learnt of alice's run: her snapshot digest (read from the host, as an
# attacker who saw `air get run` would), her volume, her secret through forged parameters (hers in the
# body, his in the query). Each is refused as if her objects did not exist; the audit log has each
# refusal as bob's, with the object the handler used.
tenant_bob_api_forgeries() {
  local digest r body
  digest=$(run_field "$A" 'd["snapshot_digest"]')
  [ ${#digest} = 64 ] || fail "no digest on alice's run: '$digest'"
  r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB" "$URL/api/air/v1/snapshots/$digest")
  [ "$r" = 404 ] || fail "bob GETs her snapshot: $r"
  body=$(python3 -c 'import json, sys; print(json.dumps({"workload_yaml": "experiment_name: b\ncompute:\n  accelerator_type: CPU_1xHOST\n  num_accelerators: 1\ncommand: ls\n", "file_name": "b.yaml", "snapshot_digest": sys.argv[1]}))' "$digest")
  r=$(curl -s -w ' %{http_code}' -X POST -H "Authorization: Bearer $BOB" -H "Content-Type: application/json" --data-binary "$body" "$URL/api/air/v1/runs")
  case "$r" in *SNAPSHOT_MISSING*" 400") ;; *) fail "bob's run naming her digest: $r" ;; esac
  r=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BOB" "$URL/api/2.0/fs/files/Volumes/main/alice/data/a.txt")
  [ "$r" = 404 ] || fail "bob downloads from her volume: $r"
  r=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H "Authorization: Bearer $BOB" --data-binary bob "$URL/api/2.0/fs/files/Volumes/main/alice/data/a.txt")
  [ "$r" = 403 ] || fail "bob uploads into her volume: $r"
  as "$BOB" secrets create-scope bob_scope > /dev/null
  printf 'bob-value' | as "$BOB" secrets put-secret bob_scope k > /dev/null 2>&1
  r=$(curl -s -w ' %{http_code}' -X GET -H "Authorization: Bearer $BOB" -H "Content-Type: application/json" \
        --data-binary '{"scope": "alice_scope", "key": "token"}' "$URL/api/2.0/secrets/get?scope=bob_scope&key=k")
  case "$r" in *" 403") ;; *) fail "bob read her secret through the body: $r" ;; esac
  printf %s "$r" | grep -qF "$SECRET" && fail "the refusal holds her secret"
  "$AIR" -o json audit --limit 100000 > "$E2E_TMP/audit.json"
  python3 - "$E2E_TMP/audit.json" "$digest" <<'PY' || fail "the audit log lacks a refusal of bob's (above)"
import json, sys
d = json.load(open(sys.argv[1]))["data"]["entries"]
digest = sys.argv[2]
def has(method, route, status, obj=None):
    ok = any(e["user"] == "bob" and e["method"] == method and e["route"] == route and e["status"] == status and
             (obj is None or e["object"] == obj) for e in d)
    if not ok: print("missing:", method, route, status, obj, file=sys.stderr)
    return ok
checks = [has("GET", "/api/air/v1/snapshots/" + digest, 404), has("POST", "/api/air/v1/runs", 400),
          has("GET", "/api/2.0/fs/files/Volumes/main/alice/data/a.txt", 404),
          has("PUT", "/api/2.0/fs/files/Volumes/main/alice/data/a.txt", 403),
          has("GET", "/api/2.0/secrets/get", 403, "alice_scope/token")]
checks.append(not any(e["user"] != "bob" and e["object"] == "bob_scope/k" and e["route"] == "/api/2.0/secrets/get" for e in d))
sys.exit(0 if all(checks) else 1)
PY
  for t in "$ALICE" "$BOB"; do grep -qF "$t" "$E2E_TMP/audit.json" && fail "the audit log holds a token"; done
  return 0
}
