#!/usr/bin/env bash
# Volumes benchmark: one file (AIR_BENCH_VOLUMES_MB, default 1024 MB of random bytes) up to and down from a
# workspace's Files API on loopback, with `air fs cp` and with `curl` against the same routes, in one run.
# Prints MB/s (1 MB = 1e6 bytes) and the ratio air / curl; each figure is the median of 3 runs. The server
# writes uploads to a temporary file, fsyncs it and renames it, so uploads include one fsync.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${AIR_BIN_DIR:-$here/../build/bin}
mb=${AIR_BENCH_VOLUMES_MB:-1024}
[ -x "$bin/air" ] || { echo "volumes.sh: $bin/air is missing; build first (scripts/build)" >&2; exit 1; }
command -v curl >/dev/null || { echo "volumes.sh: curl is missing (scripts/setup)" >&2; exit 1; }

work=$(mktemp -d /tmp/air-bench-volumes.XXXXXX)
export AIR_HOME="$work/home" AIR_CONFIG_FILE="$work/no-config"
unset AIR_HOST AIR_TOKEN
cleanup() { "$bin/air" server stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
mbps() { awk -v b="$1" -v t="$2" 'BEGIN { printf "%.0f", b / 1e6 / t }'; }

echo "generating $mb MB under $work ..." >&2
head -c "$((mb * 1024 * 1024))" /dev/urandom > "$work/big.bin"
bytes=$(stat -c %s "$work/big.bin")
"$bin/air" server status >/dev/null 2>&1 || "$bin/air" list >/dev/null  # starts the local workspace
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["url"])' "$AIR_HOME/server.json")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$AIR_HOME/server.json")
api="$url/api/2.0/fs/files/Volumes/bench/default/v"

timed() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'; }
declare -A res
for i in 1 2 3; do
  res[air_up]+="$(timed "$bin/air" fs cp --overwrite "$work/big.bin" dbfs:/Volumes/bench/default/v/air.bin) "
  res[curl_up]+="$(timed curl -sf -X PUT -H "Authorization: Bearer $token" -H 'Content-Type: application/octet-stream' \
    -H 'Expect:' -T "$work/big.bin" "$api/curl.bin?overwrite=true") "
  rm -f "$work/air-down.bin" "$work/curl-down.bin"
  res[air_down]+="$(timed "$bin/air" fs cp dbfs:/Volumes/bench/default/v/air.bin "$work/air-down.bin") "
  res[curl_down]+="$(timed curl -sf -H "Authorization: Bearer $token" -o "$work/curl-down.bin" "$api/curl.bin") "
done
cmp -s "$work/big.bin" "$work/air-down.bin" && cmp -s "$work/big.bin" "$work/curl-down.bin" ||
  { echo "volumes.sh: a downloaded copy differs from the original" >&2; exit 1; }

med() { tr ' ' '\n' <<<"${res[$1]}" | grep . | median; }
printf '\nFiles API on loopback, one %s MB file, median of 3 (load: %s)\n' "$((bytes / 1000000))" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %14s %14s %10s\n' "direction" "air fs cp MB/s" "curl MB/s" "air/curl"
for d in up down; do
  a=$(mbps "$bytes" "$(med air_$d)") c=$(mbps "$bytes" "$(med curl_$d)")
  printf '%-10s %14s %14s %10s\n' "$([ $d = up ] && echo upload || echo download)" "$a" "$c" \
    "$(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.2f", a / c }')"
done
