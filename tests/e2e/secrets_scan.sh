#!/usr/bin/env bash
# Secrets leave no trace: runs that use two secrets (a 2-node run that prints them in several encodings,
# one that fails right after printing one, one that is retried, one canceled while printing), then scans
# everything the workspace and the agents wrote ($AIR_HOME: database and WAL, logs, run folders, spools,
# agent logs, server log) and the stdout/stderr of every command of this test for the values in every
# encoding (lib/secret_scan.py: plain, JSON, base64, base64url, URL-encoded, hex): 0 hits.
source "$(dirname "$0")/lib/common.bash"

# '~~~' makes base64 and base64url differ; ':/?@+ ' make the URL-encoded form differ from the value.
S1="~~~sk-$(python3 -c 'import secrets; print(secrets.token_hex(12))'):/?@+ end"
S2="db-pass-$(python3 -c 'import secrets; print(secrets.token_hex(10))')"
export SCAN_SECRETS="$S1"$'\n'"$S2"
cmds="$E2E_TMP/cmd"
mkdir -p "$cmds"
n=0
# c ARGS...: runs an air command with its stdout and stderr kept for the scan; returns its status.
c() { n=$((n + 1)); "$AIR" "$@" > "$cmds/$n.out" 2> "$cmds/$n.err"; }

c secrets create-scope scan || fail "create-scope"
printf %s "$S1" | c secrets put-secret scan api_key || fail "put-secret api_key: $(cat "$cmds/$n.err")"
printf %s "$S2" | c secrets put-secret scan db_pass || fail "put-secret db_pass"
c secrets list-secrets scan || fail "list-secrets"

proj="$E2E_TMP/proj"
mkdir -p "$proj"
common="compute: {accelerator_type: CPU_1xHOST, num_accelerators: 2}
secrets: {API_KEY: scan/api_key, DB_PASS: scan/db_pass}"
cat > "$proj/print.yaml" <<YAML
experiment_name: scan-print
$common
command: |
  echo "plain \$API_KEY \$DB_PASS"
  echo "b64 \$(printf %s "\$API_KEY" | base64 -w0) \$(printf %s "\$DB_PASS" | base64 -w0)"
  echo "b64url \$(printf %s "\$API_KEY" | base64 -w0 | tr '+/' '-_' | tr -d =)"
  echo "url \$(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["API_KEY"], safe=""))')"
  echo "json \$(python3 -c 'import os, json; print(json.dumps({"k": os.environ["API_KEY"]}))')"
  printf 'split %s' "\${DB_PASS:0:9}"; sleep 0.2; printf '%s done\n' "\${DB_PASS:9}"
  echo "err \$API_KEY" >&2
max_retries: 0
YAML
cat > "$proj/fail.yaml" <<YAML
experiment_name: scan-fail
$common
command: |
  echo "about to fail with \$DB_PASS"
  echo "\$API_KEY" >&2
  exit 3
max_retries: 1
YAML
cat > "$proj/cancel.yaml" <<YAML
experiment_name: scan-cancel
$common
command: |
  while true; do echo "tick \$API_KEY"; sleep 0.1; done
max_retries: 0
YAML

c run -f "$proj/print.yaml" --watch || fail "the printing run failed: $(cat "$cmds/$n.err")"
c -o json run -f "$proj/fail.yaml" || fail "submit fail.yaml"
fail_id=$(json_get "$cmds/$n.out" 'd["run_id"]')
c -o json run -f "$proj/cancel.yaml" || fail "submit cancel.yaml"
cancel_id=$(json_get "$cmds/$n.out" 'd["run_id"]')
wait_state "$fail_id" FAILED 60
for _ in $(seq 1 100); do
  "$AIR" logs "$cancel_id" 2>/dev/null | grep -q tick && break
  sleep 0.1
done
c cancel "$cancel_id" || fail "cancel"
wait_state "$cancel_id" CANCELED 40
print_id=$("$AIR" -o json list --all-status | json_get - '[r["run_id"] for r in d["runs"] if r["experiment_name"] == "scan-print"][0]')

# Everything a user would look at, kept for the scan.
for id in "$print_id" "$fail_id" "$cancel_id"; do
  # `air logs` of a failed or canceled run exits 1 by design: the output is what matters here.
  c get run "$id" || true; c -o json get run "$id" || true; c logs "$id" --all-nodes || true
  c logs "$id" --node 1 || true
done
c list --all-status; c -o json list --all-status
c run -f "$proj/print.yaml" --dry-run || fail "dry-run: $(cat "$cmds/$n.err")"
grep -q '^\[node 0\] plain \[REDACTED\] \[REDACTED\]$' "$cmds"/*.out || fail "the printing run's log is not redacted as expected"
[ "$(run_field "$fail_id" 'len(d["attempts"])')" = 2 ] || fail "the failing run was not retried"
c server stop  # the database and its WAL as the workspace leaves them

python3 "$(dirname "$0")/lib/secret_scan.py" "$AIR_HOME" "$cmds" > "$E2E_TMP/scan.txt" || {
  cat "$E2E_TMP/scan.txt"; fail "secret values found"; }
cores=$(find "$AIR_HOME" "$E2E_TMP" /tmp -maxdepth 1 -name 'core*' -newer "$proj/print.yaml" 2>/dev/null | wc -l)
[ "$cores" = 0 ] || fail "core dumps were written"
echo "ok: $(tail -1 "$E2E_TMP/scan.txt")"
