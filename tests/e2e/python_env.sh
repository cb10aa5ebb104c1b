#!/usr/bin/env bash
# environment.dependencies on the local backend, offline: a local wheel is installed into one virtual
# environment under $AIR_HOME/envs that both nodes and a second run share (built once), the command runs
# with its bin first on PATH; a dependency pip cannot install fails the run with pip's output in the node
# log and a one-line summary in `air get run`.
source "$(dirname "$0")/lib/common.bash"
python3 -m venv --help >/dev/null 2>&1 || { echo "skip: python3 -m venv is not available"; exit 125; }

wheels="$E2E_TMP/wheels"
mkdir -p "$wheels"
python3 - "$wheels/airtoy-0.1-py3-none-any.whl" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("airtoy/__init__.py", "VALUE = 42\n")
    z.writestr("airtoy-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: airtoy\nVersion: 0.1\n")
    z.writestr("airtoy-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: air\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("airtoy-0.1.dist-info/RECORD", "")
PY

proj="$E2E_TMP/proj"
mkdir -p "$proj"
cat > "$proj/train.yaml" <<YAML
experiment_name: e2e-python-env
environment:
  version: '4'
  dependencies:
    - $wheels/airtoy-0.1-py3-none-any.whl
compute:
  accelerator_type: CPU_1xHOST
  num_accelerators: 2
command: |
  python3 -c 'import airtoy, sys; print("airtoy", airtoy.VALUE, sys.prefix)'
  echo "VIRTUAL_ENV=\$VIRTUAL_ENV"
  echo "PATH0=\${PATH%%:*}"
max_retries: 0
YAML

"$AIR" run -f "$proj/train.yaml" --watch > "$E2E_TMP/watch.out" 2>&1 || { cat "$E2E_TMP/watch.out"; fail "run failed"; }
id=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
envs=("$AIR_HOME"/envs/*/)
[ ${#envs[@]} = 1 ] || fail "expected one environment for two nodes, found ${#envs[@]}: ${envs[*]}"
env_dir="${envs[0]%/}"
for n in 0 1; do
  log=$("$AIR" logs "$id" --node $n)
  echo "$log" | grep -qx "airtoy 42 $env_dir" || fail "node $n did not import the package from the venv: $log"
  echo "$log" | grep -qx "VIRTUAL_ENV=$env_dir" || fail "node $n: VIRTUAL_ENV wrong"
  echo "$log" | grep -qx "PATH0=$env_dir/bin" || fail "node $n: the venv's bin is not first on PATH"
done

# A second run with the same environment reuses it.
"$AIR" run -f "$proj/train.yaml" --watch > "$E2E_TMP/watch2.out" 2>&1 || fail "second run failed"
envs=("$AIR_HOME"/envs/*/)
[ ${#envs[@]} = 1 ] || fail "the second run built another environment"

# A dependency pip cannot install fails the attempt: pip's output in the node log, a summary in get run.
sed -e "s#- $wheels/airtoy-0.1-py3-none-any.whl#- ./no-such-package-dir#" "$proj/train.yaml" > "$proj/bad.yaml"
rc=0; "$AIR" run -f "$proj/bad.yaml" --watch > "$E2E_TMP/bad.out" 2>&1 || rc=$?
[ $rc = 1 ] || fail "a failed install exited $rc: $(cat "$E2E_TMP/bad.out")"
bad=$("$AIR" -o json list --all-status | json_get - 'd["runs"][0]["run_id"]')
[ "$(run_field "$bad" 'd["state"]')" = FAILED ] || fail "the run with a bad dependency did not fail"
"$AIR" get run "$bad" > "$E2E_TMP/bad.txt"
grep -q "installing environment.dependencies failed: pip exited with code 1" "$E2E_TMP/bad.txt" ||
  fail "get run lacks the pip summary: $(cat "$E2E_TMP/bad.txt")"
"$AIR" logs "$bad" --node 0 > "$E2E_TMP/bad.log" || true  # exits 1: the run failed
grep -q "ERROR: .*no-such-package-dir" "$E2E_TMP/bad.log" || fail "the node log lacks pip's output: $(cat "$E2E_TMP/bad.log")"
echo "ok: runs $id $bad"
