#!/usr/bin/env bash
# The clocks and the layout spread on the device. In one call on a machine
# with an NVIDIA GPU, after scripts/pack-gpu.sh (carry .carry):
#
#     bash tests/gpu/clocks.sh OUTDIR [BUILD] [REPEATS]
#
# Runs nvrtc against nvrtc.alt (the same code: an A/A run) REPEATS times
# (default 3) with the default settings, then once with QUAL_NVML_LIBRARY
# naming no file. tests/gpu/clocks_check.py then checks that every block
# line of the first runs carries NVML's readings (start line source "nvml",
# SM and memory clocks, power, temperature, a reasons mask) and that the
# last run's start line says why its clocks are null; and prints, per case,
# the clocks' range, the reasons seen, the throttled, retaken and excluded
# blocks, and the layout spread (between and within placements, p, p_holm)
# with the cases called layout-sensitive. Everything lands in OUTDIR, also
# as one tarball.
set -u
out=${1:?usage: clocks.sh OUTDIR [BUILD] [REPEATS]}
build=${2:-build}
repeats=${3:-3}
mkdir -p "$out/runs"
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
here=$(cd "$(dirname "$0")/../.." && pwd)
status=0

nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active \
  --format=csv >"$out/nvidia-smi.txt" 2>&1
for r in $(seq "$repeats"); do
  "$run" "$nvrtc" "$alt" >"$out/runs/aa.$r.jsonl" 2>"$out/runs/aa.$r.err"
  got=$?
  [ "$got" = 0 ] || { echo "aa.$r: exit $got, want 0"; status=1; }
done
QUAL_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$run" "$nvrtc" "$alt" \
  >"$out/runs/no_nvml.jsonl" 2>"$out/runs/no_nvml.err" || status=1
# The schema check needs python3's jsonschema, which the device machine may
# lack: then it is said, not failed (the lines can be checked afterwards).
if python3 -c 'import jsonschema' 2>/dev/null; then
  for f in "$out"/runs/*.jsonl; do
    python3 "$here/tests/tools/validate_lines.py" "$here/docs/schema/lines.schema.json" "$f" \
      >>"$out/summary.txt" 2>&1 || status=1
  done
else
  echo "schema: not checked (python3 has no jsonschema)" | tee -a "$out/summary.txt"
fi
python3 "$here/tests/gpu/clocks_check.py" "$out"/runs/aa.*.jsonl \
  --no-clocks "$out/runs/no_nvml.jsonl" | tee -a "$out/summary.txt"
[ "${PIPESTATUS[0]}" = 0 ] || status=1
tar -czf "$out/clocks.tar.gz" -C "$out" runs nvidia-smi.txt summary.txt
exit $status
