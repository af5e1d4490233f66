# shellcheck shell=bash
# Sourced by the GPU scripts that run series of qual-run jobs (rounds.sh,
# neighbours.sh, pads.sh):
#
#     gpu_job OUTDIR NAME COMMAND...
#
# runs COMMAND with its stdout in OUTDIR/jobs/NAME.jsonl and its stderr in
# OUTDIR/jobs/NAME.err, and adds "NAME EXIT WALL_MS" to OUTDIR/jobs.txt.
gpu_job() {
  local out=$1 name=$2 t0 rc
  shift 2
  mkdir -p "$out/jobs"
  t0=$(date +%s%N)
  "$@" >"$out/jobs/$name.jsonl" 2>"$out/jobs/$name.err"
  rc=$?
  echo "$name $rc $(( ($(date +%s%N) - t0) / 1000000 ))" >>"$out/jobs.txt"
}
