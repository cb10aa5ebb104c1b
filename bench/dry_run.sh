#!/usr/bin/env bash
# Median wall time of `air run -f <reference> --dry-run` against the process floor (`air --version`),
# over N runs each (default 25). Prints a table. Usage: bench/dry_run.sh [N] [path/to/air]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-25}
air=${2:-build/bin/air}
workload=examples/multinode_llm_sft/train.yaml
if [ ! -x "$air" ]; then echo "dry_run.sh: $air not found; build first (scripts/build)" >&2; exit 1; fi
if [ "$runs" -lt 20 ]; then echo "dry_run.sh: use at least 20 runs" >&2; exit 2; fi

# Times one command N times (after 3 warm-up runs) and prints the median in milliseconds.
median_ms() {
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
for _ in range(3):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
samples = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    samples.append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(samples):.2f} {min(samples):.2f} {max(samples):.2f}")
PY
}

read -r floor_med floor_min floor_max < <(median_ms "$air" --version)
read -r dry_med dry_min dry_max < <(median_ms "$air" run -f "$workload" --dry-run)
read -r json_med json_min json_max < <(median_ms "$air" run -f "$workload" --dry-run -o json)
over=$(python3 -c "print(f'{$dry_med - $floor_med:.2f}')")

printf '%-44s %10s %10s %10s\n' "command ($runs runs each)" "median ms" "min ms" "max ms"
printf '%-44s %10s %10s %10s\n' "air --version (process floor)" "$floor_med" "$floor_min" "$floor_max"
printf '%-44s %10s %10s %10s\n' "air run -f <reference> --dry-run" "$dry_med" "$dry_min" "$dry_max"
printf '%-44s %10s %10s %10s\n' "air run -f <reference> --dry-run -o json" "$json_med" "$json_min" "$json_max"
printf '\ndry-run above the floor: %s ms (target <= 5 ms); dry-run median %s ms (target <= 15 ms)\n' "$over" "$dry_med"
