#!/usr/bin/env bash
# Memory per rank while training from a large tokenized-data cache: RANKS processes map one synthetic entry
# of EXAMPLES examples (about MEAN tokens each, masks included), lay out an epoch's rows as the trainer's
# DataLoader does and read every token of their own rows once (bench/chat_data_memory.cc). The model is not
# loaded: every figure is the data's cost, to compare with the issue's budget of 1 GiB above the model's own.
# usage: bench/chat_data_memory.sh [EXAMPLES (10000000)] [MEAN (64)] [RANKS (2)] [BUILD_DIR] [WORK_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10000000}
mean=${2:-64}
ranks=${3:-2}
build=$(cd "${4:-$root/build}" && pwd)
work=${5:-$build/chat-memory}
mkdir -p "$work"
echo "load $(uptime | sed 's/.*average: //'); $(nproc) cores"
mode=${AIR_BENCH_MODE:-mapped}  # owned: each rank copies the entry into its memory (the cache before it was mapped)
out=$("$build/bin/chat_data_memory_bench" "$work" "$n" "$mean" "$ranks" 2048 packed "$mode")
echo "$out" | grep -v '^rank'
field() { echo " $1" | sed -E "s/.* $2 ([0-9.]+).*/\1/"; }
printf '| %-4s | %10s | %13s | %14s | %16s | %8s |\n' rank rows "peak RSS MiB" "private MiB" "mapped (shared) MiB" "PSS MiB"
printf '| %-4s | %10s | %13s | %14s | %16s | %8s |\n' --- --- --- --- --- ---
echo "$out" | grep '^rank' | while read -r line; do
  printf '| %-4s | %10s | %13s | %14s | %16s | %8s |\n' "$(field "$line" rank)" "$(field "$line" rows)" \
    "$(field "$line" peak_rss_mib)" "$(field "$line" rss_anon_mib)" "$(field "$line" rss_file_mib)" "$(field "$line" pss_mib)"
done
