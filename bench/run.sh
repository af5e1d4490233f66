#!/usr/bin/env bash
# The benchmark, on the GPU machine, from the repository root with the build
# carried: an A/A qualification (nvrtc against itself, 60 pairs) and the
# library timings (bench/library.py), then the table (bench/report.py).
#
#     bash bench/run.sh OUTDIR [BUILD]
set -u
out=${1:?usage: run.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
"$build/bin/qual-run" "$nvrtc" "$nvrtc" --pairs 60 >"$out/bench_aa.jsonl" 2>"$out/bench_aa.err"
echo "a/a run exit $?"
python3 bench/library.py --cases "$out/bench_aa.jsonl" >"$out/library.jsonl" 2>"$out/library.err" ||
  echo "library timings failed: $(tail -n 3 "$out/library.err")"
python3 bench/report.py "$out/bench_aa.jsonl" "$out/library.jsonl" | tee "$out/bench.txt"
