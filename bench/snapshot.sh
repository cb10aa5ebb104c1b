#!/usr/bin/env bash
# Snapshot benchmark: air's snapshot (scan + deterministic tar + zstd + SHA-256) against `tar czf` (what
# Databricks' air runs) on one generated tree, in one run, plus an unchanged re-snapshot (cache hit).
# Tree: AIR_BENCH_SNAPSHOT_MB (default 850) MB in AIR_BENCH_SNAPSHOT_FILES (default 20000) files, three
# quarters compressible text and one quarter random bytes, under /tmp (removed at the end).
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

echo "generating $files files, $mb MB under $work ..." >&2
"$bench" generate "$work/project" "$mb" "$files" 1
# The cache does not remember files modified in the last 2 s (they could change again unseen).
sleep 2.5
read -r gen_files gen_bytes < <(find "$work/project" -type f -printf '%s\n' | awk '{n++; s+=$1} END {print n, s}')

echo "air snapshot, 3 cold runs (empty cache each time) ..." >&2
cold_times=() digests=()
for i in 1 2 3; do
  read -r total scan nfiles nbytes abytes reused sha < <("$bench" snapshot "$work/project" "$work/cache$i")
  [ "$reused" = 0 ] || { echo "snapshot.sh: a cold run reused the cache" >&2; exit 1; }
  cold_times+=("$total") digests+=("$sha")
  air_bytes=$abytes
done
cold=$(printf '%s\n' "${cold_times[@]}" | median)
deterministic=yes
for d in "${digests[@]}"; do [ "$d" = "${digests[0]}" ] || deterministic=NO; done
rm -rf "$work/cache2" "$work/cache3"

echo "air snapshot, 7 unchanged re-snapshots (cache hit) ..." >&2
hit_times=() hit_walls=() scan_times=()
for i in 1 2 3 4 5 6 7; do
  t0=$(now)
  read -r total scan nfiles nbytes abytes reused sha < <("$bench" snapshot "$work/project" "$work/cache1")
  t1=$(now)
  [ "$reused" = 1 ] || { echo "snapshot.sh: an unchanged re-snapshot missed the cache" >&2; exit 1; }
  [ "$sha" = "${digests[0]}" ] || { echo "snapshot.sh: the cached digest differs" >&2; exit 1; }
  hit_times+=("$total") scan_times+=("$scan") hit_walls+=("$(calc "$t1 - $t0")")
done
hit=$(printf '%s\n' "${hit_times[@]}" | median)
hit_wall=$(printf '%s\n' "${hit_walls[@]}" | median)

tar_zstd=""
if command -v zstd >/dev/null; then
  echo "tar | zstd -T2 ..." >&2
  t0=$(now); tar cf - -C "$work" project | zstd -q -T2 > "$work/project.tar.zst"; t1=$(now)
  tar_zstd=$(calc "$t1 - $t0")
  tar_zstd_bytes=$(stat -c %s "$work/project.tar.zst"); rm -f "$work/project.tar.zst"
fi

echo "tar czf (takes a while) ..." >&2
t0=$(now); tar czf "$work/project.tar.gz" -C "$work" project; t1=$(now)
tar_gz=$(calc "$t1 - $t0")
tar_gz_bytes=$(stat -c %s "$work/project.tar.gz"); rm -f "$work/project.tar.gz"

mbytes() { calc "$1 / 1000000"; }
echo
printf 'snapshot of a generated tree: %d files, %.1f MB (3/4 text, 1/4 random bytes); %s cores; load %s\n' \
  "$gen_files" "$(mbytes "$gen_bytes")" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-48s %10s %11s %12s\n' "" "seconds" "output MB" "vs tar czf"
row() { printf '%-48s %10.3f %11s %11.1fx\n' "$1" "$2" "$3" "$(calc "$tar_gz / $2")"; }
row "tar czf (what Databricks' air runs)" "$tar_gz" "$(printf %.1f "$(mbytes "$tar_gz_bytes")")"
[ -z "$tar_zstd" ] || row "tar | zstd -T2" "$tar_zstd" "$(printf %.1f "$(mbytes "$tar_zstd_bytes")")"
row "air snapshot, cold (median of 3)" "$cold" "$(printf %.1f "$(mbytes "$air_bytes")")"
row "air snapshot, unchanged tree (median of 7)" "$hit" "-"
row "  same, whole process (median of 7)" "$hit_wall" "-"
printf 'scan alone (median of 7): %.3f s; same digest on every run: %s\n' \
  "$(printf '%s\n' "${scan_times[@]}" | median)" "$deterministic"
