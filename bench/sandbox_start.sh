#!/usr/bin/env bash
# What the run sandbox (docs/security.md, "Threat model") adds to a node's start: `bash -c true` plain beside
# the same command in the sandbox the node agent builds, and the agent's one probe; target <= 50 ms in all.
# Usage: bench/sandbox_start.sh [N] [build dir]. Needs an idle machine for its figures (`uptime` < 0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
build=${2:-build}
[ -x "$build/bin/sandbox_bench" ] || { echo "sandbox_start.sh: build the sandbox_bench target first" >&2; exit 1; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (figures need < 0.5); $(bwrap --version); uid $(id -u)"
"$build/bin/sandbox_bench" "$runs"
