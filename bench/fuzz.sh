#!/usr/bin/env bash
# Runs every libFuzzer target under ASan + UBSan for longer than CI does (default 120 s each) from its
# committed seed corpus, and prints one table: target, inputs run, seconds, crashes/sanitizer reports.
# Builds build-asan/ first (clang, AIR_SANITIZE=ON, no trainer), as scripts/test-asan does.
# Usage: bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
seconds=${1:-120}
shift || true
cd "$root"
export CCACHE_BASEDIR="$PWD"
CXX=clang++ cmake -S . -B build-asan -G Ninja -DAIR_SANITIZE=ON -DAIR_BUILD_TRAINER=OFF \
  -DCMAKE_BUILD_TYPE=Asan -DCMAKE_CXX_FLAGS_ASAN="-O1 -gline-tables-only" >/dev/null
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(workload unpack api_json log_framing redact tokenizer safetensors)
cmake --build build-asan -j "${AIR_BUILD_JOBS:-$(nproc)}" --target $(printf '%s_libfuzzer ' "${targets[@]}") >/dev/null
echo "load before: $(uptime)"
printf '%-12s %12s %8s %s\n' target inputs seconds result
failed=0
for t in "${targets[@]}"; do
  work="build-asan/fuzz-bench/$t"
  if out=$(bash tests/fuzz/run_libfuzzer.sh "build-asan/bin/${t}_libfuzzer" "$seconds" "tests/fuzz/corpus/$t" "$work" 2>&1); then
    result="0 crashes, 0 sanitizer reports"
  else
    result="FAILED: see $work (crash-*, last.log)"
    failed=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/last.log")
  printf '%-12s %12s %8s %s\n' "$t" "${runs:-?}" "$seconds" "$result"
done
echo "load after: $(uptime)"
exit $failed
