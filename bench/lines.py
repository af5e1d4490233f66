"""What bench/'s scripts read from qual-run's lines, in one place."""
import io
import json
import os
import tarfile


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


def read_evidence(path, who):
    """(jobs.txt rows, {job name: its lines}) of one tests/gpu/verdicts.sh
    OUTDIR or its tarball (docs/gpu-runs/'s callN-planted.tar.gz); who, the
    script, names it in the refusals."""
    files = {}
    if os.path.isdir(path):
        for root, _, names in os.walk(path):
            for n in names:
                if n == "jobs.txt" or n.endswith(".jsonl"):
                    with open(os.path.join(root, n)) as f:
                        files[n] = f.read()
    else:
        with tarfile.open(path) as tar:
            for m in tar.getmembers():
                n = os.path.basename(m.name)
                if m.isfile() and (n == "jobs.txt" or n.endswith(".jsonl")):
                    files[n] = tar.extractfile(m).read().decode()
    if "jobs.txt" not in files:
        raise SystemExit(f"{who}: {path}: no jobs.txt (not tests/gpu/verdicts.sh output)")
    rows = [t.split() for t in io.StringIO(files["jobs.txt"]) if t.strip()]
    for i, r in enumerate(rows):
        if len(r) != 4 or not r[2].lstrip("-").isdigit():
            raise SystemExit(f"{who}: {path}: jobs.txt row {i + 1} is not "
                             f"'PART NAME STATUS WALL_MS': {' '.join(r)!r}")
    return rows, {n[:-len(".jsonl")]: parse(t) for n, t in files.items() if n != "jobs.txt"}
