"""Reads a quald job log (state-dir/jobs/ID/log.jsonl) the way daemon/store.c
does, written again from daemon/store.h's description so that the tests do
not take the daemon's word for its own format.

Each record is the job's line L (a JSON object) with one member spliced in
before its closing brace, then a newline:

    L without its last '}'  ,"_check":"<16 hex digits>"}  \\n

the digits being the first 16 of sha256(L).hexdigest(). Records are
checked one by one: a record is bad when it is over-long (RECORD_MAX), its
check does not match or is malformed, or it has no check after one that
had; records without a check before any checked one (a log from before
checks) are taken when each is a JSON object. A run of bad records with a
good one after it is lost (skipped; named in lost); the valid prefix ends
after the last good record, and what follows (bad records, or a record
without its newline) is the torn tail."""
import hashlib
import json

KEY = b',"_check":"'
HEX = 16
SUFFIX = len(KEY) + HEX + 2  # from the member's comma to the closing brace
LINES_MAX = 1 << 20  # common/lines.h
RECORD_MAX = LINES_MAX + 256 + SUFFIX + 1  # daemon/store.c, its newline counted


def check_of(line):
    """The check of line (bytes), as bytes."""
    return hashlib.sha256(line).hexdigest()[:HEX].encode()


class Log:
    """lines: the valid prefix's lines (bytes, as appended: check removed);
    good_bytes: its length; torn_bytes: the rest of the file; why: why the
    prefix ends there (None when torn_bytes is 0); unchecked: records of the
    prefix without a check; lost: (offset, bytes, records, why) of each run
    of bad records inside the prefix."""

    def __init__(self, lines, good_bytes, torn_bytes, why, unchecked, lost=()):
        self.lines = lines
        self.good_bytes = good_bytes
        self.torn_bytes = torn_bytes
        self.why = why
        self.unchecked = unchecked
        self.lost = list(lost)


def _bad(rec, seen_checked):
    """(why, line, checked): why is None for a good record."""
    n = len(rec)
    if n + 1 > RECORD_MAX:
        return "over-long record", None, False
    tail = rec[n - SUFFIX:]
    # Any 6-byte key with a 16-byte string value at the end is held to the
    # check, so that a changed byte in "_check" is caught too.
    if (n >= SUFFIX + 2 and tail[:2] == b',"' and tail[8:11] == b'":"'
            and tail.endswith(b'"}')):
        if tail[:len(KEY)] != KEY:
            return "malformed check", None, False
        line = rec[:n - SUFFIX] + b"}"
        if check_of(line) != rec[n - 2 - HEX:n - 2]:
            return "check mismatch", None, False
        return None, line, True
    if b'"_check"' in rec:
        return "malformed check", None, False
    if seen_checked:
        return "record without a check after checked ones", None, False
    try:
        ok = isinstance(json.loads(rec), dict)
    except ValueError:
        ok = False
    if not ok:
        return "record without a check that is not a json object", None, False
    return None, rec, False


def parse(data):
    """A Log of the bytes data."""
    lines, lost, pos, good, seen_checked, unchecked = [], [], 0, 0, False, 0
    run_at, run_n, run_why = None, 0, None
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            if run_at is None:
                run_at = pos
                run_why = ("incomplete record" if len(data) - pos < RECORD_MAX
                           else "incomplete over-long record")
            break
        why, line, checked = _bad(data[pos:nl], seen_checked)
        if why:
            if run_at is None:
                run_at, run_why = pos, why
            run_n += 1
            pos = nl + 1
            continue
        if run_at is not None:
            lost.append((run_at, pos - run_at, run_n, run_why))
            run_at, run_n = None, 0
        seen_checked |= checked
        unchecked += not checked
        lines.append(line)
        pos = good = nl + 1
    torn = len(data) - good
    return Log(lines, good, torn, run_why if torn else None, unchecked, lost)


def read(path):
    """A Log of the file at path."""
    with open(path, "rb") as f:
        return parse(f.read())


def record(line):
    """The record the store writes for line (bytes), with its newline."""
    return line[:-1] + KEY + check_of(line) + b'"}\n'
