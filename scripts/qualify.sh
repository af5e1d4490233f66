#!/usr/bin/env bash
# Runs one qualification end to end: BASELINE and CANDIDATE compiler libraries
# (default: the CUDA toolkit's nvrtc 13 against its alt build). On a machine
# with a GPU the cases are checked and timed; without one, the run is a static
# compile-only comparison and its verdict says that nothing was timed.
# Further arguments go to qual-run (see qual-run --help). On a terminal
# qual-run shows the summary table (times per arm, change, geomean);
# elsewhere, or with --format json, its JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
# Options alone (scripts/qualify.sh --compile-only) keep the default pair.
base=/usr/local/cuda/lib64/libnvrtc.so.13
cand=/usr/local/cuda/lib64/libnvrtc.alt.so.13
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
  if [ $# -lt 2 ] || [ "${2#-}" != "$2" ]; then
    echo "qualify.sh: give both libraries, BASELINE and CANDIDATE, or neither" >&2
    exit 4
  fi
  base=$1 cand=$2
  shift 2
fi
if [ ! -x "${QUAL_BUILD:-build}/bin/qual-run" ]; then
  bash scripts/install-deps.sh
  bash scripts/build.sh
fi
exec "${QUAL_BUILD:-build}/bin/qual-run" "$base" "$cand" "$@"
