"""Reads a quald job log (state-dir/jobs/ID/log.jsonl) the way daemon/store.c
does, written again from daemon/store.h's description so that the tests do
not take the daemon's word for its own format.

Each record is the job's line L (a JSON object) with one member spliced in
before its closing brace, then a newline:

    L without its last '}'  ,"_check":"<16 hex digits>"}  \\n

the digits being the first 16 of sha256(L).hexdigest(). The valid prefix
ends at the first record that is incomplete (no newline), whose check does
not match or is malformed, or that has no check after one that had; records
without a check before any checked one (a log from before checks) are taken
when each is a JSON object."""
import hashlib
import json

KEY = b',"_check":"'
HEX = 16
SUFFIX = len(KEY) + HEX + 2  # from the member's comma to the closing brace


def check_of(line):
    """The check of line (bytes), as bytes."""
    return hashlib.sha256(line).hexdigest()[:HEX].encode()


class Log:
    """lines: the valid prefix's lines (bytes, as appended: check removed);
    good_bytes: its length; torn_bytes: the rest of the file; why: why the
    prefix ends there (None when torn_bytes is 0); unchecked: records of the
    prefix without a check."""

    def __init__(self, lines, good_bytes, torn_bytes, why, unchecked):
        self.lines = lines
        self.good_bytes = good_bytes
        self.torn_bytes = torn_bytes
        self.why = why
        self.unchecked = unchecked


def parse(data):
    """A Log of the bytes data."""
    lines, pos, seen_checked, unchecked, why = [], 0, False, 0, None
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            why = "incomplete record"
            break
        rec = data[pos:nl]
        n = len(rec)
        tail = rec[n - SUFFIX:]
        # Any 6-byte key with a 16-byte string value at the end is held to
        # the check, so that a changed byte in "_check" is caught too.
        if (n >= SUFFIX + 2 and tail[:2] == b',"' and tail[8:11] == b'":"'
                and tail.endswith(b'"}')):
            if tail[:len(KEY)] != KEY:
                why = "malformed check"
                break
            line = rec[:n - SUFFIX] + b"}"
            if check_of(line) != rec[n - 2 - HEX:n - 2]:
                why = "check mismatch"
                break
            seen_checked = True
        elif b'"_check"' in rec:
            why = "malformed check"
            break
        elif seen_checked:
            why = "record without a check after checked ones"
            break
        else:
            try:
                ok = isinstance(json.loads(rec), dict)
            except ValueError:
                ok = False
            if not ok:
                why = "record without a check that is not a json object"
                break
            line = rec
            unchecked += 1
        lines.append(line)
        pos = nl + 1
    return Log(lines, pos, len(data) - pos, why, unchecked)


def read(path):
    """A Log of the file at path."""
    with open(path, "rb") as f:
        return parse(f.read())


def record(line):
    """The record the store writes for line (bytes), with its newline."""
    return line[:-1] + KEY + check_of(line) + b'"}\n'
