#!/usr/bin/env bash
# The seven GPU suites in one call on the device machine, from the repository
# root after scripts/pack-gpu.sh (carry .carry):
#
#     bash tests/gpu/suites.sh OUTDIR [BUILD]
#
# run.sh (smoke, A/A, alt, slow, miscompile), service.sh (through quald and
# qualctl), faults.sh (a faulting and a hanging kernel), service_faults.sh
# (the same through quald) and devices_auto.sh (quald finds the GPU by
# itself and times a job) and fixtures.sh (every case's oracle and code with
# nvrtc 13.0 against itself and against each real nvrtc build unpacked from
# .carry-nvrtc, when scripts/fetch-nvrtc.sh packed some, and the SASS of every
# case: wgmma cases must show HGMMA/IGMMA) and fixtures_user.sh (the example
# user fixture examples/fixtures/rmsnorm_f16 through qual-run, against the
# miscompiling shim, as a differential check, and through quald and qualctl
# as one job with the built-in cases: nvrtc 13.0 against alt, neutral), each
# into OUTDIR/<suite>/, each under its own time limit; then nvrtc against
# alt with --sessions 1 and with --one-load (compiles started from the
# process that holds the GPU). Prints every suite's summary and one line per suite last; exit
# status 0 only when all seven passed. The lines of qual-run's runs (run/,
# faults/) are validated against docs/schema/lines.schema.json where python3
# has jsonschema.
set -u
out=${1:?usage: suites.sh OUTDIR [BUILD]}
build=${2:-.carry}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
status=0
results=()
# QUAL_GPU_SUITES: the suites to run, by name (default: all of them), and
# QUAL_GPU_IN_PROCESS=0 to leave out the in-process runs below, for a call
# that has less device time than the whole set needs.
for suite in ${QUAL_GPU_SUITES:-run service faults service_faults devices_auto fixtures fixtures_user}; do
  start=$SECONDS
  timeout 240 bash "$here/$suite.sh" "$out/$suite" "$build" >"$out/$suite.log" 2>&1
  rc=$?
  echo "==== $suite (exit $rc, $((SECONDS - start)) s)"
  if [ -f "$out/$suite/summary.txt" ]; then cat "$out/$suite/summary.txt"; else tail -n 30 "$out/$suite.log"; fi
  results+=("$suite: $([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)") in $((SECONDS - start)) s")
  [ $rc = 0 ] || status=1
done
# Compiles started (fork and exec, common/child.c) from a process that holds
# the GPU: one session, and the old one-load judgement. Both must pass.
mkdir -p "$out/in_process"
for mode in "--sessions 1" "--one-load"; do
  [ "${QUAL_GPU_IN_PROCESS:-1}" = 0 ] && break
  name=$(echo "$mode" | tr -d ' -')
  start=$SECONDS
  # shellcheck disable=SC2086
  timeout 120 "$build/bin/qual-run" /usr/local/cuda/lib64/libnvrtc.so.13 \
    /usr/local/cuda/lib64/libnvrtc.alt.so.13 $mode >"$out/in_process/$name.jsonl" \
    2>"$out/in_process/$name.err"
  rc=$?
  v=$(grep -o '"type":"verdict","verdict":"[a-z_]*"' "$out/in_process/$name.jsonl" | tail -n 1)
  echo "==== in_process $mode: exit $rc, $v, $((SECONDS - start)) s"
  results+=("in_process $mode: $([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)") $v")
  [ $rc = 0 ] || status=1
done
if python3 -c 'import jsonschema' 2>/dev/null; then
  n=0; bad=0
  while IFS= read -r f; do
    n=$((n + 1))
    python3 "$here/../tools/validate_lines.py" "$here/../../docs/schema/lines.schema.json" "$f" \
      >/dev/null 2>&1 || { bad=$((bad + 1)); echo "schema: $f does not validate"; }
  done < <(find "$out/run" "$out/faults" -name '*.jsonl' -size +0 2>/dev/null)
  results+=("schema: $((n - bad)) of $n line files validate")
  [ $bad = 0 ] || status=1
fi
echo "==== summary"
printf '%s\n' "${results[@]}" | tee "$out/summary.txt"
# The device tool brings back few files: everything also goes in one tarball.
tar -czf "$out/suites.tar.gz" -C "$out" --exclude suites.tar.gz . 2>/dev/null
exit $status
