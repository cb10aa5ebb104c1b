#!/usr/bin/env bash
# The reference workload's shape end to end on the embedded local workspace: a secret HF_TOKEN from
# my_scope/hf_token, `parameters`, metrics logged to MLFLOW_TRACKING_URI. The command sees the real value
# (it prints token-ok when the value's SHA-256 matches), prints it plain, base64, URL-encoded and split across
# two writes; the node log shows [REDACTED] and never the value; `air get run` shows the metric and
# `--metrics` its history; no file under $AIR_HOME (database and WAL, logs, spools, agent logs, server log)
# holds the value in any of its forms; the dry-run and error messages do not print it either.
source "$(dirname "$0")/lib/common.bash"

# Characters that URL encoding changes (':', '/', '@', '+'), so the URL-encoded form differs from the value.
VALUE="hf_$(python3 -c 'import secrets; print(secrets.token_hex(16))'):s/c@r+t"
SHA=$(printf %s "$VALUE" | sha256sum | cut -d' ' -f1)
B64=$(printf %s "$VALUE" | base64 -w0)
URLENC=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1] + "/x y", safe=""))' "$VALUE")

# no_value WHAT FILE...: none of the value's forms is in the files.
no_value() {
  local what=$1; shift
  for form in "$VALUE" "$B64" "${B64%%=*}" "$URLENC"; do
    if grep -rlaF -- "$form" "$@" >/dev/null 2>&1; then
      fail "$what holds the secret value (form ${form:0:6}...): $(grep -rlaF -- "$form" "$@" | head -3)"
    fi
  done
}

out="$E2E_TMP/secrets.out"
"$AIR" secrets create-scope my_scope > "$out"
printf %s "$VALUE" | "$AIR" secrets put-secret my_scope hf_token >> "$out" 2>&1
"$AIR" secrets list-secrets my_scope >> "$out"
grep -q hf_token "$out" || fail "list-secrets does not show the key"
# A bad put (unknown scope, bad key) fails with a message naming no value.
printf %s "$VALUE" | "$AIR" secrets put-secret no_such_scope hf_token > "$E2E_TMP/bad1.out" 2>&1 && fail "a put into a missing scope succeeded"
printf %s "$VALUE" | "$AIR" secrets put-secret my_scope 'bad key!' > "$E2E_TMP/bad2.out" 2>&1 && fail "a put with a bad key succeeded"
grep -q "no_such_scope" "$E2E_TMP/bad1.out" || fail "the bad put does not name the scope: $(cat "$E2E_TMP/bad1.out")"
no_value "air secrets output" "$out" "$E2E_TMP/bad1.out" "$E2E_TMP/bad2.out"

proj="$E2E_TMP/proj"
mkdir -p "$proj"
cat > "$proj/log_metrics.py" <<'PY'
# Logs a few steps of "loss" and the hyperparameters to the workspace's MLflow API, as mlflow would.
import json, os, time, urllib.request, yaml
uri, run, tok = os.environ["MLFLOW_TRACKING_URI"], os.environ["MLFLOW_RUN_ID"], os.environ["MLFLOW_TRACKING_TOKEN"]
hp = yaml.safe_load(open(os.environ["HYPERPARAMETERS_PATH"]))
now = int(time.time() * 1000)
body = {"run_id": run,
        "metrics": [{"key": "loss", "value": 3.0 - 0.5 * s, "timestamp": now + s, "step": s} for s in range(4)],
        "params": [{"key": k, "value": str(v)} for k, v in sorted(hp.items())]}
