#!/usr/bin/env bash
# A calibration on the GPU through the service, in one call: starts quald
# on a temporary socket and state directory with the GPU as its one slot,
# runs `qualctl calibrate --runs N --watch` (nvrtc 13.0 against itself, N
# from $CALIBRATE_RUNS, default 10), shows `qualctl calibration`, then
# submits nvrtc against its alt copy and checks that the job's verdict line
# carries the new calibration record (docs/verdicts.md, "Calibration").
#
#     bash tests/gpu/calibrate.sh OUTDIR [BUILD]
set -u
out=${1:?usage: calibrate.sh OUTDIR [BUILD]}
build=$(cd "${2:-build}" && pwd)
runs=${CALIBRATE_RUNS:-10}
mkdir -p "$out"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
# shellcheck source=tests/gpu/quald_start.sh
. "$(dirname "$0")/quald_start.sh"
status=0
quald_start "$build"

t0=$SECONDS
ctl calibrate "$nvrtc" --runs "$runs" --watch --json >"$out/calibrate.jsonl" 2>"$out/calibrate.err"
rc=$?
echo "== qualctl calibrate --runs $runs: exit $rc in $((SECONDS - t0)) s" | tee "$out/summary.txt"
[ "$rc" = 0 ] || status=1
ctl calibration | tee -a "$out/summary.txt"
ctl calibration --json >"$out/calibration.json"
ctl submit "$nvrtc" "$alt" --json >"$out/after.jsonl" 2>"$out/after.err"
echo "== submit after the calibration: exit $?" | tee -a "$out/summary.txt"
python3 - "$out" "$runs" <<'PY' | tee -a "$out/summary.txt" || status=1
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
def lines(name):
    return [json.loads(l) for l in open(f"{out}/{name}") if l.strip().startswith("{")]
cal = [l for l in lines("calibrate.jsonl") if l.get("type") == "verdict"]
after = [l for l in lines("after.jsonl") if l.get("type") == "verdict"]
ok = True
if not cal or "calibration" not in cal[-1]:
    print("FAIL: the calibration job's verdict line has no calibration record"); ok = False
else:
    rec = cal[-1]["calibration"]
    print("record:", json.dumps({k: rec[k] for k in rec if k != "cases"}))
    print(f"cases in the record: {len(rec.get('cases', []))}")
    got = after[-1].get("calibration") if after else None
    if not isinstance(got, dict) or any(got.get(k) != rec.get(k)
                                        for k in ("time", "device_key", "runs")):
        print("FAIL: the next job's verdict line does not carry the record"); ok = False
    else:
        print("the next job's verdict line carries the same record")
print("calibrate suite:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
kill -TERM "$qpid"
wait "$qpid"
cp -r "$tmp/state/calibration" "$out/" 2>/dev/null
tar -czf "$out/calibrate.tar.gz" -C "$out" --exclude calibrate.tar.gz . 2>/dev/null
rm -rf "$tmp"
exit $status
