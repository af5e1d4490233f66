#!/usr/bin/env bash
# Whether where a case's buffers lie moves its ratio (docs/verdicts.md, "The
# same conditions at every look"): one case X alone at each pad of $PADS MiB
# (qual-run --pad-mib: device memory held before each case's buffers) and
# among all cases at the first and last pad, 480 pairs each, against the
# toolkit's nvrtc (13.0). From the repository root after scripts/pack-gpu.sh:
#
#     bash tests/gpu/pads.sh OUTDIR BUILD CANDIDATE X
#
# Lines in OUTDIR/jobs/ (bench/neighbours.py reads them), wall times in
# OUTDIR/jobs.txt.
set -u
out=${1:?usage: pads.sh OUTDIR BUILD CANDIDATE X}
build=${2:?} cand=${3:?no candidate: did tests/gpu/unpack-nvrtc.sh find one?} x=${4:?}
pads=${PADS:-0 2 8 32 128 512}
mkdir -p "$out/jobs"
: >"$out/jobs.txt"
. "$(dirname "$0")/job.sh"
job() { gpu_fixed_job "$out" "$1" "$build" "$cand" 480 "${@:2}"; }
set -- $pads
first=$1
for p in $pads; do last=$p; done
for p in $pads; do
  job "alone.pad$p" --case "$x" --pad-mib "$p"
done
job "among.pad$first" --pad-mib "$first"
job "among.pad$last" --pad-mib "$last"
python3 "$(dirname "$0")/../../bench/neighbours.py" "$x" "$out/jobs" | tee "$out/summary.txt"
