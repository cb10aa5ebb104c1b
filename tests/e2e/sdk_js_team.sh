#!/usr/bin/env bash
# Databricks' JS SDK (@databricks/sdk-experimental, pinned in tests/e2e/sdk_js/package-lock.json) drives the
# Token API, token management, SCIM Me, secret scope ACLs and volume grants (Files API) against the workspace as an admin, alice and bob
# (tests/e2e/sdk_js/sdk_team.mjs says each step). Skips (125) when node/npm are missing or the npm registry
# cannot be reached; the install is kept in the build tree and reused.
source "$(dirname "$0")/lib/common.bash"
src=$(cd "$(dirname "$0")" && pwd)/sdk_js
for tool in node npm; do
  command -v $tool >/dev/null || { echo "skipped: $tool is not installed (scripts/setup installs it)"; exit 125; }
done
work=$(cd "$AIR_BIN_DIR/.." && pwd)/sdk-js
mkdir -p "$work"
stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -c1-16)
if [ "$(cat "$work/.installed" 2>/dev/null)" != "$stamp" ]; then
  cp "$src/package.json" "$src/package-lock.json" "$work/"
  if ! (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --cache "$work/npm-cache" \
        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000 >"$work/npm-install.log" 2>&1); then
    if ! (cd "$work" && timeout 30 npm ping --cache "$work/npm-cache" >/dev/null 2>&1); then
      echo "skipped: npm cannot reach its registry, so Databricks' JS SDK cannot be installed"; exit 125
    fi
    echo "error: npm ci failed although the registry answers:"; tail -20 "$work/npm-install.log"; exit 1
  fi
  echo "$stamp" >"$work/.installed"
fi
cp "$src/sdk_team.mjs" "$work/"

"$AIR" list > /dev/null  # starts the embedded workspace; this shell's token is its bootstrap admin's
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
ADMIN=$(json_get "$AIR_HOME/server.json" 'd["token"]')
"$AIR" -o json users add alice --token > "$E2E_TMP/alice.json"
"$AIR" -o json users add bob --token > "$E2E_TMP/bob.json"
ALICE=$(json_get "$E2E_TMP/alice.json" 'd["token_value"]')
BOB=$(json_get "$E2E_TMP/bob.json" 'd["token_value"]')
VALUE="hf_$(python3 -c 'import secrets; print(secrets.token_hex(16))')"

(cd "$work" && timeout 180 node sdk_team.mjs "$URL" "$ADMIN" "$ALICE" "$BOB" "$VALUE") > "$E2E_TMP/sdk.out" 2>&1 ||
  { cat "$E2E_TMP/sdk.out"; fail "Databricks' JS SDK: a step failed"; }
cat "$E2E_TMP/sdk.out"
# The workspace's log and audit trail never hold the value or a token, and the audit shows the SDK's steps.
grep -qF "$VALUE" "$AIR_HOME/server.log" && fail "the workspace log holds the secret value"
"$AIR" -o json audit --since 1h > "$E2E_TMP/audit.json"
for tok in "$VALUE" "$ALICE" "$BOB"; do grep -qF "$tok" "$E2E_TMP/audit.json" && fail "the audit log holds a secret or a token"; done
python3 - "$E2E_TMP/audit.json" <<'PY' || fail "audit: $(head -c 2000 "$E2E_TMP/audit.json")"
import json, sys
d = json.load(open(sys.argv[1])); d = d.get("data", d)
rows = d["entries"]
seen = {(r.get("user"), r.get("route", r.get("action", ""))) for r in rows}
need = [("alice", "/api/2.0/token/create"), ("alice", "/api/2.0/token/delete"), ("alice", "/api/2.0/secrets/acls/put"),
        ("alice", "/api/2.0/secrets/acls/delete"), ("bob", "/api/2.0/secrets/get")]
missing = [n for n in need if not any(u == n[0] and n[1] in r for u, r in seen)]
if missing: print("missing audit rows:", missing, sorted(seen)[:40]); sys.exit(1)
# bob's secret reads: refused (403) before the grant and after its deletion, answered (200) while granted.
reads = [r["status"] for r in rows if r.get("user") == "bob" and r.get("route") == "/api/2.0/secrets/get"]
if reads.count(403) < 2 or 200 not in reads: print("bob's secret reads in the audit:", reads); sys.exit(1)
PY
echo "PASS"
