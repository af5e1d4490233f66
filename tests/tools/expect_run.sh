#!/usr/bin/env bash
# usage: expect_run.sh EXIT OUTFILE [--expect-stderr S]... [validate_lines.py options...] -- COMMAND...
# Runs COMMAND with stdout to OUTFILE (stderr shown), asserts its exit status
# is EXIT and that stderr holds each S given, then validates every line of
# OUTFILE against the schema, passing the other options on to
# validate_lines.py ("-" as the only one skips validation, for usage errors
# that print no verdict).
set -u
want=$1 out=$2
shift 2
opts=() stderr_want=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = "--expect-stderr" ]; then
    stderr_want+=("$2")
    shift 2
    continue
  fi
  opts+=("$1")
  shift
done
shift
here=$(cd "$(dirname "$0")" && pwd)
errfile=$out.stderr
# Each run with an artifact cache of its own, new: every compile it asks
# for is made, and nothing is written under the user's home.
rm -rf "$out.cache"
export XDG_CACHE_HOME=$out.cache
"$@" >"$out" 2>"$errfile"
got=$?
cat "$errfile" >&2
if [ "$got" != "$want" ]; then
  echo "FAIL: exit status $got, expected $want: $*" >&2
  tail -n 5 "$out" >&2
  exit 1
fi
for s in "${stderr_want[@]+"${stderr_want[@]}"}"; do
  if ! grep -qF -- "$s" "$errfile"; then
    echo "FAIL: stderr lacks '$s': $*" >&2
    exit 1
  fi
done
if [ "${opts[*]:-}" = "-" ]; then
  echo "ok: exit $got"
  exit 0
fi
exec /usr/bin/python3 "$here/validate_lines.py" "$here/../../docs/schema/lines.schema.json" "$out" "${opts[@]}"
