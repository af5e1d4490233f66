"""A job's settings at both doors: qual-run's command line and quald's
submit (through qualctl) refuse the same values with the same message and
accept the same values (issue 27; proto/settings.h).

usage: settings_doors_test.py --quald Q --qualctl C --worker W --compile-helper H
                              --nvrtc LIB --nvrtc-alt LIB

The table is read from the program (qual-run --settings-table), never
written here: for every number setting, the values just outside each bound
(and inside (lo, floor) where a floor is) must be refused, and the values
at each bound accepted; for every word setting each word accepted and a
non-word refused; for every list its limits (an entry too long, an empty
one, one entry too many, the JSON bytes of an arm's options) just outside
refused and within accepted; plus the issue's values: max_seconds 0.0005,
margin 1e-320 and 64 options of non-ASCII text, at the limit (refused) and
under it (accepted, with every line of the job under the relay's 1 MiB).

Each value is given to a compile-only qual-run of one case, and to a real
quald (compile-only slots, a temporary socket and state folder) by qualctl
submit; a door's outcome is its usage message (a refusal at the door, or
the engine's usage error line of an accepted job) or "ran". Both doors'
outcomes must be the same; a value within bounds must not be refused at
quald's door, and a value outside must be. Exits 0 when every check holds,
1 with the failures otherwise."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from service_test import Failure, Quald, serving  # noqa: E402

CASE = "gemm_f16-256x512x256"
LINES_MAX = 1 << 20   # the relay's limit on a line (common/lines.h)
JOB_S = 60


def run(argv, timeout=JOB_S, **kw):
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, **kw)


def number_text(f, x):
    return str(int(x)) if f["kind"] in ("int", "i64") else repr(float(x))


def number_values(f):
    """(option values, in range) of number field f: each bound, just
    inside and just outside, and the floor's gap."""
    lo, hi, floor = f["lo"], f["hi"], f["floor"]
    if f["kind"] in ("int", "i64"):
        return [(lo - 1, False), (lo, True), (hi, True), (hi + 1, False)]

    def eps(x):
        return abs(x) * 1e-6 if x else 1e-9
    vals = [(lo, not f["lo_open"]),
            (lo - eps(lo), False), (hi, not f["hi_open"]), (hi + eps(hi), False)]
    if floor > lo:
        vals += [(floor, True), (floor * 0.5, False), (floor * (1 - 1e-6), False)]
    elif f["lo_open"]:
        vals.append((lo + eps(lo), True))
    return vals


