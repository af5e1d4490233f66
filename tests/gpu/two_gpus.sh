#!/usr/bin/env bash
# Two GPUs through the service (issue 5), in one call on a machine with two
# NVIDIA GPUs. The same four jobs (nvrtc against nvrtc.alt, and against the
# slower shim, twice each) run first through a quald with one GPU slot
# (--devices 0), then through a quald with two (--devices 0,1). Prints, for
# the two-GPU run, which jobs overlapped and on which GPUs, checks that no GPU
# ever ran two jobs at once and that every job's lines name its GPU, compares
# each case's verdict and ratio interval with the one-GPU run, and gives both
# wall times.
#
# Intervals: for a candidate of byte-identical code (nvrtc.alt) every pair of
# intervals must overlap: those are A/A intervals, which hold 1 at their
# confidence (docs/verdicts.md). For the slow shim (12-27x) an interval does
# not cover what differs between processes: the script reports how many
# overlap, and requires the medians to agree within QUAL_REPEAT_SPREAD
# (default 0.04: repeats of the same job on one H200 spread up to 3.9%,
# tests/gpu/blocks.sh), and the same-GPU repeats are held to the same test.
#
#     bash tests/gpu/two_gpus.sh OUTDIR [BUILD]
set -u
out=${1:?usage: two_gpus.sh OUTDIR [BUILD]}
build=${2:-build}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
slow="$(cd "$build" && pwd)/shims/libshim_slow.so"
nvidia-smi -L | tee "$out/gpus.txt"

# run NAME DEVICES: four jobs through one quald; the state dir is kept.
run() {
  local name=$1 devices=$2 tmp sock qpid t0 t1
  tmp=$(mktemp -d)
  sock=$tmp/quald.sock
  "$build/bin/quald" --socket "$sock" --state-dir "$out/$name" --devices "$devices" \
    --worker "$build/bin/qual-run" --compile-helper "$build/bin/qual-compile" \
    --allow-root "$(cd "$build" && pwd)" >"$out/$name.quald.log" 2>&1 &
  qpid=$!
  for _ in $(seq 100); do "$build/bin/qualctl" --socket "$sock" status >/dev/null 2>&1 && break; sleep 0.1; done
  t0=$(date +%s%N)
  for cand in "$alt" "$slow" "$alt" "$slow"; do
    "$build/bin/qualctl" --socket "$sock" submit "$nvrtc" "$cand" --json \
      >"$out/$name.$(basename "$cand").$RANDOM.jsonl" 2>>"$out/$name.err" &
  done
  wait $(jobs -p | grep -v "^$qpid$") 2>/dev/null
  t1=$(date +%s%N)
  echo "$name: four jobs in $(( (t1 - t0) / 1000000 )) ms" | tee -a "$out/summary.txt"
  "$build/bin/qualctl" --socket "$sock" list | tee -a "$out/summary.txt"
  kill -TERM "$qpid"; wait "$qpid"
  rm -rf "$tmp"
}
run one 0
run two 0,1

python3 - "$out" "${QUAL_REPEAT_SPREAD:-0.04}" <<'PY' | tee -a "$out/summary.txt"
import json, math, os, sys
out = sys.argv[1]
spread = float(sys.argv[2])
def jobs(name):
    root = os.path.join(out, name, "jobs")
    res = {}
    for j in sorted(os.listdir(root)):
        st = json.load(open(os.path.join(root, j, "state.json")))
        lines = [json.loads(l) for l in open(os.path.join(root, j, "log.jsonl"))]
        start = lines[0]
        res[j] = dict(state=st, cand=os.path.basename(start["candidate"]["path"]),
                      device=start["device"]["ordinal"] if start.get("device") else None,
                      cv={l["case"]: l for l in lines if l["type"] == "case_verdict"},
                      verdict=lines[-1]["verdict"])
    return res
ok = True
one, two = jobs("one"), jobs("two")
print("two-GPU run: job, candidate, device in its lines, slot device, started, finished, verdict")
for j, r in two.items():
    print(f"  {j} {r['cand']:28} lines:gpu{r['device']} slot:gpu{r['state'].get('device')} "
          f"{r['state']['started']} {r['state']['finished']} {r['verdict']}")
    if r["device"] != r["state"].get("device"):
        ok = False; print("  MISMATCH: lines name another GPU than the slot")
# No GPU runs two jobs at once; two ran at once on different GPUs.
import datetime
def t(s): return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
iv = [(t(r["state"]["started"]), t(r["state"]["finished"]), r["device"], j) for j, r in two.items()]
overlap_same, overlap_diff = [], []
for a in iv:
    for b in iv:
        if a[3] < b[3] and a[0] < b[1] and b[0] < a[1]:
            (overlap_same if a[2] == b[2] else overlap_diff).append((a[3], b[3]))
print("jobs at once on different GPUs:", overlap_diff or "none")
print("jobs at once on the same GPU:", overlap_same or "none")
ok &= not overlap_same and bool(overlap_diff)
# Verdicts: same per case, intervals overlapping, one-GPU vs two-GPU, by candidate.
def by_cand(js):
    d = {}
    for r in js.values(): d.setdefault(r["cand"], []).append(r)
    return d
o, w = by_cand(one), by_cand(two)
def compare(label, pairs, aa):
    global ok
    n = over_n = 0
    for a, b in pairs:
        for case, x in a["cv"].items():
            y = b["cv"][case]
            same = x["verdict"] == y["verdict"] or {x["verdict"], y["verdict"]} <= {"identical", "equivalent"}
            over = x.get("ratio_lo") is not None and y.get("ratio_lo") is not None and \
                   x["ratio_lo"] <= y["ratio_hi"] and y["ratio_lo"] <= x["ratio_hi"]
            near = abs(math.log(x["ratio_median"] / y["ratio_median"])) <= spread
            n += 1
            over_n += over
            if not same or not (over if aa else near):
                ok = False
                print(f"  FAIL {label} {case}: {x['verdict']} {x['ratio_median']:.4f} [{x.get('ratio_lo')}, {x.get('ratio_hi')}]"
                      f" vs {y['verdict']} {y['ratio_median']:.4f} [{y.get('ratio_lo')}, {y.get('ratio_hi')}]")
    print(f"  {label}: intervals overlap in {over_n} of {n}")
for cand in sorted(o):
    aa = cand.startswith("libnvrtc")
    compare(f"{cand} one-GPU vs two-GPU", [(a, b) for a in o[cand] for b in w[cand]], aa)
    compare(f"{cand} one-GPU repeat vs repeat", [(o[cand][0], o[cand][1])], aa)
    print(f"{cand}: one-GPU verdicts {[r['verdict'] for r in o[cand]]}, two-GPU {[r['verdict'] for r in w[cand]]}")
    for case in sorted(o[cand][0]["cv"]):
        x = o[cand][0]["cv"][case]; y = w[cand][0]["cv"][case]
        print(f"    {case:28} one {x['verdict']:10} {x.get('ratio_median', 0):8.4f} [{x.get('ratio_lo', 0):.4f}, {x.get('ratio_hi', 0):.4f}]"
              f"   two {y['verdict']:10} {y.get('ratio_median', 0):8.4f} [{y.get('ratio_lo', 0):.4f}, {y.get('ratio_hi', 0):.4f}]")
print("two gpus:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
st=${PIPESTATUS[0]}
tar -czf "$out/two_gpus.tar.gz" -C "$out" --exclude two_gpus.tar.gz . 2>/dev/null
exit $st
