#!/usr/bin/env python3
"""Checks for tests/gpu/fixtures.sh.

  fixtures_check.py run FILE.jsonl [--identical]
      One qual-run's lines: every case must pass its oracle in both arms (a
      case line whose arms both have a max_abs_error, no error line naming
      the case, a case verdict other than fail, not_applicable or
      not_timed); with --identical, every case's code must be identical and
      the run's verdict neutral. Prints one line per case and the run's
      verdict; exit 0 when all held, 1 otherwise.
  fixtures_check.py sass DIR
      DIR/CASE.sass (cuobjdump --dump-sass output): per case, how many HGMMA,
      IGMMA, HMMA and IMMA instructions it holds. A case named *_wgmma* must
      show HGMMA or IGMMA. Exit 0 when it held for every wgmma case, 1
      otherwise (also when DIR holds no .sass at all)."""
import json
import os
import re
import sys

OPS = ("HGMMA", "IGMMA", "HMMA", "IMMA")


def check_run(path, identical):
    cases, errors, verdicts, job = {}, {}, {}, None
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{path}:{no}: not JSON: {e}")
                return 1
            t = d.get("type")
            if t == "case":
                cases[d["case"]] = d
            elif t == "error":
                errors.setdefault(d.get("case"), []).append(d.get("message", ""))
            elif t == "case_verdict":
                verdicts[d["case"]] = d
            elif t == "verdict":
                job = d.get("verdict")
    ok = bool(cases) and job is not None
    for name in verdicts:
        if name not in cases:
            cases[name] = {}
    for name, c in cases.items():
        v = verdicts.get(name, {}).get("verdict", "missing")
        errs = [
            arm for arm in ("baseline", "candidate")
            if not isinstance(c.get(arm, {}).get("max_abs_error"), (int, float))
        ]
        why = []
        if errs:
            why.append("no oracle check in " + " and ".join(errs))
        if name in errors:
            why.append("error: " + errors[name][0][:200])
        if v in ("fail", "not_applicable", "not_timed", "missing"):
            why.append("verdict " + v)
        if identical and c.get("identical_code") is not True:
            why.append("code differs")
        ok = ok and not why
        mae = "/".join(
            "%.3g" % c[arm]["max_abs_error"]
            if isinstance(c.get(arm, {}).get("max_abs_error"), (int, float)) else "-"
            for arm in ("baseline", "candidate"))
        r = verdicts.get(name, {}).get("ratio_median")
        print("  %-34s %-13s ratio %-7s max_abs_error %-17s regs %s/%s %s" % (
            name, v, "%.4f" % r if isinstance(r, (int, float)) else "-", mae,
            c.get("baseline", {}).get("registers", "-"),
            c.get("candidate", {}).get("registers", "-"),
            ("FAIL: " + "; ".join(why)) if why else "ok"))
    for e in errors.get(None, [])[:3]:
        print("  error: " + e[:300])
        ok = False
    if identical and job != "neutral":
        ok = False
    print("  run verdict %s: %s" % (job, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


def check_sass(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith(".sass"))
    ok = bool(files)
    for f in files:
        name = f[:-len(".sass")]
        text = open(os.path.join(folder, f), errors="replace").read()
        counts = {op: len(re.findall(r"\b%s\b" % op, text)) for op in OPS}
        wgmma = "_wgmma" in name
        good = not wgmma or counts["HGMMA"] + counts["IGMMA"] > 0
        ok = ok and good
        print("  %-44s %s%s" % (name, " ".join("%s %d" % (op, counts[op]) for op in OPS),
                                "" if good else "  FAIL: a wgmma case without HGMMA/IGMMA"))
    if not files:
        print("  no SASS dumped")
    return 0 if ok else 1


def main(argv):
    if len(argv) >= 2 and argv[0] == "run" and argv[2:] in ([], ["--identical"]):
        return check_run(argv[1], argv[2:] == ["--identical"])
    if len(argv) == 2 and argv[0] == "sass":
        return check_sass(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
