#!/usr/bin/env bash
# README command (1) is re-runnable: scripts/main's steps (reference dry-run, the main job with --watch,
# logs --node 1, get run, the secrets flow) run twice against one workspace and exit 0 both times. The main
# job is a small 2-node workload here (same steps as the FSDP one, seconds instead of minutes).
source "$(dirname "$0")/lib/common.bash"
: "${AIR_SOURCE_DIR:?AIR_SOURCE_DIR must name the source tree}"

proj="$E2E_TMP/proj"
mkdir -p "$proj"
cat > "$proj/train.yaml" <<'YAML'
experiment_name: e2e-main-twice
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
code_source:
  type: snapshot
  snapshot:
    root_path: .
command: |
  for s in 1 2 3; do echo "node $NODE_RANK step $s"; done
max_retries: 0
YAML

main() {  # main N: runs scripts/main's steps, output in $E2E_TMP/mainN.out
  AIR_MAIN_STEPS_ONLY=1 AIR_MAIN_JOB="$proj/train.yaml" bash "$AIR_SOURCE_DIR/scripts/main" \
    > "$E2E_TMP/main$1.out" 2>&1 || { cat "$E2E_TMP/main$1.out"; fail "scripts/main run $1 exited $?"; }
}

main 1
# No workspace ran before the first dry-run: the secret was not checked.
grep -q "^Secrets: no workspace is running" "$E2E_TMP/main1.out" || fail "run 1: first dry-run checked secrets: $(cat "$E2E_TMP/main1.out")"
main 2
out="$E2E_TMP/main2.out"
# The second finds the first's workspace: the reference's secret is missing there, a warning and not an exit.
grep -q "^Secrets: 1 of 1 missing in the local workspace" "$out" || fail "run 2: no missing-secret summary: $(cat "$out")"
grep -q "warning: secret 'HF_TOKEN' references my_scope/hf_token, which does not exist in the workspace" "$out" ||
  fail "run 2: no missing-secret warning"
grep -q "hint: create it: air secrets put-secret my_scope hf_token" "$out" || fail "run 2: no put-secret hint"
for n in 1 2; do
  f="$E2E_TMP/main$n.out"
  grep -qx "node 1 step 3" "$f" || fail "run $n: air logs --node 1 did not show node 1's lines: $(cat "$f")"
  grep -q "SUCCEEDED" "$f" || fail "run $n: air get run does not show SUCCEEDED"
  grep -q "^  HF_TOKEN <- secret air_demo/hf_token" "$f" || fail "run $n: the secrets flow's dry-run is missing"
  grep -q "^Secrets: all 1 exist in the local workspace" "$f" || fail "run $n: the demo secret was not found"
  grep -q "demo-value-not-a-real-token" "$f" && fail "run $n: a secret value was printed"
done
[ "$("$AIR" -o json list --all-status | json_get - 'sorted(r["status"] for r in d["runs"])')" = "['SUCCEEDED', 'SUCCEEDED']" ] ||
  fail "not two SUCCEEDED runs: $("$AIR" list --all-status)"
[ "$("$AIR" -o json secrets list-scopes | json_get - '[s["name"] for s in d["scopes"]]')" = "['air_demo']" ] ||
  fail "the demo scope is not there exactly once"
echo "ok: scripts/main twice"
