#!/usr/bin/env bash
# The user's own fixtures on the GPU (docs/fixtures.md, "Your own fixtures"):
# examples/fixtures/rmsnorm_f16 through qual-run, and through quald and
# qualctl, on a machine with an NVIDIA GPU, from the repository root after
# building (the build folder carried, as for run.sh):
#
#     bash tests/gpu/fixtures_user.sh OUTDIR [BUILD]
#
# Steps, each with the exit status it must give:
#   aa         the example, nvrtc against itself: every case passes its
#              numpy oracle in both arms (0);
#   aa_sessions1  the same in one process (--sessions 1): the oracle runs
#              from the process that holds the GPU (0);
#   miscompile the example against the miscompiling shim (every threadIdx.x
#              becomes threadIdx.x ^ 1: the warp reduction's lane 0 is then
#              another lane, which holds a partial sum): fail (2), wrong_output;
#   diff_aa    a copy of the example with "oracle": "baseline", nvrtc
#              against itself: the candidate matches the baseline's output (0);
#   diff_miscompile  the same copy against the miscompiling shim: the
#              differential check catches it: fail (2), wrong_output, the
#              message saying it differs from the baseline's output.
#   service    the example through quald and qualctl, as tests/gpu/service.sh
#              does it: quald with the GPU as its one slot and a copy of the
#              example under an --allow-root of its, `qualctl submit NVRTC ALT
#              --fixtures DIR --pairs 30` (a real, timed job): exit 0; every
#              case, built-in and the example's, passes its oracle in both
#              arms with identical code, and the job's verdict is neutral
#              (tests/gpu/fixtures_check.py run --identical); the job's stored
#              lines (qualctl show --json) are the lines the submit streamed.
#              QUAL_FIXTURES_SERVICE_COMPILE_ONLY=1 runs this step alone, on a
#              compile-only slot (--slots 1, --compile-only: exit 0, verdict
#              not_timed, no oracle comparison), for a machine without a GPU.
# Every run's lines are validated against docs/schema/lines.schema.json where
# python3 has jsonschema. The oracle needs python3 with numpy first on PATH
# (Debian's python3-numpy: scripts/install-deps.sh). Exit status 0 only when
# every expectation held.
set -u
out=${1:?usage: fixtures_user.sh OUTDIR [BUILD]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
run="$build/bin/qual-run"
nvrtc=/usr/local/cuda/lib64/libnvrtc.so.13
alt=/usr/local/cuda/lib64/libnvrtc.alt.so.13
shim="$build/shims/libshim_miscompile.so"
example="$root/examples/fixtures/rmsnorm_f16"
status=0

note() { printf '%s\n' "$*" | tee -a "$out/summary.txt"; }

# The oracle is `#!/usr/bin/env python3`: the first python3 on PATH must have
# numpy (the H200's is a virtual environment's; Debian's is /usr/bin's).
if ! python3 -c 'import numpy' 2>/dev/null; then
  export PATH="/usr/bin:$PATH"
  if ! python3 -c 'import numpy' 2>/dev/null; then
    note "no python3 with numpy on PATH or in /usr/bin: the example's oracle cannot run"
    exit 1
  fi
fi
note "oracle python: $(command -v python3) (numpy $(python3 -c 'import numpy; print(numpy.__version__)'))"

# The differential variant: the example with "oracle": "baseline".
diff_dir="$out/rmsnorm_f16_baseline"
rm -rf "$diff_dir"
cp -r "$example" "$diff_dir"
python3 - "$diff_dir/fixture.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["oracle"] = "baseline"
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY

# step NAME WANT_EXIT BASE CAND DIR [want: CODE SUBSTRING] -- [qual-run options]
step() {
  local name=$1 want=$2 base=$3 cand=$4 dir=$5 code=${6:-} phrase=${7:-}
  shift 7
  [ "${1:-}" = "--" ] && shift
  local t0=$SECONDS got
  "$run" "$base" "$cand" --fixtures "$dir" --only-fixtures "$@" >"$out/$name.jsonl" \
    2>"$out/$name.err"
  got=$?
  note "$name: exit $got (want $want) in $((SECONDS - t0)) s"
  [ "$got" = "$want" ] || status=1
  grep '"type":"case_verdict"' "$out/$name.jsonl" | tee -a "$out/summary.txt"
  grep '"type":"error"' "$out/$name.jsonl" | head -n 4 | tee -a "$out/summary.txt"
  if [ -n "$code" ]; then
    if ! grep '"type":"error"' "$out/$name.jsonl" | grep "\"code\":\"$code\"" |
        grep '"arm":"candidate"' | grep -q -- "$phrase"; then
      note "  no candidate error line with code $code and '$phrase'"
      status=1
    fi
  elif grep -q '"type":"error"' "$out/$name.jsonl"; then
    note "  unexpected error lines"
    status=1
  fi
  if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 "$root/tests/tools/validate_lines.py" "$root/docs/schema/lines.schema.json" \
      "$out/$name.jsonl" >>"$out/summary.txt" 2>&1 || { note "  lines not valid"; status=1; }
  fi
  # The case lines name the oracle.
  grep '"type":"case"' "$out/$name.jsonl" | grep -o '"oracle":{[^}]*}' | sort -u |
    tee -a "$out/summary.txt"
}

# service: the example through quald and qualctl (see the top). The copy
# lives in a fresh folder of ours (mode 0700, under the sticky /tmp), so that
# quald's policy finds no path component writable by others.
service_step() {
  local t0=$SECONDS bad=0 tmp sock fx qpid got job slot=(--devices 0) co=()
  local want=neutral
  if [ "${QUAL_FIXTURES_SERVICE_COMPILE_ONLY:-}" = 1 ]; then
    slot=(--slots 1)
    co=(--compile-only)
    want=not_timed
  fi
  tmp=$(mktemp -d)
  sock=$tmp/quald.sock
  fx=$tmp/allowed/rmsnorm_f16
  mkdir -p "$tmp/allowed"
  cp -r "$example" "$fx"
  chmod -R go-w "$tmp/allowed"
  # quald hands its PATH (with the numpy python3 first) on to the worker,
  # which runs the oracle.
  "$build/bin/quald" --socket "$sock" --state-dir "$tmp/state" "${slot[@]}" \
    --worker "$build/bin/qual-run" --compile-helper "$build/bin/qual-compile" \
    --allow-root "$tmp/allowed" >"$out/service_quald.log" 2>&1 &
  qpid=$!
  for _ in $(seq 100); do
    "$build/bin/qualctl" --socket "$sock" status >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$build/bin/qualctl" --socket "$sock" submit "$nvrtc" "$alt" --fixtures "$fx" \
    --pairs 30 "${co[@]}" --json >"$out/service.jsonl" 2>"$out/service.err"
  got=$?
  note "service: qualctl exit $got (want 0) in $((SECONDS - t0)) s"
  [ "$got" = 0 ] || { bad=1; head -c 2000 "$out/service.err" | tee -a "$out/summary.txt"; }
  job=$(head -n 1 "$out/service.jsonl" | grep -o '"job":"j[0-9]*"' | cut -d'"' -f4)
  if [ -z "$job" ]; then
    note "  the submit printed no job line"
    bad=1
  else
    "$build/bin/qualctl" --socket "$sock" show "$job" --json >"$out/service_show.jsonl" \
      2>>"$out/service.err"
    cmp -s "$out/service.jsonl" "$out/service_show.jsonl" ||
      { note "  qualctl show $job --json differs from the submit's lines"; bad=1; }
  fi
  if [ "$want" = neutral ]; then
    python3 "$here/fixtures_check.py" run "$out/service.jsonl" --identical |
      tee -a "$out/summary.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || bad=1
  fi
  grep -q "\"type\":\"verdict\",\"verdict\":\"$want\"" "$out/service.jsonl" ||
    { note "  the job's verdict is not $want: $(tail -n 1 "$out/service.jsonl" | head -c 300)"
      bad=1; }
  local c
  for c in rmsnorm_f16-4096x1024 rmsnorm_f16-1024x4096; do
    grep '"type":"case"' "$out/service.jsonl" | grep -q "\"case\":\"$c\"" ||
      { note "  no case line for $c"; bad=1; }
  done
  if python3 -c 'import jsonschema' 2>/dev/null; then
    python3 "$root/tests/tools/validate_lines.py" "$root/docs/schema/lines.schema.json" \
      "$out/service.jsonl" --expect-verdict "$want" >>"$out/summary.txt" 2>&1 ||
      { note "  lines not valid"; bad=1; }
  fi
  kill -TERM "$qpid"
  wait "$qpid"
  got=$?
  note "service: quald exit $got after SIGTERM (want 0)"
  [ "$got" = 0 ] || bad=1
  local n what="compile-only,"
  n=$(grep -c '"type":"case"' "$out/service.jsonl")
  [ "$want" = neutral ] && what="each passing its oracle in both arms, identical code,"
  note "service: job $job through quald and qualctl, nvrtc 13.0 against its alt copy," \
    "$n cases (the built-in ones and rmsnorm_f16's two), $what" \
    "verdict $(tail -n 1 "$out/service.jsonl" | grep -o '"verdict":"[a-z_]*"' | head -n 1 |
      cut -d'"' -f4) (want $want) in $((SECONDS - t0)) s:" \
    "$([ $bad = 0 ] && echo PASS || echo FAIL)"
  cp -r "$tmp/state" "$out/service_state" 2>/dev/null
  rm -rf "$tmp"
  [ $bad = 0 ] || status=1
}

if [ "${QUAL_FIXTURES_SERVICE_COMPILE_ONLY:-}" != 1 ]; then
  step aa 0 "$nvrtc" "$nvrtc" "$example" "" "" --
  step aa_sessions1 0 "$nvrtc" "$nvrtc" "$example" "" "" -- --sessions 1
  step miscompile 2 "$nvrtc" "$shim" "$example" wrong_output "expected" --
  step diff_aa 0 "$nvrtc" "$nvrtc" "$diff_dir" "" "" --
  step diff_miscompile 2 "$nvrtc" "$shim" "$diff_dir" wrong_output "the baseline's output" --
fi
service_step
note "fixtures_user: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
