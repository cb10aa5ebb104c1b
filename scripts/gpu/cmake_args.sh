#!/usr/bin/env bash
# ON THE GPU MACHINE: prints the CMake -D arguments with which the carried tree (.devcarry, after
# scripts/gpu/bundle.sh) builds hub/ and trainer/data/ there: the carried headers, and each library from the
# machine (ldconfig) or, where the machine lacks it, from the carried air.tar.xz (snappy, which the image
# lacks, from a folder of its own, so that air-train's RUNPATH holds nothing else).
# Usage: cmake -S .devcarry -B BUILD ... $(bash scripts/gpu/cmake_args.sh [CARRY] [DEPS_DIR])
set -euo pipefail
carry=$(cd "${1:-.devcarry}" && pwd)
deps=${2:-/tmp/air-gpu-deps}
ldc=$(command -v ldconfig || echo /sbin/ldconfig)
lib() {
  local p
  p=$("$ldc" -p 2>/dev/null | awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}') || p=""
  if [ -z "$p" ]; then  # snappy has no dependencies of its own: alone in a folder; others with the bundle's
    mkdir -p "$deps"
    [ -d "$deps/air/lib" ] || tar -C "$deps" -xJf "$carry/air.tar.xz" air/lib
    [ -f "$deps/air/lib/$1" ] || { echo "cmake_args.sh: no $1 on this machine nor in air.tar.xz" >&2; exit 1; }
    p=$deps/air/lib/$1
    if [ "$1" = libsnappy.so.1 ]; then
      mkdir -p "$deps/snappy" && cp "$p" "$deps/snappy/" && p=$deps/snappy/$1
    fi
  fi
  echo "$p"
}
inc=$carry/include
echo "-DCURL_NO_CURL_CMAKE=ON -DCURL_INCLUDE_DIR=$inc -DCURL_LIBRARY=$(lib libcurl.so.4)" \
  "-DOPENSSL_INCLUDE_DIR=$inc -DOPENSSL_CRYPTO_LIBRARY=$(lib libcrypto.so.3) -DOPENSSL_SSL_LIBRARY=$(lib libssl.so.3)" \
  "-DZLIB_INCLUDE_DIR=$inc -DZLIB_LIBRARY=$(lib libz.so.1) -DAIR_ZSTD_LIB=$(lib libzstd.so.1)" \
  "-DAIR_SNAPPY_LIB=$(lib libsnappy.so.1)"