req = urllib.request.Request(uri + "/api/2.0/mlflow/runs/log-batch", data=json.dumps(body).encode(),
                             headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
urllib.request.urlopen(req).read()
print("metrics-logged", flush=True)
PY
cat > "$proj/train.yaml" <<YAML
experiment_name: e2e-secrets
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: |
  cd \$CODE_SOURCE_PATH
  echo "plain: \$HF_TOKEN"
  echo "base64: \$(printf %s "\$HF_TOKEN" | base64 -w0)"
  echo "url: \$(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["HF_TOKEN"] + "/x y", safe=""))')"
  printf 'split: %s' "\${HF_TOKEN:0:12}"; sleep 0.3; printf '%s end\n' "\${HF_TOKEN:12}"
  echo "stderr: \$HF_TOKEN" >&2
  [ "\$(printf %s "\$HF_TOKEN" | sha256sum | cut -d' ' -f1)" = "\$EXPECTED_SHA" ] && echo token-ok
  if [ "\$NODE_RANK" = 0 ]; then python3 log_metrics.py; fi
env_variables:
  EXPECTED_SHA: '$SHA'
  HF_HOME: /tmp/hf
secrets:
  HF_TOKEN: 'my_scope/hf_token'
parameters:
  model_name: tiny
  learning_rate: 0.00002
  max_steps: 4
max_retries: 0
YAML

# The dry-run checks the secret exists in the running workspace and prints references only.
"$AIR" run -f "$proj/train.yaml" --dry-run > "$E2E_TMP/dry.out" 2>&1 || fail "dry-run failed: $(cat "$E2E_TMP/dry.out")"
grep -q "HF_TOKEN <- secret my_scope/hf_token" "$E2E_TMP/dry.out" || fail "dry-run lacks the reference"
grep -q "Secrets: all 1 exist" "$E2E_TMP/dry.out" || fail "dry-run did not check the secret: $(cat "$E2E_TMP/dry.out")"
"$AIR" -o json run -f "$proj/train.yaml" --dry-run > "$E2E_TMP/dry.json" 2>&1 || fail "dry-run -o json failed"
[ "$(json_get "$E2E_TMP/dry.json" 'd["secrets_check"]["checked"]')" = True ] || fail "dry-run -o json did not check"
no_value "the dry-run" "$E2E_TMP/dry.out" "$E2E_TMP/dry.json"

"$AIR" run -f "$proj/train.yaml" --watch > "$E2E_TMP/watch.out" 2> "$E2E_TMP/watch.err" ||
  { cat "$E2E_TMP/watch.err" "$E2E_TMP/watch.out"; fail "air run --watch failed"; }
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
[ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed"

for n in 0 1; do
  log="$E2E_TMP/node$n.log"
  "$AIR" logs "$id" --node $n > "$log"
  grep -qx "token-ok" "$log" || fail "node $n: the command did not see the real value: $(cat "$log")"
  grep -qx "plain: \[REDACTED\]" "$log" || fail "node $n: plain value not redacted: $(cat "$log")"
  grep -qx "base64: \[REDACTED\]" "$log" || fail "node $n: base64 not redacted"
  grep -q "^url: \[REDACTED\]" "$log" || fail "node $n: URL-encoded value not redacted: $(grep url: "$log")"
  grep -qx "split: \[REDACTED\] end" "$log" || fail "node $n: value split across writes not redacted: $(grep split: "$log")"
  grep -qx "stderr: \[REDACTED\]" "$log" || fail "node $n: stderr not redacted"
done
grep -qx "metrics-logged" "$E2E_TMP/node0.log" || fail "node 0 did not log metrics: $(cat "$E2E_TMP/node0.log")"
no_value "air logs" "$E2E_TMP"/node*.log "$E2E_TMP/watch.out" "$E2E_TMP/watch.err"

# get run shows the latest loss; --metrics the history (text and JSON).
"$AIR" get run "$id" > "$E2E_TMP/get.txt"
grep -Eq "^ +loss +1\.5 +step 3$" "$E2E_TMP/get.txt" || fail "get run does not show the latest loss: $(cat "$E2E_TMP/get.txt")"
"$AIR" -o json get run "$id" > "$E2E_TMP/get.json"
[ "$(json_get "$E2E_TMP/get.json" '[m["value"] for m in d["attempts"][0]["metrics"] if m["key"]=="loss"][0]')" = 1.5 ] ||
  fail "get run -o json lacks the metric"
"$AIR" get run "$id" --metrics > "$E2E_TMP/hist.txt"
[ "$(grep -cE '^  [0-3] ' "$E2E_TMP/hist.txt")" = 4 ] || fail "--metrics does not show 4 steps: $(cat "$E2E_TMP/hist.txt")"
"$AIR" -o json get run "$id" --metrics > "$E2E_TMP/hist.json"
[ "$(json_get "$E2E_TMP/hist.json" '[p["value"] for p in d["metrics"]["loss"]]')" = "[3.0, 2.5, 2.0, 1.5]" ] ||
  fail "--metrics -o json history wrong: $(cat "$E2E_TMP/hist.json")"
# The attempt's MLflow run is in the workload's experiment, has the logged params, and ended FINISHED.
mlflow_id=$(json_get "$E2E_TMP/get.json" 'd["attempts"][0]["mlflow_run_id"]')
python3 - "$AIR_HOME/server.json" "$mlflow_id" > "$E2E_TMP/mlflow.json" <<'PY'
import json, sys, urllib.request
d = json.load(open(sys.argv[1]))
def get(path):
    req = urllib.request.Request(d["url"] + path, headers={"Authorization": "Bearer " + d["token"]})
    return json.load(urllib.request.urlopen(req))
run = get("/api/2.0/mlflow/runs/get?run_id=" + sys.argv[2])["run"]
exp = get("/api/2.0/mlflow/experiments/get-by-name?experiment_name=e2e-secrets")["experiment"]
params = {p["key"]: p["value"] for p in run["data"]["params"]}
print(json.dumps({"status": run["info"]["status"], "same_exp": run["info"]["experiment_id"] == exp["experiment_id"],
                  "model_name": params.get("model_name")}))
PY
[ "$(cat "$E2E_TMP/mlflow.json")" = '{"status": "FINISHED", "same_exp": true, "model_name": "tiny"}' ] ||
  fail "the attempt's MLflow run is wrong: $(cat "$E2E_TMP/mlflow.json")"
no_value "air get run" "$E2E_TMP/get.txt" "$E2E_TMP/get.json" "$E2E_TMP/hist.txt" "$E2E_TMP/hist.json"

# A workload referencing secrets that do not exist is refused with all of them listed, by name.
sed -e "s#HF_TOKEN: 'my_scope/hf_token'#HF_TOKEN: 'my_scope/nope'\n  OTHER: 'other_scope/k'#" "$proj/train.yaml" > "$proj/missing.yaml"
rc=0; "$AIR" run -f "$proj/missing.yaml" > "$E2E_TMP/missing.out" 2>&1 || rc=$?
[ $rc = 2 ] || fail "submit with missing secrets exited $rc: $(cat "$E2E_TMP/missing.out")"
grep -q "my_scope/nope" "$E2E_TMP/missing.out" && grep -q "other_scope/k" "$E2E_TMP/missing.out" ||
  fail "not every missing secret is listed: $(cat "$E2E_TMP/missing.out")"
grep -q "air secrets put-secret other_scope k" "$E2E_TMP/missing.out" || fail "no put-secret hint"
grep -q "^air: 2 errors in .*missing.yaml; nothing was submitted$" "$E2E_TMP/missing.out" || fail "no summary line: $(cat "$E2E_TMP/missing.out")"
[ "$("$AIR" -o json list --all-status | json_get - 'len(d["runs"])')" = 1 ] || fail "a run with missing secrets was created"
# The dry-run warns about each missing one (the workspace's state, not the workload's fault) and exits 0.
rc=0; "$AIR" run -f "$proj/missing.yaml" --dry-run > "$E2E_TMP/missing-dry.out" 2>&1 || rc=$?
[ $rc = 0 ] || fail "dry-run with missing secrets exited $rc: $(cat "$E2E_TMP/missing-dry.out")"
grep -q "warning: secret 'OTHER' references other_scope/k, which does not exist" "$E2E_TMP/missing-dry.out" ||
  fail "dry-run does not warn about the missing secret: $(cat "$E2E_TMP/missing-dry.out")"
grep -q "air secrets put-secret my_scope nope" "$E2E_TMP/missing-dry.out" || fail "dry-run warning has no put-secret hint"
grep -q "^Secrets: 2 of 2 missing in the local workspace" "$E2E_TMP/missing-dry.out" || fail "no missing summary"
"$AIR" -o json run -f "$proj/missing.yaml" --dry-run > "$E2E_TMP/missing-dry.json" || fail "dry-run -o json failed"
[ "$(json_get "$E2E_TMP/missing-dry.json" '[m["severity"] for m in d["secrets_check"]["missing"]]')" = "['warning', 'warning']" ] ||
  fail "-o json does not list the missing secrets as warnings"

# Nothing under $AIR_HOME holds the value: database (and WAL), stored logs, spools, agent logs, server log.
ls "$AIR_HOME"/workspace.db >/dev/null || fail "no database"
compgen -G "$AIR_HOME/runs/$id/attempt_1/node_0/log.spool" >/dev/null || fail "no spool file to check"
no_value "\$AIR_HOME" "$AIR_HOME"

# Without a running workspace the dry-run says it did not check, and still succeeds.
"$AIR" server stop > /dev/null
"$AIR" run -f "$proj/train.yaml" --dry-run > "$E2E_TMP/dry2.out" 2>&1 || fail "dry-run without a workspace failed"
grep -q "not checked" "$E2E_TMP/dry2.out" || fail "dry-run does not say the secrets were not checked"
echo "ok: run $id"
