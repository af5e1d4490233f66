#!/usr/bin/env bash
# Runs one qualification end to end: BASELINE and CANDIDATE compiler libraries
# (default: the CUDA toolkit's nvrtc 13 against its alt build). On a machine
# with a GPU the cases are checked and timed; without one, the run is a static
# compile-only comparison and its verdict says that nothing was timed.
# Further arguments go to qual-run (see qual-run --help).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-/usr/local/cuda/lib64/libnvrtc.so.13}
cand=${2:-/usr/local/cuda/lib64/libnvrtc.alt.so.13}
shift $(( $# < 2 ? $# : 2 ))
if [ ! -x "${QUAL_BUILD:-build}/bin/qual-run" ]; then
  bash scripts/install-deps.sh
  bash scripts/build.sh
fi
exec "${QUAL_BUILD:-build}/bin/qual-run" "$base" "$cand" "$@"
