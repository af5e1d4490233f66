#!/bin/sh
# A stand-in for qual-run in quald's unit tests (tests/unit/daemon/test_jobs.c).
# Takes qual-run's command line (options, --, BASELINE CANDIDATE) and behaves
# as the name of the candidate's folder says: ok, slow, crash, hang, trap,
# noverdict, fail2, candfail, compcrash, compkilled, compnoreport, compfailmsg, usage, garbage,
# longline, partial, cutoff, after, linger, foreign, forged. Its lines are schema 3, as qual-run
# writes them: every error line has its "code".
# $FAKE_DIR (when set) gets one folder per slot while a job runs there, so a
# second job in the same slot is caught (it prints an error line and exits).
. "$(dirname "$0")/args_fd.sh"
dev=none
for a in "$@"; do
  case "$a" in
    --device=*) dev=${a#--device=} ;;
    --compile-only|--compile-only-because=*) [ "$dev" = none ] && dev=cpu ;;
  esac
done
while [ $# -gt 2 ]; do
  [ "$1" = "--" ] && { shift; break; }
  # The pins (quald's --*-real-path, --*-sha256) and the artifact cache
  # (--cache=STATE/cache, --no-cache: gate_artifact_cache checks it with the
  # real qual-run) are not echoed: the start line's length is what the log
  # limit tests measure.
  case "$1" in
    --baseline-real-path=*|--candidate-real-path=*|--baseline-sha256=*|--candidate-sha256=*) ;;
    --cache=*|--no-cache) ;;
    # The device's calibration (quald's --calibration=FILE, or
    # --no-calibration-because=WHY) is not echoed either.
    --calibration=*|--no-calibration-because=*) ;;
    *) args="$args $1" ;;
  esac
  shift
done
cand=$2
kind=$(basename "$(dirname "$cand")")

release() {
  [ -n "$FAKE_DIR" ] && rmdir "$FAKE_DIR/slot-$dev" 2>/dev/null
}
if [ -n "$FAKE_DIR" ]; then
  if ! mkdir "$FAKE_DIR/slot-$dev" 2>/dev/null; then
    echo '{"type":"error","stage":"setup","code":"internal","arm":null,"case":null,"message":"slot busy"}'
    exit 3
  fi
  # A kind that dies by a signal releases the slot first.
  trap release EXIT
  trap 'release; exit 143' TERM
  trap 'release; exit 138' USR1 # the job time limit (QUAL_SIGNAL_TIME_LIMIT)
fi

# Every line has the fields its type requires (quald refuses one that lacks
# them: lines_check()); "device" is a plain string here, which the tests read.
start() {
  echo "{\"type\":\"start\",\"schema_version\":3,\"tool\":\"fake\",\"version\":\"0\",\"time\":\"2026-01-01T00:00:00Z\",\"timed\":false,\"arch\":\"sm_90\",\"baseline\":{},\"candidate\":{},\"settings\":{},\"device\":\"$dev\",\"args\":\"$args\",\"p\":0.10000000000000000555}"
}
body() {
  echo '{"type":"case","case":"gemm_f16-256x512x256","family":"gemm_f16","kernel":"k","baseline":{},"candidate":{},"identical_code":false,"tolerance":0,"timed":false,"replays":32}'
  echo '{"type":"pair","case":"gemm_f16-256x512x256","pair":0,"order":"baseline_first","baseline_ns":1.5,"candidate_ns":1.25}'
  echo '{"type":"case_verdict","case":"gemm_f16-256x512x256","verdict":"equivalent","identical_code":false,"n":1}'
}
verdict() {
  echo '{"type":"verdict","verdict":"neutral","timed":true,"message":"fake"}'
}

case "$kind" in
ok) start; body; verdict ;;
slow) start; sleep 0.4; body; sleep 0.4; verdict ;;
crash) start; release; kill -s SEGV $$ ;;
hang) start; sleep 100 ;;
trap) release; trap '' TERM; start; sleep 100 ;;
noverdict) start; echo "qual-run: something broke" >&2; exit 3 ;;
fail2) start; exit 2 ;;
candfail)
  start
  echo '{"type":"error","stage":"check","code":"wrong_output","arm":"candidate","case":"gemm_f16-256x512x256","message":"wrong"}'
  release; kill -s SEGV $$ ;;
# The candidate's compiler crashed, by its code, in words that say nothing
# of a crash; then the worker ends without a verdict.
compcrash)
  start
  echo '{"type":"error","stage":"compile","code":"compile_crashed","arm":"candidate","case":"gemm_f16-256x512x256","message":"compiler gave up on it"}'
  exit 3 ;;
# A compiler child killed by a signal another process sent (compile_killed,
# arm null): no arm's doing, no crash; then the worker ends without a verdict.
compkilled)
  start
  echo '{"type":"error","stage":"compile","code":"compile_killed","arm":null,"case":"gemm_f16-256x512x256","message":"compiler '"'"'/x'"'"' was killed by signal SIGSEGV compiling it, a signal it did not raise itself (sent by another process): not a crash of the library'"'"'s"}'
  exit 3 ;;
# The candidate's compiler exited without its report (compile_no_report,
# in words that read like a crash): not a crash, no strike.
compnoreport)
  start
  echo '{"type":"error","stage":"compile","code":"compile_no_report","arm":"candidate","case":"gemm_f16-256x512x256","message":"compiler '"'"'/x'"'"' crashed: exited with status 3 without reporting"}'
  exit 3 ;;
# A candidate's compile that failed, in words that read like a crash.
compfailmsg)
  start
  echo '{"type":"error","stage":"compile","code":"compile_failed","arm":"candidate","case":"gemm_f16-256x512x256","message":"compiler '"'"'/x'"'"' crashed: killed by signal SIGSEGV (Segmentation fault)"}'
  exit 3 ;;
usage)
  echo '{"type":"error","stage":"setup","code":"usage","arm":"candidate","case":null,"message":"gone"}'
  echo "qual-run: unknown case 'nope-1'" >&2; exit 4 ;;
garbage) start; echo 'this is not json'; echo '[1,2]'; body; verdict ;;
longline) start; release; head -c 1100000 /dev/zero | tr '\0' 'a'; echo; verdict ;;
partial) start; printf '{"type":"verdict","verdict":"neutral","timed":false}' ;;
cutoff) start; printf '{"type":"verdict","verdict":"neutral","timed":false,"cases":[' ;;
linger) start; verdict; sleep 100 ;;
# Objects that are not the engine's lines (a case without its fields; an
# unknown type) among its own: refused; the job's verdict stands.
foreign) start; echo '{"type":"case","case":"x"}'; echo '{"type":"bogus"}'; body; verdict ;;
# A verdict line that is not the engine's, then a well-formed improvement
# and a clean exit: neither verdict is taken, the job cannot pass.
forged)
  start; echo '{"type":"verdict","verdict":"improvement","timed":"yes"}'; body
  echo '{"type":"verdict","verdict":"improvement","timed":true}'; exit 0 ;;
after) start; verdict; echo '{"type":"pair","late":true}'; verdict ;;
*) echo "fake_worker: unknown kind '$kind'" >&2; exit 9 ;;
esac
