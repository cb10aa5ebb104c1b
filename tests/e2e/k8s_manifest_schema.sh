#!/usr/bin/env bash
# `air run --dry-run --backend k8s` for both examples and both flavors, validated against the Kubernetes
# OpenAPI schema (npm package kubernetes-models, installed on first use next to the build); a broken copy
# must be refused, so the validator is not a pass-through. Skipped (125) without node/npm or the package.
set -euo pipefail
BIN=${AIR_BIN_DIR:?} SRC=${AIR_SOURCE_DIR:?}
command -v node >/dev/null && command -v npm >/dev/null || { echo "skip: node or npm not found"; exit 125; }
models=${AIR_K8S_MODELS_DIR:-$BIN/../k8s-models}
if [ ! -d "$models/node_modules/kubernetes-models" ]; then
  mkdir -p "$models"
  timeout 300 npm install --prefix "$models" --no-audit --no-fund --silent kubernetes-models@5.1.0 >/dev/null 2>&1 || {
    echo "skip: cannot install kubernetes-models@5.1.0 from npm"; exit 125; }
fi
# Node resolves packages from the script's folder upwards: the validator sits next to node_modules.
cp "$SRC/tests/e2e/k8s/validate.mjs" "$models/validate.mjs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for example in multinode_llm_sft tiny_cpu; do
  for flavor in "" --jobset; do
    out="$tmp/$example$flavor.json"
    "$BIN/air" run -f "$SRC/examples/$example/train.yaml" --dry-run --backend k8s $flavor -o json > "$out"
    echo -n "$example ${flavor:-(indexed job)}: "
    node "$models/validate.mjs" "$out"
  done
done

# The same check must refuse a manifest with a wrong type and an unknown enum value.
python3 - "$tmp/tiny_cpu.json" "$tmp/broken1.json" "$tmp/broken2.json" <<'PY'
import json, sys
good = json.load(open(sys.argv[1]))
b1 = json.loads(json.dumps(good)); b1["items"][1]["spec"]["completions"] = "2"
b2 = json.loads(json.dumps(good)); b2["items"][1]["spec"]["podFailurePolicy"]["rules"][0]["action"] = "RestartGang"
json.dump(b1, open(sys.argv[2], "w")); json.dump(b2, open(sys.argv[3], "w"))
PY
for broken in broken1 broken2; do
  if node "$models/validate.mjs" "$tmp/$broken.json" 2>"$tmp/$broken.err"; then
    echo "FAIL: the validator accepted $broken"; exit 1
  fi
  echo "refused as expected: $(cat "$tmp/$broken.err")"
done
echo "PASS"
