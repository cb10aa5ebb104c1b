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

# Times one command N times (after 3 warm-up runs): median, min and max wall milliseconds, and the median
# CPU milliseconds (user + system), which a busy machine disturbs less than wall time.
median_ms() {
  python3 - "$runs" "$@" <<'PY'
import os, resource, statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
for _ in range(3):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
wall, cpu = [], []
for _ in range(runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall.append((time.perf_counter() - t) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
print(f"{statistics.median(wall):.2f} {min(wall):.2f} {max(wall):.2f} {statistics.median(cpu):.2f}")
PY
}

read -r floor_med floor_min floor_max floor_cpu < <(median_ms "$air" --version)
read -r dry_med dry_min dry_max dry_cpu < <(median_ms "$air" run -f "$workload" --dry-run)
read -r json_med json_min json_max json_cpu < <(median_ms "$air" run -f "$workload" --dry-run -o json)
over=$(python3 -c "print(f'{$dry_med - $floor_med:.2f}')")
over_cpu=$(python3 -c "print(f'{$dry_cpu - $floor_cpu:.2f}')")

printf '%-44s %10s %8s %8s %10s\n' "command ($runs runs each)" "median ms" "min ms" "max ms" "cpu ms"
printf '%-44s %10s %8s %8s %10s\n' "air --version (process floor)" "$floor_med" "$floor_min" "$floor_max" "$floor_cpu"
printf '%-44s %10s %8s %8s %10s\n' "air run -f <reference> --dry-run" "$dry_med" "$dry_min" "$dry_max" "$dry_cpu"
printf '%-44s %10s %8s %8s %10s\n' "air run -f <reference> --dry-run -o json" "$json_med" "$json_min" "$json_max" "$json_cpu"
printf '\ndry-run above the floor: %s ms wall, %s ms cpu (target <= 5 ms); dry-run median %s ms (target <= 15 ms)\n' \
  "$over" "$over_cpu" "$dry_med"
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
