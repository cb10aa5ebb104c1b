#!/usr/bin/env bash
# Snapshot benchmark: air's snapshot (scan + deterministic tar + zstd + SHA-256) against `tar czf` (what
# Databricks' air runs) on one generated tree, in one run, plus an unchanged re-snapshot (cache hit).
# Tree: AIR_BENCH_SNAPSHOT_MB (default 850) MB in AIR_BENCH_SNAPSHOT_FILES (default 20000) files, three
# quarters compressible text and one quarter random bytes, under /tmp (removed at the end).
# Wall seconds depend on what else runs; CPU seconds (user + system, all threads) much less so.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${AIR_BIN_DIR:-$here/../build/bin}
mb=${AIR_BENCH_SNAPSHOT_MB:-850}
files=${AIR_BENCH_SNAPSHOT_FILES:-20000}
bench="$bin/snapshot_bench"
if [ ! -x "$bench" ]; then
  echo "snapshot.sh: $bench is missing; build first (scripts/build)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/air-bench-snapshot.XXXXXX)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
# Runs a shell command; sets wall and cpu (user + system of it and its children).
timed() {
  local t0 t1 c0 c1
  c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  t0=$(now); bash -c "$1"; t1=$(now)
  c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
  wall=$(calc "$t1 - $t0")
  cpu=$(calc "($c1 - $c0) / $(getconf CLK_TCK)")
}

echo "generating $files files, $mb MB under $work ..." >&2
"$bench" generate "$work/project" "$mb" "$files" 1
# The cache does not remember files modified in the last 2 s (they could change again unseen).
sleep 2.5
# Every timed command starts with nothing left to write back: the generator's 850 MB (and each run's
# archive) are flushed by kernel threads that take CPU from whatever runs next; without the sync the
# cold runs paid for the generator (2026-12-06, 2 cores: 3.48 CPU s without, 2.67 with).
sync
read -r gen_files gen_bytes < <(find "$work/project" -type f -printf '%s\n' | awk '{n++; s+=$1} END {print n, s}')

echo "air snapshot, 3 cold runs (empty cache each time) ..." >&2
cold_walls=() cold_cpus=() digests=()
for i in 1 2 3; do
  sync
  read -r total scan nfiles nbytes abytes reused sha cpu < <("$bench" snapshot "$work/project" "$work/cache$i")
  [ "$reused" = 0 ] || { echo "snapshot.sh: a cold run reused the cache" >&2; exit 1; }
  cold_walls+=("$total") cold_cpus+=("$cpu") digests+=("$sha")
  air_bytes=$abytes
done
deterministic=yes
for d in "${digests[@]}"; do [ "$d" = "${digests[0]}" ] || deterministic=NO; done
rm -rf "$work/cache2" "$work/cache3"

echo "air snapshot, 7 unchanged re-snapshots (cache hit) ..." >&2
hit_walls=() hit_cpus=() proc_walls=() scans=()
for i in 1 2 3 4 5 6 7; do
  t0=$(now)
  read -r total scan nfiles nbytes abytes reused sha cpu < <("$bench" snapshot "$work/project" "$work/cache1")
  t1=$(now)
  [ "$reused" = 1 ] || { echo "snapshot.sh: an unchanged re-snapshot missed the cache" >&2; exit 1; }
  [ "$sha" = "${digests[0]}" ] || { echo "snapshot.sh: the cached digest differs" >&2; exit 1; }
  hit_walls+=("$total") hit_cpus+=("$cpu") scans+=("$scan") proc_walls+=("$(calc "$t1 - $t0")")
done

tar_zstd_wall=""
if command -v zstd >/dev/null; then
  echo "tar | zstd -T2 ..." >&2
  sync
  timed "tar cf - -C '$work' project | zstd -q -T2 > '$work/project.tar.zst'"
  tar_zstd_wall=$wall tar_zstd_cpu=$cpu
  tar_zstd_bytes=$(stat -c %s "$work/project.tar.zst"); rm -f "$work/project.tar.zst"
fi

echo "tar czf (takes a while) ..." >&2
sync
timed "tar czf '$work/project.tar.gz' -C '$work' project"
tar_gz_wall=$wall tar_gz_cpu=$cpu
tar_gz_bytes=$(stat -c %s "$work/project.tar.gz"); rm -f "$work/project.tar.gz"

mbytes() { printf %.1f "$(calc "$1 / 1000000")"; }
m() { printf '%s\n' "$@" | median; }
echo
printf 'snapshot of a generated tree: %d files, %s MB (3/4 text, 1/4 random bytes); %s cores; load %s\n' \
  "$gen_files" "$(mbytes "$gen_bytes")" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %9s %9s %10s %12s %12s\n' "" "wall s" "cpu s" "output MB" "wall vs tgz" "cpu vs tgz"
row() {
  printf '%-44s %9.3f %9.3f %10s %11.1fx %11.1fx\n' "$1" "$2" "$3" "$4" \
    "$(calc "$tar_gz_wall / $2")" "$(calc "$tar_gz_cpu / ($3 > 0 ? $3 : 0.001)")"
}
row "tar czf (what Databricks' air runs)" "$tar_gz_wall" "$tar_gz_cpu" "$(mbytes "$tar_gz_bytes")"
[ -z "$tar_zstd_wall" ] || row "tar | zstd -T2" "$tar_zstd_wall" "$tar_zstd_cpu" "$(mbytes "$tar_zstd_bytes")"
row "air snapshot, cold (median of 3)" "$(m "${cold_walls[@]}")" "$(m "${cold_cpus[@]}")" "$(mbytes "$air_bytes")"
row "air snapshot, unchanged tree (median of 7)" "$(m "${hit_walls[@]}")" "$(m "${hit_cpus[@]}")" "-"
printf 'unchanged tree, whole process incl. start: %.3f s wall; scan alone %.3f s (medians of 7)\n' \
  "$(m "${proc_walls[@]}")" "$(m "${scans[@]}")"
printf 'same digest on every run: %s\n' "$deterministic"
