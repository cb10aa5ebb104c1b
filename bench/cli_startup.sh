#!/usr/bin/env bash
# Start-up cost of the `air` binary (issue 28, item 7): `air --version`, `air __complete` and a dry-run of the
# reference workload against `git --version` and `/bin/true`, hyperfine-style (warm-up, then N timed runs,
# median and min); then what the dynamic loader does for `air --version` (libraries mapped, LD_DEBUG=statistics).
# Usage: bench/cli_startup.sh [N] [path/to/air]. Needs an idle machine for its figures (`uptime` < 0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
air=${2:-build/bin/air}
[ -x "$air" ] || { echo "cli_startup.sh: $air not found; build first (scripts/build)" >&2; exit 1; }
workload=examples/multinode_llm_sft/train.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export AIR_HOME="$tmp/home" AIR_CONFIG_FILE="$tmp/none" DATABRICKS_CONFIG_FILE="$tmp/none"
unset AIR_HOST AIR_TOKEN DATABRICKS_HOST DATABRICKS_TOKEN DATABRICKS_CONFIG_PROFILE

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores (figures need < 0.5)"
python3 - "$runs" "$air" "$workload" <<'PY'
import statistics, subprocess, sys, time
runs, air, workload = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmds = [("/bin/true", ["/bin/true"]),
        ("git --version", ["git", "--version"]),
        ("air --version", [air, "--version"]),
        ("air __complete run -", [air, "__complete", "run", "-"]),
        ("air run -f <reference> --dry-run", [air, "run", "-f", workload, "--dry-run"])]
res = {}
for name, cmd in cmds:
    for _ in range(5):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t = []
    for _ in range(runs):
        s = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t.append((time.perf_counter() - s) * 1000)
    res[name] = (statistics.median(t), min(t))
git = res["git --version"][0]
print(f"{'command (' + str(runs) + ' runs each)':<36} {'median ms':>10} {'min ms':>8} {'/ git --version':>16}")
for name, (med, mn) in res.items():
    print(f"{name:<36} {med:>10.2f} {mn:>8.2f} {med / git:>15.2f}x")
PY
echo
echo "dynamic libraries mapped by air --version: $(ldd "$air" | wc -l) (git: $(ldd "$(command -v git)" | wc -l))"
LD_DEBUG=statistics "$air" --version 2>&1 >/dev/null | grep -E "total startup time|time needed for relocation|number of relocations:|final number of relocations" | sed 's/^ *[0-9]*: */  /' || true
# Figures that a busy machine does not move: instructions executed in user space (valgrind, when installed)
# and page faults (perf, when installed), for the same commands.
if command -v valgrind >/dev/null; then
  echo
  printf '%-36s %14s %16s\n' "command" "instructions" "/ git --version"
  ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | sed -n 's/.*Collected : //p'; }
  git_ir=$(ir git --version)
  for c in "git --version" "$air --version" "$air __complete run -" "$air run -f $workload --dry-run"; do
    # shellcheck disable=SC2086
    n=$(ir $c)
    printf '%-36s %14s %15.2fx\n' "${c/#$air/air}" "$n" "$(python3 -c "print($n / $git_ir)")"
  done
fi
if command -v perf >/dev/null && perf stat -e page-faults true >/dev/null 2>&1; then
  echo
  for c in "git --version" "$air --version" "$air run -f $workload --dry-run"; do
    # shellcheck disable=SC2086
    pf=$(perf stat -x, -e page-faults -r 10 $c 2>&1 >/dev/null | cut -d, -f1 | tail -1)
    printf '%-36s %8s page faults\n' "${c/#$air/air}" "$pf"
  done
fi
