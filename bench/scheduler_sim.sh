#!/usr/bin/env bash
# The scheduler simulator (issue 30): utilisation, waits by size and class, and the longest gang wait for
# our policy (EASY backfill), plain FIFO and first-fit in id order, on a cluster-like mix and the
# adversarial trace; a team's day (issue 44) with fair share against first come first served (interactive
# users' waits, the sweep's, utilisation, the gangs' waits); then the time of one decision over 10,000
# queued runs of 100 users. CPU-light, one core.
# Usage: bench/scheduler_sim.sh [build dir]
set -euo pipefail
build=${1:-build}
cmake --build "$build" --target scheduler_sim >/dev/null
"$build/bin/scheduler_sim"
