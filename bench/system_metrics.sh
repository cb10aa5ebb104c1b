#!/usr/bin/env bash
# The node agent's CPU cost of system metrics at 1 s and 10 s intervals (issue 45; target: <= 1% of a core
# at 10 s). One sample = NVML (the fake library of the tests, 8 GPUs, unless AIR_NVML_LIBRARY names the real
# one) + /proc + statvfs + the POST of the batch to a loopback HTTP server. Prints the machine's load with the
# table: figures taken on a loaded machine are "under load".
#   bash bench/system_metrics.sh [SAMPLES] [SECONDS_PER_INTERVAL]      (AIR_BIN_DIR: a build's bin folder)
set -euo pipefail
BIN=${AIR_BIN_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/bin}
[ -x "$BIN/system_metrics_bench" ] || { echo "build it first: cmake --build build --target system_metrics_bench air_fake_nvml"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${AIR_NVML_LIBRARY:-}" ]; then
  export AIR_NVML_LIBRARY="$BIN/libair_fake_nvml.so" AIR_FAKE_NVML_STATE="$tmp/gpus"
  for i in 0 1 2 3 4 5 6 7; do echo "95 40000 81559 600"; done > "$tmp/gpus"
  echo "NVML: the fake library, 8 GPUs ($AIR_NVML_LIBRARY)"
else
  echo "NVML: $AIR_NVML_LIBRARY"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
"$BIN/system_metrics_bench" "${1:-200}" "${2:-10}"
