#!/usr/bin/env python3
"""Follows one job on quald's HTTP endpoint while it runs, as the dashboard's
job page does, and keeps what it saw (tests/gpu/series.sh, on the GPU
machine, which has no browser):

    capture_live.py BASE JOB OUTDIR

OUTDIR/live-JOB.tsv: every server-sent event of /api/jobs/JOB/events with the
seconds since the stream opened (SECONDS<TAB>ID<TAB>EVENT<TAB>TYPE of the
line); OUTDIR/live-JOB-mid.json: /api/jobs/JOB fetched once the job has
timed pairs (a page loaded mid-job sees that); OUTDIR/live-JOB-page.html: the
job page itself. Prints one summary line. Exit 0 when the stream ended with
its "end" event after the verdict line."""
import json
import sys
import time
import urllib.request


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def main():
    base, job, out = sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3]
    t0 = time.monotonic()
    with open(f"{out}/live-{job}-page.html", "wb") as f:
        f.write(get(f"{base}/jobs/{job}"))
    r = urllib.request.urlopen(f"{base}/api/jobs/{job}/events", timeout=600)
    ev = {"id": "", "event": "message", "data": ""}
    pairs = lines = 0
    mid = False
    ended = verdict = False
    first_pair_s = None
    with open(f"{out}/live-{job}.tsv", "w") as tsv:
        for raw in r:
            line = raw.decode().rstrip("\n")
            if line.startswith(":"):
                continue
            if line:
                k, _, v = line.partition(":")
                ev[k] = v[1:] if v.startswith(" ") else v
                continue
            t = time.monotonic() - t0
            kind = ""
            if ev["event"] == "message" and ev["data"]:
                o = json.loads(ev["data"])
                kind = o.get("type", "")
                lines += 1
                if kind == "pair":
                    pairs += 1
                    if first_pair_s is None:
                        first_pair_s = t
                if kind == "verdict":
                    verdict = True
            tsv.write(f"{t:.3f}\t{ev['id']}\t{ev['event']}\t{kind}\n")
            if ev["event"] == "end":
                ended = True
                break
            if pairs >= 30 and not mid:
                mid = True
                with open(f"{out}/live-{job}-mid.json", "wb") as f:
                    f.write(get(f"{base}/api/jobs/{job}"))
            ev = {"id": "", "event": "message", "data": ""}
    print(f"live {job}: {lines} lines in {time.monotonic() - t0:.2f} s, {pairs} pairs "
          f"(first at {first_pair_s if first_pair_s is None else round(first_pair_s, 2)} s), "
          f"mid-job snapshot {'taken' if mid else 'not taken'}, "
          f"{'ended after the verdict' if ended and verdict else 'DID NOT END PROPERLY'}")
    return 0 if ended and verdict else 1


if __name__ == "__main__":
    sys.exit(main())
