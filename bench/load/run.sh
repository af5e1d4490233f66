#!/usr/bin/env bash
# The load benchmark of quald (bench/load/README.md), from the root of the
# source tree to measure: builds that tree's quald and qual-compile in BUILD
# (default build), the fake worker and qual-load (bench/load/*.c and the
# common/ modules they use) beside them, and runs qual-load with the
# remaining options (README.md lists them).
#
#     bash bench/load/run.sh [BUILD] [QUAL-LOAD OPTIONS...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi
cmake -S . -B "$build" >/dev/null
cmake --build "$build" --target quald qual-compile -j2 >/dev/null
out="$build/bench-load"
mkdir -p "$out"
flags="-O2 -g -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Werror"
cc $flags "$here/fake_worker.c" -o "$out/fake_worker"
# qual-load, with the common/ modules it uses (allocation, files, child
# processes) from the same tree.
src=$(cd "$here/../.." && pwd)
# shellcheck disable=SC2046
cc $flags -D_GNU_SOURCE -I"$src" "$here/qual_load.c" "$here/load_clients.c" \
  "$here/load_report.c" "$src/common/xalloc.c" "$src/common/err.c" \
  "$src/common/fsutil.c" "$src/common/child.c" \
  $(pkg-config --cflags --libs libuv jansson) -o "$out/qual-load"
exec "$out/qual-load" --quald "$build/bin/quald" --worker "$out/fake_worker" \
  --helper "$build/bin/qual-compile" --lines "$here/compile_only.jsonl" "$@"