def cases_of(table):
    """(name, field key, [option args], in range, extra) for every value
    walked. extra: more options the value needs besides (max_pairs at its
    least needs pairs no greater)."""
    out = []
    by_key = {f["key"]: f for f in table}
    for f in table:
        if f["doors"] != "both" or f["kind"] == "bool":
            continue
        opt = "--" + f["option"]
        key = f["key"]
        extra = ["--pairs", "30"] if key == "max_pairs" else []
        if f["kind"] in ("int", "i64", "real"):
            for x, ok in number_values(f):
                t = number_text(f, x)
                out.append((f"{key} {t}", key, [f"{opt}={t}"], ok, extra))
            out.append((f"{key} not a number", key, [f"{opt}=x1"], False, extra))
        elif f["kind"] == "word":
            for w in f["words"]:
                out.append((f"{key} {w}", key, [f"{opt}={w}"], True, extra))
            out.append((f"{key} NOPE", key, [f"{opt}=NOPE"], False, extra))
        elif f["kind"] == "list":
            n, length = f["max_n"], f["max_len"]
            entry = CASE if key == "cases" else "/nonexistent/x" if key == "fixtures" \
                else "-DQUAL_DOORS=1"
            long_entry = ("/" if key == "fixtures" else "-D") + "x" * (length - 1)
            if key != "fixtures":
                out.append((f"{key} one", key, [f"{opt}={entry}"], True, extra))
            if key == "baseline_options" or key == "candidate_options":
                out.append((f"{key} {length} bytes", key, [f"{opt}={long_entry[:length]}"],
                            True, extra))
            out.append((f"{key} {length + 1} bytes", key, [f"{opt}={long_entry}x"], False,
                        extra))
            out.append((f"{key} {n + 1} entries", key, [f"{opt}={entry}"] * (n + 1), False,
                        extra))
            # Well over the count, and an empty entry among too many: the
            # doors must not differ by when they count (a request's whole
            # array against qual-run's options one at a time).
            out.append((f"{key} {n + 6} entries", key, [f"{opt}={entry}"] * (n + 6), False,
                        extra))
            out.append((f"{key} an empty second entry of {n + 2}", key,
                        [f"{opt}={entry}", f"{opt}="] + [f"{opt}={entry}"] * n, False, extra))
            if not f["allow_empty"] or key != "cases":
                out.append((f"{key} an empty entry", key, [f"{opt}="], False, extra))
            if f["max_json"]:
                # 64 options of non-ASCII text: each byte of é counts 3 as
                # JSON escaped the longest way, so 6 a character, plus the
                # quotes, the comma and "-DQ=" (settings_json_bytes).
                per = f["max_json"] // n - 7
                k_in, k_out = per // 6, per // 6 + 2
                for k, ok in ((k_in, True), (k_out, False), ((length - 4) // 2, False)):
                    out.append((f"{key} {n} non-ascii options of {4 + 2 * k} bytes", key,
                                [f"{opt}=-DQ=" + "é" * k] * n, ok, extra))
    # The values, by name, whatever the walk above made of them.
    for key, text in (("max_seconds", "0.0005"), ("margin", "1e-320")):
        f = by_key[key]
        out.append((f"{key} {text} (issue 27)", key, [f"--{f['option']}={text}"], False, []))
    return out


def usage_of(lines):
    """The message of a usage error line among lines (JSON texts), or None."""
    for text in lines:
        try:
            o = json.loads(text)
        except ValueError:
            continue
        if o.get("type") == "error" and o.get("code") == "usage":
            return o.get("message")
    return None


def run_door(args, cache, opts, case_given):
    """qual-run's outcome: (usage message or "ran", longest line)."""
    argv = [args.worker, args.nvrtc, args.nvrtc_alt, "--compile-only", "--format=json",
            "--cache", cache, *([] if case_given else ["--case", CASE]), *opts]
    r = run(argv)
    lines = r.stdout.splitlines()
    msg = usage_of(lines)
    if r.returncode == 4 and msg is None:
        msg = "usage exit without a line: " + r.stderr.strip()
    return msg or "ran", max((len(t.encode()) + 1 for t in lines), default=0)


def quald_door(args, d, opts, case_given):
    """quald's outcome through qualctl submit: (usage message or "ran",
    refused at the door, longest line)."""
    r = d.ctl("submit", args.nvrtc, args.nvrtc_alt, "--compile-only", "--json",
              *([] if case_given else ["--case", CASE]), *opts, timeout=JOB_S)
    lines = r.stdout.splitlines()
    if not lines:
        return r.stderr.strip(), True, 0
    return usage_of(lines) or "ran", False, max(len(t.encode()) + 1 for t in lines)


def main():
    ap = argparse.ArgumentParser()
    for name in ("quald", "qualctl", "worker", "compile-helper", "nvrtc", "nvrtc-alt"):
        ap.add_argument("--" + name, required=True)
    args = ap.parse_args()
    table = json.loads(run([args.worker, "--settings-table"]).stdout)
    walked = cases_of(table)
    root = tempfile.mkdtemp(prefix="qual-doors-")
    failures = []
    try:
        cache = os.path.join(root, "cache")
        d = Quald(args, os.path.join(root, "quald"), slots=2)
        with serving(d):
            for name, key, opts, ok, extra in walked:
                given = key == "cases"
                mine = run_door(args, cache, extra + opts, given)
                theirs, refused, longest = quald_door(args, d, extra + opts, given)
                what = f"{name}: qual-run {mine[0][:160]!r}, quald {theirs[:160]!r}"
                # qualctl says more around a refusal at the door.
                same = mine[0] != "ran" and mine[0] in theirs if refused else \
                    mine[0] == theirs
                problems = []
                if not same:
                    problems.append("the doors differ")
                if ok == refused:
                    problems.append("refused" if refused else "accepted")
                if ok and theirs != "ran" and not (key == "mode" and
                                                   "applies to hiprtc" in theirs):
                    problems.append("an accepted value ended in a usage error")
                if max(mine[1], longest) > LINES_MAX:
                    problems.append(f"a line of {max(mine[1], longest)} bytes")
                if problems:
                    failures.append(f"{what}: {', '.join(problems)}")
                print(("FAIL " if problems else "ok   ") + what, flush=True)
    except Failure as e:
        failures.append(str(e))
    finally:
        if os.environ.get("QUAL_KEEP_TMP"):
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{len(walked)} values walked, {len(failures)} failed")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
