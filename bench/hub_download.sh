#!/usr/bin/env bash
# The hub client's download speed on loopback: one large file (default 1024 MB of random bytes) served by
# tests/hub/hub_fixture.py, fetched by air_hub (hub_bench: HEAD, redirect to the blob URL, write to
# blobs/<etag>.incomplete with SHA-256 verification, rename, snapshot link) and by `curl -o` of the same
# blob URL (no verification). Best of 3 each; prints a table with the ratio.
# usage: bench/hub_download.sh [BUILD_DIR] [SIZE_MB]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
mb=${2:-1024}
[ -x "$build/bin/hub_bench" ] || { echo "build hub_bench first (cmake --build build --target hub_bench)"; exit 1; }
work=$(mktemp -d /tmp/air-hub-bench-XXXXXX)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/repos/models/bench/big"
# Random 64 MB repeated: incompressible for the transfer, quick to make.
python3 - "$work/repos/models/bench/big/model.safetensors" "$mb" <<'PY'
import os, sys
block = os.urandom(64 << 20)
with open(sys.argv[1], "wb") as f:
    left = int(sys.argv[2]) << 20
    while left > 0:
        f.write(block[:min(left, len(block))]); left -= len(block)
PY
python3 "$root/tests/hub/hub_fixture.py" --root "$work/repos" --port-file "$work/port" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")"
# The fixture hashes the file on the first HEAD; its Location header is the blob URL both clients fetch.
blob=$(curl -sI "$url/bench/big/resolve/main/model.safetensors" | tr -d '\r' | sed -n 's/^Location: //p')
best() { sort -n | head -1; }
ours=$(for i in 1 2 3; do rm -rf "$work/cache"; "$build/bin/hub_bench" "$url" "$work/cache" bench/big model.safetensors | cut -d' ' -f1; done | best)
theirs=$(for i in 1 2 3; do rm -f "$work/curl.out"; curl -s -o "$work/curl.out" -w '%{time_total}\n' "$blob"; done | best)
size=$(stat -c %s "$work/repos/models/bench/big/model.safetensors")
echo "hub download on loopback, ${mb} MB, best of 3 ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-34s %10s %10s\n' client seconds MB/s
printf '%-34s %10.2f %10.0f\n' "air_hub (verifies SHA-256)" "$ours" "$(awk -v s="$size" -v t="$ours" 'BEGIN { print s / t / 1e6 }')"
printf '%-34s %10.2f %10.0f\n' "curl -o (no verification)" "$theirs" "$(awk -v s="$size" -v t="$theirs" 'BEGIN { print s / t / 1e6 }')"
printf '%-34s %10.2f\n' "ratio (air_hub MB/s / curl MB/s)" "$(awk -v a="$theirs" -v b="$ours" 'BEGIN { print a / b }')"
