#!/usr/bin/env bash
# Sampling until decided and the gate on the GPU (docs/verdicts.md). In one
# call on a machine with an NVIDIA GPU, after scripts/pack-gpu.sh:
#
#     bash tests/gpu/sampling.sh OUTDIR [BUILD] [REPEATS] [CANDIDATES]
#
# Runs qual-run REPEATS times (default 8) for each candidate against nvrtc
# (CANDIDATES, default nvrtc itself and nvrtc.alt: A/A controls), interleaved
# so that drift of the GPU's state reaches every candidate alike, with the
# default sampling (--max-pairs 64 x --pairs) and gate. Then, per candidate: how
# many case runs were called slower or faster (an A/A run must have none),
# how many were decided, why sampling stopped, the pairs timed, whether
# repeats agree on each case verdict and on the exit status, and each run's
# wall time. Exits 1 when an A/A run did not pass or called a case slower or
# faster. Everything lands in OUTDIR, also as one tarball.
set -u
out=${1:?usage: sampling.sh OUTDIR [BUILD] [REPEATS] [CANDIDATES]}
build=${2:-build}
repeats=${3:-8}
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
cands=${4:-$nvrtc /usr/local/cuda/lib64/libnvrtc.alt.so.13}
run="$build/bin/qual-run"
mkdir -p "$out/runs"
status=0

for r in $(seq "$repeats"); do
  i=0
  for cand in $cands; do
    i=$((i + 1))
    t0=$(date +%s%N)
    "$run" "$nvrtc" "$cand" >"$out/runs/c$i.$r.jsonl" 2>"$out/runs/c$i.$r.err"
    rc=$?
    echo "c$i $r $rc $(( ($(date +%s%N) - t0) / 1000000 )) $cand" >>"$out/exits.txt"
  done
done
python3 - "$out" <<'EOF' | tee "$out/summary.txt" || status=1
import collections, glob, json, os, sys

out = sys.argv[1]
runs = collections.defaultdict(dict)   # candidate -> repeat -> lines
exits = {}
for l in open(os.path.join(out, "exits.txt")):
    c, r, rc, wall, path = l.split()
    exits[(c, r)] = (int(rc), int(wall) / 1000, path)
for f in glob.glob(os.path.join(out, "runs", "*.jsonl")):
    c, r = os.path.basename(f)[:-6].split(".")
    runs[c][r] = [json.loads(l) for l in open(f) if l.strip()]
bad = False
for c in sorted(runs):
    reps = runs[c]
    path = exits[(c, next(iter(reps)))][2]
    verdicts = collections.defaultdict(list)
    count = collections.Counter()
    for r, lines in sorted(reps.items()):
        for l in lines:
            if l["type"] != "case_verdict" or "decided" not in l:
                continue
            verdicts[l["case"]].append(l["verdict"])
            count[l["verdict"]] += 1
            count["decided" if l["decided"] else "undecided"] += 1
            count["stopped " + l["stopped"]] += 1
            count["pairs"] += l["n"]
            count["case runs"] += 1
    statuses = [exits[(c, r)][0] for r in reps]
    walls = sorted(exits[(c, r)][1] for r in reps)
    agree = sum(len(set(v)) == 1 for v in verdicts.values())
    print(f"{c} ({path}): {len(reps)} runs, exit statuses {collections.Counter(statuses)}, "
          f"wall {walls[0]:.1f}-{walls[-1]:.1f} s")
    print(f"  case runs {count['case runs']}: " + ", ".join(
        f"{k} {v}" for k, v in sorted(count.items()) if k not in ("case runs", "pairs")) +
          f"; mean pairs {count['pairs'] / max(count['case runs'], 1):.1f}")
    print(f"  cases whose verdict every repeat agreed on: {agree} of {len(verdicts)}")
    if "nvrtc" in path and ("alt" in path or path.endswith("libnvrtc.so.13")):
        if any(s != 0 for s in statuses) or count["slower"] or count["faster"]:
            print("  FAIL: an A/A run did not pass or called a case slower or faster")
            bad = True
sys.exit(1 if bad else 0)
EOF
tar -czf "$out/sampling.tar.gz" -C "$out" runs exits.txt summary.txt
exit $status
