#!/bin/sh
# expect_health.sh QUAL_RUN: `qual-run --health` on a machine without a GPU
# must print one health line with ok false and a message starting "no device",
# and exit 3. Where a device is present (ok true, exit 0) the check does not
# apply: exit 77, which ctest reports as skipped.
out=$("$1" --health 2>/dev/null)
status=$?
printf '%s\n' "$out"
exec /usr/bin/python3 - "$status" "$out" <<'PY'
import json, sys
status, out = int(sys.argv[1]), sys.argv[2]
lines = out.splitlines()
if len(lines) != 1:
    sys.exit(f"expected one line, got {len(lines)}")
d = json.loads(lines[0])
for k in ("type", "ok", "device", "kernel", "hung", "limit_ms", "ms", "message"):
    if k not in d:
        sys.exit(f"health line lacks {k!r}")
if d["type"] != "health":
    sys.exit(f"type is {d['type']!r}")
if d["ok"] is True and status == 0:
    print("a device is present: skipped")
    sys.exit(77)
if d["ok"] is not False or status != 3:
    sys.exit(f"want ok false and exit 3, got ok {d['ok']} and exit {status}")
if not d["message"].startswith("no device: ") or d["device"] is not None:
    sys.exit(f"want 'no device: ...' and device null: {d}")
print("ok: no device, exit 3")
PY
