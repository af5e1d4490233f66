#!/bin/sh
# A stand-in for qual-compile identify in quald's unit tests: writes the
# result file the way qual-compile does (rtc.h: key=value lines ending in
# end=1, renamed into place). The library's folder name picks the answer:
# helpernoabi (neither ABI), helpercrash (dies by SIGSEGV before reporting,
# its own crash), helperkilled (dies by SIGSEGV without the note: another
# process's signal),
# helperhang (never finishes), hiprtc; anything else is nvrtc 13.0.
[ "$1" = identify ] || { echo "fake_compile: only identify" >&2; exit 2; }
shift
# rtc.c gives the arguments after the command in a file (rtc.h:
# RTC__ARGS_ENV), NUL-terminated, before any on the command line.
if [ -n "$QUAL_COMPILE_ARGS" ]; then
  eval "set -- $(tr '\0' '\n' <"$QUAL_COMPILE_ARGS" | sed "s/'/'\\\\''/g; s/.*/'&'/" | tr '\n' ' ') \"\$@\""
fi
while [ $# -gt 1 ]; do
  case "$1" in
    --lib) lib=$2 ;;
    --lib-fd) lib=/proc/self/fd/$2 ;;
    --out) out=$2 ;;
    --label) label=$2 ;;
  esac
  shift 2
done
# rtc.c gives the --out folder in the environment (rtc.h: RTC__OUT_ENV).
[ -n "$out" ] || out=$QUAL_COMPILE_OUT
[ -n "$label" ] || label=$lib
kind=$(basename "$(dirname "$label")")
case "$kind" in
helpernoabi)
  printf 'status=-6\nmessage=cannot load compiler '"'"'%s'"'"': no nvrtc or hiprtc entry points\n' "$label" >"$out/result.tmp" ;;
helpercrash) echo "fake_compile: about to crash" >&2
  # The fault note qual-compile's handler writes for a crash of its own
  # (rtc.h: RTC__FAULT_FILE).
  echo "self 11" >"$out/fault.txt"; kill -s SEGV $$ ;;
helperkilled) kill -s SEGV $$ ;;
helperhang) sleep 100 ;;
hiprtc) printf 'status=0\nmessage=\nabi=hiprtc\nversion=5.2\n' >"$out/result.tmp" ;;
*) printf 'status=0\nmessage=\nabi=nvrtc\nversion=13.0\n' >"$out/result.tmp" ;;
esac
printf 'compile_ms=0.000\nlog_size=0\nlog_kept=0\ncode_size=0\nend=1\n' >>"$out/result.tmp"
mv "$out/result.tmp" "$out/result.txt"
