#!/usr/bin/env bash
# A timed bisection on the GPU (docs/bisect.md), in one call on a machine
# with an NVIDIA GPU, after scripts/pack-gpu.sh:
#
#     bash tests/gpu/bisect.sh OUTDIR [BUILD]
#
# A series of 8 builds around the toolkit's nvrtc (13.0): builds 1-4 are it
# and its alt copy in turn (the code of each the baseline's), builds 5-8 the
# shim_delay candidate, which forwards to it and plants a wait of
# $BISECT_DELAY cycles (default 1024) in every case's kernel. qual-bisect,
# timed, must name build 5 for every case it finds a change in, and no other
# build. Prints its lines' summary and the wall time (OUTDIR/summary.txt;
# its lines OUTDIR/bisect.jsonl). Exit 1 when a change is found at any build
# but the 5th, or at none.
set -u
out=${1:?usage: bisect.sh OUTDIR [BUILD]}
build=${2:-.carry}
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
delay=$build/shims/libshim_delay.so
mkdir -p "$out"
builds=("$alt" "$nvrtc" "$alt" "$nvrtc" "$delay" "$delay" "$delay" "$delay")
printf '%s\n' "${builds[@]}" >"$out/builds.txt"
t0=$(date +%s%N)
QUAL_SHIM_DELAY_CYCLES=${BISECT_DELAY:-1024} "$build/bin/qual-bisect" \
  --worker "$build/bin/qual-run" "$nvrtc" "${builds[@]}" ${BISECT_OPTIONS:-} \
  >"$out/bisect.jsonl" 2>"$out/bisect.err"
rc=$?
wall=$(( ($(date +%s%N) - t0) / 1000000 ))
python3 - "$out/bisect.jsonl" "$rc" "$wall" <<'PY' | tee "$out/summary.txt"
import json, sys
path, rc, wall = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000
lines = [json.loads(t) for t in open(path) if t.strip()]
steps = [l for l in lines if l.get("type") == "bisect_step"]
final = [l for l in lines if l.get("type") == "bisect"]
print(f"qual-bisect exit {rc}, wall {wall:.1f} s, {len(steps)} comparisons")
for s in steps:
    print("  step", json.dumps({k: s.get(k) for k in ("a", "b", "effort", "exit", "cases")})[:600])
bad = rc != 1 or not final
found = set()
for f in final:
    for c in f.get("cases") or []:
        print(f"  {c.get('case'):<32} " + json.dumps({k: v for k, v in c.items() if k != "case"})[:300])
        for x in c.get("changes") or []:
            found.add(x.get("to") if x.get("step") else ("diffuse", x.get("from"), x.get("to")))
    print(f"  wall_s {f.get('wall_s')}, runs {f.get('runs')}, not_applicable {f.get('not_applicable')}")
print("builds named:", sorted(found))
bad |= found != {5}
print("PASS" if not bad else "FAIL")
sys.exit(1 if bad else 0)
PY
exit "${PIPESTATUS[0]}"
