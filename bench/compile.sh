#!/usr/bin/env bash
# Compile wall time of a full job, compile-only, from the repository root
# (here or on the GPU machine with the build carried): every case with both
# arms, timed from qual-run's start to its exit (so the two libraries' pins
# and identify children are in every figure), three ways:
#
#   serial    --compile-jobs 1 --no-cache: one compile child at a time
#   parallel  the default jobs (online CPUs, at most 16), --no-cache
#   cached    a cache warmed by a run of the baseline against itself, then
#             baseline against candidate: every baseline arm must come from
#             the cache (the script fails otherwise), only the candidate's
#             compile
#   again     the same again: the same as cached, since the candidate is
#             always compiled (never served from the cache)
#
#     bash bench/compile.sh OUTDIR [BUILD] [BASELINE] [CANDIDATE]
#
# Prints a table: wall seconds, the arms compiled and from the cache, and the
# sum of the compiled arms' compile_ms (CPU-bound work the jobs share out).
set -u
out=${1:?usage: compile.sh OUTDIR [BUILD] [BASELINE] [CANDIDATE]}
build=${2:-build}
base=${3:-/usr/local/cuda/lib64/libnvrtc.so.13}
cand=${4:-/usr/local/cuda/lib64/libnvrtc.alt.so.13}
run=$build/bin/qual-run
mkdir -p "$out"
cache=$out/cache
rm -rf "$cache"

# timed NAME ARGS...: runs qual-run ARGS into OUT/NAME.jsonl, its wall
# seconds into OUT/NAME.wall.
timed() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s.%N)
  "$run" "$@" >"$out/$name.jsonl" 2>"$out/$name.err"
  local rc=$?
  t1=$(date +%s.%N)
  if [ $rc -ne 0 ]; then
    echo "compile.sh: $name: qual-run exited $rc: $(tail -n 3 "$out/$name.err")" >&2
    exit 1
  fi
  python3 -c "print(f'{$t1 - $t0:.2f}')" >"$out/$name.wall"
}

timed serial "$base" "$cand" --compile-only --compile-jobs 1 --no-cache
timed parallel "$base" "$cand" --compile-only --no-cache
timed warm "$base" "$base" --compile-only --cache "$cache"
timed cached "$base" "$cand" --compile-only --cache "$cache"
timed again "$base" "$cand" --compile-only --cache "$cache"

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
host = os.uname().nodename
cpus = os.cpu_count()
print(f"compile-only job: every case, both arms; {host}, {cpus} online CPUs")
print()
print("| run | compile jobs | wall s | arms compiled | arms cached | sum of compile_ms |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for name, what in (("serial", "serial, no cache"), ("parallel", "parallel, no cache"),
                   ("cached", "cached baseline"), ("again", "cached baseline, again")):
    lines = [json.loads(l) for l in open(os.path.join(out, name + ".jsonl"))]
    arms = [(c["case"], a, c[a]) for c in lines if c["type"] == "case"
            for a in ("baseline", "candidate")]
    compiled = [x for x in arms if not x[2].get("cached")]
    cached = [x for x in arms if x[2].get("cached")]
    if name in ("cached", "again"):
        missed = [(c, a) for c, a, x in arms if a == "baseline" and not x.get("cached")]
        if missed:
            sys.exit(f"compile.sh: baseline arms not from the cache: {missed}")
        served = [(c, a) for c, a, x in arms if a == "candidate" and x.get("cached")]
        if served:
            sys.exit(f"compile.sh: candidate arms from the cache: {served}")
    ms = sum(x[2].get("compile_ms", 0) for x in compiled)
    wall = open(os.path.join(out, name + ".wall")).read().strip()
    jobs = lines[0]["settings"].get("compile_jobs")
    print(f"| {what} | {jobs} | {wall} | {len(compiled)} | {len(cached)} | {ms:.0f} |")
PY
