#!/usr/bin/env bash
# Builds qual for the GPU machine (jansson and libcrypto linked statically,
# since that machine has no Debian packages) and gathers what the GPU suite
# and the benchmark need into .carry/ (ignored by git), laid out like a build
# folder: .carry/bin/{qual-run,qual-compile,qual-view,quald,qualctl,qual-judge,qual-calibrate,
# qual-slurm,qual-bisect},
# .carry/tests/{gpu_smoke,fixture-source},
# .carry/shims/*.so, and .carry/lib/ with quald's shared libraries (libh2o
# and what it needs). Carry .carry with the device tool and run
# `bash tests/gpu/run.sh $OUT .carry` there (and tests/gpu/faults.sh, which
# needs qual-run, qual-compile and the shims oob and spin).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-carry -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQUAL_STATIC_DEPS=ON >/dev/null
cmake --build build-carry -j"$(nproc)" --target qual-run qual-compile qual-judge qual-view qual-calibrate qual-slurm qual-bisect quald qualctl open_cost gpu_smoke fixture-source qual_shims
rm -rf .carry
mkdir -p .carry/bin .carry/tests .carry/shims
cp build-carry/bin/qual-run build-carry/bin/qual-compile build-carry/bin/qual-judge build-carry/bin/qual-view \
   build-carry/bin/qual-calibrate build-carry/bin/qual-slurm build-carry/bin/qual-bisect build-carry/bin/open_cost \
   build-carry/bin/qualctl build-carry/bin/quald .carry/bin/
cp build-carry/tests/gpu_smoke build-carry/tests/fixture-source .carry/tests/
cp build-carry/shims/*.so .carry/shims/
for s in slow miscompile oob spin delay; do
  [ -f ".carry/shims/libshim_$s.so" ] || { echo "libshim_$s.so missing from .carry/shims" >&2; exit 1; }
done
for b in .carry/bin/qual-run .carry/bin/qualctl .carry/bin/qual-calibrate .carry/bin/qual-slurm; do
  ! ldd "$b" | grep -E 'jansson|crypto|libuv' || { echo "$b: not static" >&2; exit 1; }
done
# quald's HTTP endpoint: Debian ships libh2o as a shared library only. It and
# the libraries it needs go to .carry/lib, where quald's RPATH looks
# ($ORIGIN/../lib; daemon/CMakeLists.txt); the GPU machine's own glibc serves.
mkdir -p .carry/lib
for l in libh2o.so.0.13 libuv.so.1 libwslay.so.1 libssl.so.3 libcrypto.so.3 libz.so.1; do
  cp -L "/usr/lib/x86_64-linux-gnu/$l" .carry/lib/ 2>/dev/null ||
    cp -L "/lib/x86_64-linux-gnu/$l" .carry/lib/
done
! ldd .carry/bin/quald | grep -E 'jansson' || { echo "quald: jansson not static" >&2; exit 1; }
# ldd's output is read whole first: `ldd | grep -q` under pipefail fails
# whenever grep stops reading before ldd has written everything (SIGPIPE).
quald_libs=$(ldd .carry/bin/quald)
for l in libh2o.so.0.13 libuv.so.1 libwslay.so.1; do
  grep -qF "=> $PWD/.carry/bin/../lib/$l" <<<"$quald_libs" ||
    { echo "quald does not find $l in .carry/lib" >&2; echo "$quald_libs" >&2; exit 1; }
done
# The disassembler of the code lines (docs/explain.md): the GPU machine has no
# CUDA toolkit binaries; scripts/fetch-cuda-tools.sh put nvdisasm in
# /opt/qual-cuda-tools/bin, and the GPU scripts name the copy in
# .carry/tools/bin with QUAL_NVDISASM.
if [ -x /opt/qual-cuda-tools/bin/nvdisasm ]; then
  mkdir -p .carry/tools/bin
  cp /opt/qual-cuda-tools/bin/nvdisasm .carry/tools/bin/
fi
du -sh .carry
