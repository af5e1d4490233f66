#!/usr/bin/env bash
# Builds qual for the GPU machine (jansson and libcrypto linked statically,
# since that machine has no Debian packages) and gathers what the GPU suite
# and the benchmark need into .carry/ (ignored by git), laid out like a build
# folder: .carry/bin/{qual-run,qual-compile,qual-view,quald,qualctl,qual-judge,qual-calibrate},
# .carry/tests/{gpu_smoke,fixture-source},
# .carry/shims/*.so. Carry .carry with the device tool and run
# `bash tests/gpu/run.sh $OUT .carry` there (and tests/gpu/faults.sh, which
# needs qual-run, qual-compile and the shims oob and spin).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-carry -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUAL_STATIC_DEPS=ON >/dev/null
cmake --build build-carry -j"$(nproc)" --target qual-run qual-compile qual-judge qual-view qual-calibrate quald qualctl open_cost gpu_smoke fixture-source qual_shims
rm -rf .carry
mkdir -p .carry/bin .carry/tests .carry/shims
cp build-carry/bin/qual-run build-carry/bin/qual-compile build-carry/bin/qual-judge build-carry/bin/qual-view \
   build-carry/bin/qual-calibrate build-carry/bin/open_cost \
   build-carry/bin/qualctl build-carry/bin/quald .carry/bin/
cp build-carry/tests/gpu_smoke build-carry/tests/fixture-source .carry/tests/
cp build-carry/shims/*.so .carry/shims/
for s in slow miscompile oob spin delay; do
  [ -f ".carry/shims/libshim_$s.so" ] || { echo "libshim_$s.so missing from .carry/shims" >&2; exit 1; }
done
for b in .carry/bin/qual-run .carry/bin/quald .carry/bin/qualctl .carry/bin/qual-calibrate; do
  ! ldd "$b" | grep -E 'jansson|crypto|libuv' || { echo "$b: not static" >&2; exit 1; }
done
du -sh .carry
