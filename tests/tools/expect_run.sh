#!/usr/bin/env bash
# usage: expect_run.sh EXIT OUTFILE [validate_lines.py options...] -- COMMAND...
# Runs COMMAND with stdout to OUTFILE (stderr shown), asserts its exit status
# is EXIT, then validates every line of OUTFILE against the schema, passing
# the options on to validate_lines.py ("-" as the only option skips
# validation, for usage errors that print no verdict).
set -u
want=$1 out=$2
shift 2
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
shift
here=$(cd "$(dirname "$0")" && pwd)
"$@" >"$out"
got=$?
if [ "$got" != "$want" ]; then
  echo "FAIL: exit status $got, expected $want: $*" >&2
  tail -n 5 "$out" >&2
  exit 1
fi
if [ "${opts[*]:-}" = "-" ]; then
  echo "ok: exit $got"
  exit 0
fi
exec /usr/bin/python3 "$here/validate_lines.py" "$here/../../docs/schema/lines.schema.json" "$out" "${opts[@]}"
