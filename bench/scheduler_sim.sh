#!/usr/bin/env bash
# The scheduler simulator (issue 30): utilisation, waits by size and class, and the longest gang wait for
# our policy (EASY backfill), plain FIFO and first-fit in id order, on a cluster-like mix and the
# adversarial trace; then the time of one decision over 10,000 queued runs. CPU-light, one core.
# Usage: bench/scheduler_sim.sh [build dir]
set -euo pipefail
build=${1:-build}
cmake --build "$build" --target scheduler_sim >/dev/null
"$build/bin/scheduler_sim"
