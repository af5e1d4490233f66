#!/usr/bin/env bash
# What the compilers made of each case, on a timed job (docs/explain.md), in
# one call on a machine with an NVIDIA GPU, after scripts/pack-gpu.sh (which
# copies nvdisasm into BUILD/tools/bin when scripts/fetch-cuda-tools.sh has
# fetched it):
#
#     bash tests/gpu/explain.sh OUTDIR BUILD CANDIDATE
#
# One qual-run of the toolkit's nvrtc (13.0) against CANDIDATE (a real nvrtc
# of another version), then `qualctl explain FILE CASE` for each case it
# called slower, and --json for every case; then every case's computed
# occupancy against the driver's (occupancy_check.py). Exit 1 when the job
# had no code lines, an explain failed or an occupancy differs.
set -u
out=${1:?usage: explain.sh OUTDIR BUILD CANDIDATE}
build=${2:?}
cand=${3:?}
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
mkdir -p "$out/explain"
[ -x "$build/tools/bin/nvdisasm" ] && export QUAL_NVDISASM=$(cd "$build/tools/bin" && pwd)/nvdisasm
t0=$(date +%s%N)
"$build/bin/qual-run" "$nvrtc" "$cand" >"$out/explain/job.jsonl" 2>"$out/explain/job.err"
rc=$?
echo "qual-run exit $rc, wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee "$out/explain/summary.txt"
status=0
grep -q '"type":"code"' "$out/explain/job.jsonl" || { echo "no code lines" | tee -a "$out/explain/summary.txt"; status=1; }
for c in $(grep -o '"type":"case_verdict","case":"[^"]*","verdict":"[a-z_]*"' "$out/explain/job.jsonl" |
           sed 's/.*"case":"\([^"]*\)","verdict":"\([a-z_]*\)"/\1:\2/'); do
  name=${c%%:*} verdict=${c#*:}
  echo "$name $verdict" >>"$out/explain/summary.txt"
  "$build/bin/qualctl" explain "$out/explain/job.jsonl" "$name" --json \
    >"$out/explain/$name.json" 2>>"$out/explain/explain.err" || status=1
  if [ "$verdict" = slower ]; then
    "$build/bin/qualctl" explain "$out/explain/job.jsonl" "$name" \
      >"$out/explain/$name.txt" 2>>"$out/explain/explain.err" || status=1
  fi
done
python3 "$(dirname "$0")/occupancy_check.py" "$out/explain/job.jsonl" \
  >"$out/explain/occupancy.txt" 2>&1 || status=1
tail -n 1 "$out/explain/occupancy.txt" >>"$out/explain/summary.txt"
exit "$status"
