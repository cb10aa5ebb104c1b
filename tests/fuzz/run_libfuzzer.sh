#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time: run_libfuzzer.sh BINARY SECONDS SEED_DIR WORK_DIR.
# New inputs go to WORK_DIR/corpus (the committed seeds stay untouched), a crash to WORK_DIR/crash-*;
# the last lines of libFuzzer's report are the figure (runs, coverage); exit status non-zero on any
# crash, leak, timeout or sanitizer report.
set -euo pipefail
bin=$1 seconds=$2 seeds=$3 work=$4
mkdir -p "$work/corpus"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
log="$work/last.log"
set +e
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" > "$log" 2>&1
rc=$?
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
if [ $rc -ne 0 ]; then
  tail -n 60 "$log"
  echo "$(basename "$bin"): FAILED (exit $rc) after ${runs:-?} inputs; the input is in $work/crash-* (or leak-/timeout-)"
  exit 1
fi
echo "$(basename "$bin"): ${runs:-?} inputs in ${seconds} s, 0 crashes, 0 sanitizer reports"
