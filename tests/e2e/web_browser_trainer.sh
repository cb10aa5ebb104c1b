#!/usr/bin/env bash
# The run page on the real thing: the tiny FSDP training example (2 nodes x 2 CPU ranks, air-train) in
# headless chromium: both nodes' logs appear while it trains, and once it has ended the loss chart has as
# many points as the MLflow API returns. Skipped (125) without the libtorch trainer, chromium or npm.
set -euo pipefail
SRC=${AIR_SOURCE_DIR:?}
BIN=${AIR_BIN_DIR:?}
[ -x "$BIN/air-train" ] && [ -x "$BIN/air-torchrun" ] || { echo "skip: air-train / air-torchrun not built"; exit 125; }
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/web/setup.bash"
export OMP_NUM_THREADS=1

id=$(submit "$SRC/examples/tiny_fsdp/train.yaml")
URL=$(json_get "$AIR_HOME/server.json" 'd["url"]')
AIR_WEB_URL="$URL" AIR_WEB_TOKEN="$("$AIR" ui --token | tail -n 1)" AIR_WEB_RUN="$id" AIR_CHROMIUM="$CHROMIUM" \
NODE_PATH="$NPM_DIR/node_modules" node "$(dirname "$0")/web/browser_trainer.mjs" || fail "the browser checks failed"
[ "$(run_field "$id" 'd["state"]')" = SUCCEEDED ] || fail "run $id did not succeed"
echo "ok: the tiny training run's page shows both nodes' logs and every loss point"
