"""What bench/'s scripts read from qual-run's lines, in one place."""
import json


def parse(text):
    """The JSON objects of text's lines (qual-run output or a job's log);
    blank lines and lines that are not JSON (a torn last line) are left
    out."""
    out = []
    for t in text.splitlines():
        t = t.strip()
        if t:
            try:
                out.append(json.loads(t))
            except ValueError:
                pass
    return out


def attempt(d):
    """The block attempt a pair or block line belongs to: (case, session,
    block, retake), absent fields as qual-run leaves them out."""
    return (d.get("case"), d.get("session", 0), d.get("block", 0), d.get("retake", 0))


def timed_pairs(lines):
    """The pair lines the verdict counts, per case: those of a block attempt
    whose block line says throttled are left out, as the judge leaves them
    out (docs/verdicts.md, "Throttling")."""
    throttled = {attempt(d) for d in lines if d.get("type") == "block" and d.get("throttled")}
    pairs = {}
    for d in lines:
        if d.get("type") == "pair" and attempt(d) not in throttled:
            pairs.setdefault(d["case"], []).append(d)
    return pairs
