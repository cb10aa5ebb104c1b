#!/usr/bin/env bash
# Run HERE, after scripts/gpu/prepare.sh: adds to the carried folder (default /work/main/.devcarry) what
# scripts/gpu/e2e.sh needs on the GPU machine, whose image has no apt and lacks these headers:
#   air.tar.xz   the `air` binary built here (stripped) + every shared library ldd lists except glibc's,
#                libstdc++ and libgcc_s (the GPU image has newer ones); RUNPATH $ORIGIN (patchelf), so it
#                runs with no LD_LIBRARY_PATH and leaks none into the commands it starts
#   include/     curl, openssl, snappy-c, zlib, zstd headers for the GPU build of hub/ and trainer/data/
#   hub/         the hub client's sources (the root CMakeLists adds it)
#   trainer/CMakeLists.txt patched (a copy): zstd found through AIR_ZSTD_LIB instead of pkg-config
# Usage: bash scripts/gpu/bundle.sh [DEST]   (AIR_BIN=path/to/air to carry an air built elsewhere)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-/work/main/.devcarry}
[ -f "$dest/CMakeLists.txt" ] || { echo "bundle.sh: run scripts/gpu/prepare.sh $dest first" >&2; exit 1; }
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf is missing (bash scripts/setup)" >&2; exit 1; }

air=${AIR_BIN:-}
if [ -z "$air" ]; then  # the normal build; the CLI only
  [ -f "$src/build/CMakeCache.txt" ] || cmake -S "$src" -B "$src/build" -G Ninja >/dev/null
  cmake --build "$src/build" --target air -j "${AIR_BUILD_JOBS:-$(nproc)}" >/dev/null
  air=$src/build/bin/air
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/air/bin" "$stage/air/lib"
cp "$air" "$stage/air/bin/air"
strip "$stage/air/bin/air"
# Every library the loader resolves, except the C runtime the GPU image has (a newer one); libcurl is
# loaded on air's first request (dlopen, core/client/curl_api.cc), so it and its own libraries are added.
curl_lib=$(ldconfig -p | awk '/libcurl.so.4 .*x86-64/ && !f {print $NF; f = 1}')
[ -n "$curl_lib" ] || { echo "bundle.sh: libcurl.so.4 is missing (bash scripts/setup)" >&2; exit 1; }
{ ldd "$air"; echo "libcurl.so.4 => $curl_lib (0)"; ldd "$curl_lib"; } | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|librt.so.*|libpthread.so.*|libresolv.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
    *) cp -L "$lib" "$stage/air/lib/" ;;
  esac
done
# bubblewrap, which every run's command runs in (docs/security.md) and the GPU image lacks: air/bin/bwrap with its
# libraries beside air's (e2e.sh puts air/bin first on PATH where the machine has no bwrap of its own).
command -v bwrap >/dev/null || { echo "bundle.sh: bwrap is missing (bash scripts/setup)" >&2; exit 1; }
cp -L "$(command -v bwrap)" "$stage/air/bin/bwrap"
ldd "$(command -v bwrap)" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
  case "$(basename "$lib")" in libc.so.*|ld-linux*) ;; *) cp -L "$lib" "$stage/air/lib/" ;; esac
done
# The trainer's Parquet reader needs snappy, which the GPU image lacks (e2e.sh links it from here).
cp -L "$(ldconfig -p | awk '/libsnappy.so.1 .*x86-64/ && !f {print $NF; f = 1}')" "$stage/air/lib/"
patchelf --set-rpath '$ORIGIN/../lib' "$stage/air/bin/air"
patchelf --set-rpath '$ORIGIN/../lib' "$stage/air/bin/bwrap"
for f in "$stage"/air/lib/*.so*; do
  chmod u+w "$f"
  strip --strip-unneeded "$f" 2>/dev/null || true
  patchelf --set-rpath '$ORIGIN' "$f"
done
# The check the GPU machine makes: runs with an empty environment, libraries only from the bundle.
env -i "$stage/air/bin/air" --version >/dev/null
if env -i LD_DEBUG=libs "$stage/air/bin/air" --version 2>&1 | grep "calling init:" |
    grep -v -E "$stage/air/|/libc\.so|/libm\.so|/libstdc\+\+|/libgcc_s|/libresolv|ld-linux" | grep . >/dev/null; then
  echo "bundle.sh: air loads a library from outside the bundle:" >&2
  env -i LD_DEBUG=libs "$stage/air/bin/air" --version 2>&1 | grep "calling init:" >&2
  exit 1
fi
tar -C "$stage" -cJf "$dest/air.tar.xz" air

# Headers for the GPU build (hub/: curl, openssl; trainer/data/: snappy, zlib, zstd).
inc=$dest/include
mkdir -p "$inc/curl" "$inc/openssl"
cp /usr/include/x86_64-linux-gnu/curl/*.h "$inc/curl/" 2>/dev/null || cp /usr/include/curl/*.h "$inc/curl/"
cp /usr/include/openssl/*.h "$inc/openssl/"
cp /usr/include/x86_64-linux-gnu/openssl/*.h "$inc/openssl/" 2>/dev/null || true
cp /usr/include/snappy-c.h /usr/include/zlib.h /usr/include/zstd.h /usr/include/zstd_errors.h "$inc/"
cp /usr/include/x86_64-linux-gnu/zconf.h "$inc/" 2>/dev/null || cp /usr/include/zconf.h "$inc/"
# The Llama 3 tokenizer and Alpaca records the fixture uses (prepare.sh makes them where it has bench_data.sh).
if [ ! -f "$dest/bench-data/llama3/tokenizer.json" ] || [ ! -f "$dest/bench-data/alpaca-brown.json" ]; then
  [ -f "$src/scripts/gpu/bench_data.sh" ] || { echo "bundle.sh: no bench-data in $dest and no bench_data.sh" >&2; exit 1; }
  bash "$src/scripts/gpu/bench_data.sh" "$dest/bench-data" >/dev/null
fi
rm -rf "$dest/hub"
cp -r "$src/hub" "$dest/hub"

python3 - "$dest/trainer/CMakeLists.txt" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = "pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)"
if "add_library(PkgConfig::ZSTD INTERFACE IMPORTED)" in s:
    sys.exit(0)  # patched by an earlier run: bundle.sh runs again after code changes
if old not in s:
    sys.exit("bundle.sh: trainer/CMakeLists.txt no longer finds zstd the way this script patches")
s = s.replace(old, "add_library(PkgConfig::ZSTD INTERFACE IMPORTED)\n"
              "target_include_directories(PkgConfig::ZSTD INTERFACE ${PROJECT_SOURCE_DIR}/include)\n"
              "target_link_libraries(PkgConfig::ZSTD INTERFACE ${AIR_ZSTD_LIB})")
open(p, "w").write(s)
PY
echo "bundle: air.tar.xz $(du -h "$dest/air.tar.xz" | cut -f1) (unpacked $(du -sh "$stage/air" | cut -f1)," \
  "$(ls "$stage/air/lib" | wc -l) libraries); include $(du -sh "$inc" | cut -f1); $dest in all $(du -sh "$dest" | cut -f1)"
