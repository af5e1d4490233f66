#!/usr/bin/env bash
# The fixed cost of a job: where a full job's wall time goes, phase by phase
# (the verdict line's time_s: docs/output.md), from the repository root,
# here or on the GPU machine with the packed build carried:
#
#     bash bench/cost.sh [-n RUNS] OUTDIR [BUILD] [BASELINE] [CANDIDATE]
#     bash bench/cost.sh OUT .carry            (the device machine)
#
# A full job is every case with both arms, the default settings (pairs,
# sessions, blocks, warm-up: nothing here changes what is measured), timed
# on the GPU when the machine has one (/dev/nvidia0 or /dev/kfd) and
# compile-only otherwise. It runs RUNS times (default 3) two ways:
#
#   no_cache  --no-cache: both arms compiled every time
#   cached    a cache warmed by a run of the baseline against itself, then
#             baseline against candidate: the baseline's arms from the cache
#             (the candidate is always compiled)
#
# COST_ARGS adds options to every run (say `--sessions 2`), for a
# comparison of session designs; cost.json records them.
#
# and prints, per way, a table of the split: one row per phase, a column per
# run and the median; "wall" is qual-run's start to its exit as this script
# sees it; "unaccounted" is total less qual-run's own phases, and
# "sessions_unaccounted" the sessions' wall less what they said they did
# and less "close" (forks, the relay; negative when sessions opened the
# GPU during the compiles). The lines of every run, and
# OUTDIR/cost.json (every figure), stay in OUTDIR.
set -u
runs=3
if [ "${1:-}" = "-n" ]; then
  runs=${2:?usage: cost.sh [-n RUNS] OUTDIR [BUILD] [BASELINE] [CANDIDATE]}
  shift 2
fi
out=${1:?usage: cost.sh [-n RUNS] OUTDIR [BUILD] [BASELINE] [CANDIDATE]}
build=${2:-build}
base=${3:-/usr/local/cuda/lib64/libnvrtc.so.13}
cand=${4:-/usr/local/cuda/lib64/libnvrtc.alt.so.13}
run=$build/bin/qual-run
mkdir -p "$out"
cache=$out/cache
rm -rf "$cache"
mode=()
# shellcheck disable=SC2206
extra=(${COST_ARGS:-})
if [ ! -e /dev/nvidia0 ] && [ ! -e /dev/kfd ]; then
  mode=(--compile-only)
fi

# timed NAME ARGS...: qual-run ARGS into OUT/NAME.jsonl, its wall seconds
# into OUT/NAME.wall. Exit status 0 and 1 (regression) are results; any
# other ends the script.
timed() {
  local name=$1 t0 t1 rc
  shift
  t0=$(date +%s.%N)
  "$run" "$@" "${mode[@]}" "${extra[@]}" >"$out/$name.jsonl" 2>"$out/$name.err"
  rc=$?
  t1=$(date +%s.%N)
  if [ $rc -gt 1 ]; then
    echo "cost.sh: $name: qual-run exited $rc: $(tail -n 3 "$out/$name.err")" >&2
    exit 1
  fi
  python3 -c "print(f'{$t1 - $t0:.6f}')" >"$out/$name.wall"
}

for i in $(seq 1 "$runs"); do
  timed "no_cache-$i" "$base" "$cand" --no-cache
done
timed warm "$base" "$base" --cache "$cache"
for i in $(seq 1 "$runs"); do
  timed "cached-$i" "$base" "$cand" --cache "$cache"
done

python3 - "$out" "$runs" <<'PY'
import json, os, statistics, sys

out, runs = sys.argv[1], int(sys.argv[2])
# qual-run's own phases, then the sessions' (docs/output.md, time_s).
OWN = ["identify", "probe", "compile_setup", "user_fixtures", "compile",
       "fixtures_prebuilt", "sessions", "judge"]
EXTRA = ["compile_children", "compile_calls", "close"]
SESSION = ["open", "fixtures", "alloc", "load", "warmup", "blocks", "timing",
           "replays_device", "checks", "release"]


def split(name):
    lines = [json.loads(l) for l in open(os.path.join(out, name + ".jsonl")) if l.strip()]
    verdict = lines[-1]
    if verdict.get("type") != "verdict" or "time_s" not in verdict:
        sys.exit(f"cost.sh: {name}: no verdict line with time_s")
    t = dict(verdict["time_s"])
    t["wall"] = float(open(os.path.join(out, name + ".wall")).read())
    t["unaccounted"] = t["total"] - sum(t.get(k, 0) for k in OWN)
    t["sessions_unaccounted"] = t["sessions"] - t.get("close", 0) - sum(
        t.get(k, 0) for k in SESSION if k != "replays_device")
    t["timed"] = verdict["timed"]
    t["compiled_arms"] = sum(1 for l in lines if l["type"] == "case"
                             for a in ("baseline", "candidate")
                             if l[a].get("compiled") and not l[a].get("cached"))
    t["cached_arms"] = sum(1 for l in lines if l["type"] == "case"
                           for a in ("baseline", "candidate") if l[a].get("cached"))
    return t


rows = (["wall", "total"] + OWN + EXTRA + ["unaccounted"] + SESSION +
        ["sessions_unaccounted", "session_count", "compiled_arms", "cached_arms"])
report = {"host": os.uname().nodename, "cpus": os.cpu_count(), "runs": runs,
          "options": os.environ.get("COST_ARGS", "")}
for way in ("no_cache", "cached"):
    splits = [split(f"{way}-{i}") for i in range(1, runs + 1)]
    report[way] = splits
    timed = "timed on the gpu" if splits[0]["timed"] else "compile-only"
    opts = f", options {report['options']}" if report["options"] else ""
    print(f"{way}: every case, both arms, {timed}{opts}; {report['host']}, "
          f"{report['cpus']} online CPUs; seconds")
    print()
    print("| phase | " + " | ".join(f"run {i}" for i in range(1, runs + 1)) + " | median |")
    print("| --- |" + " ---: |" * (runs + 1))
    for r in rows:
        vals = [s.get(r, 0) for s in splits]
        med = statistics.median(vals)
        fmt = (lambda v: f"{v:.0f}") if r in ("session_count", "compiled_arms",
                                               "cached_arms") else (lambda v: f"{v:.3f}")
        print(f"| {r} | " + " | ".join(fmt(v) for v in vals) + f" | {fmt(med)} |")
    print()
json.dump(report, open(os.path.join(out, "cost.json"), "w"), indent=1)
PY
