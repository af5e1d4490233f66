#!/usr/bin/python3
"""Validates qual JSON lines against docs/schema/lines.schema.json.

usage: validate_lines.py SCHEMA FILE [--expect-verdict V] [--expect-types t1,t2]
                         [--expect-error-substring S] [--expect-error-code C]
                         [--expect-case-verdict CASE=V]

Every line must be one JSON object valid under the schema; the stream must
start with a start line (or an error line for setup failures) and end with
exactly one verdict line. In a stream of schema 3 or later (its start line
says so; a stream of error lines alone is qual-run's refusal, of the schema
now written) every error line carries a "code". The --expect options add
assertions for tests.
Exits 1 with the line number and the reason on the first failure."""
import argparse
import json
import sys

import jsonschema


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("schema")
    ap.add_argument("file")
    ap.add_argument("--expect-verdict")
    ap.add_argument("--expect-types", default="")
    ap.add_argument("--expect-error-substring", action="append", default=[])
    ap.add_argument("--expect-error-code", action="append", default=[],
                    help="some error line carries this code")
    ap.add_argument("--expect-case-verdict", action="append", default=[])
    ap.add_argument("--expect-pairs", type=int)
    ap.add_argument("--expect-identical", choices=["all", "none"],
                    help="identical_code of every case line that was compiled "
                         "(applicable cases)")
    ap.add_argument("--expect-not-applicable", default=None,
                    help="comma-separated names: exactly these cases are not "
                         "applicable, in their case lines, case verdicts and "
                         "the verdict line (empty: none)")
    ap.add_argument("--no-verdict", action="store_true",
                    help="a run refused before it started: error lines only")
    ap.add_argument("--crashed", action="store_true",
                    help="a run whose process crashed: valid lines, no verdict")
    a = ap.parse_args()

    with open(a.schema) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.FormatChecker())
    lines = []
    with open(a.file) as f:
        for n, raw in enumerate(f, 1):
            try:
                obj = json.loads(raw)
            except ValueError as e:
                sys.exit(f"line {n}: not json: {e}: {raw[:200]!r}")
            errors = sorted(validator.iter_errors(obj), key=lambda e: e.path)
            if errors:
                best = jsonschema.exceptions.best_match(errors)
                sys.exit(f"line {n}: schema: {best.message} at {list(best.absolute_path)}: {raw[:300]}")
            lines.append(obj)
    if not lines:
        sys.exit("no lines")
    types = [l["type"] for l in lines]
    start = next((l for l in lines if l["type"] == "start"), None)
    if start is None or start["schema_version"] >= 3:
        for n, l in enumerate(lines, 1):
            if l["type"] == "error" and "code" not in l:
                sys.exit(f"line {n}: an error line of schema 3 without a code: {l}")
    codes = [l.get("code") for l in lines if l["type"] == "error"]
    for c in a.expect_error_code:
        if c not in codes:
            sys.exit(f"expected an error line with code {c!r}; codes: {codes}")
    if a.crashed:
        if "verdict" in types or "case_verdict" in types:
            sys.exit(f"a crashed run has no verdicts; types: {types}")
        print(f"ok: {len(lines)} lines valid, no verdict (crashed)")
        return
    if a.no_verdict:
        if set(types) != {"error"}:
            sys.exit(f"a refused run prints error lines only; types: {types}")
        print(f"ok: {len(lines)} error lines: {[l['message'] for l in lines]}")
        return
    if types.count("verdict") != 1 or types[-1] != "verdict":
        sys.exit(f"the stream must end with exactly one verdict line; types: {types[-5:]}")
    # qual-run begins with start (or a setup error); qual-judge's output is
    # case verdicts and the verdict.
    if types[0] not in ("start", "error", "case_verdict"):
        sys.exit(f"the stream must begin with start, error or case_verdict, got {types[0]}")
    if "start" in types and types[0] != "start" and types[0] != "error":
        sys.exit("start must be the first line")
    for t in filter(None, a.expect_types.split(",")):
        if t not in types:
            sys.exit(f"expected a {t} line; types seen: {sorted(set(types))}")
    verdict = lines[-1]["verdict"]
    if a.expect_verdict and verdict != a.expect_verdict:
        sys.exit(f"expected verdict {a.expect_verdict}, got {verdict}: {lines[-1]}")
    errs = [l["message"] for l in lines if l["type"] == "error"]
    for s in a.expect_error_substring:
        if not any(s in m for m in errs):
            sys.exit(f"expected an error line containing {s!r}; errors: {errs}")
    cv = {l["case"]: l["verdict"] for l in lines if l["type"] == "case_verdict"}
    for spec in a.expect_case_verdict:
        case, want = spec.split("=")
        got = [v for c, v in cv.items() if c == case or (case == "*")]
        if not got or any(g != want for g in got):
            sys.exit(f"expected case verdict {case}={want}, got {cv}")
    if a.expect_pairs is not None:
        # A retake times a pair index again (docs/output.md, "block").
        pairs = [l for l in lines if l["type"] == "pair" and "retake" not in l]
        per = {}
        for p in pairs:
            per.setdefault(p["case"], []).append(p["pair"])
        for c, idx in per.items():
            if sorted(idx) != list(range(a.expect_pairs)):
                sys.exit(f"case {c}: pairs {sorted(idx)[:5]}... expected 0..{a.expect_pairs-1}")
    if a.expect_identical:
        ident = [l["identical_code"] for l in lines
                 if l["type"] == "case" and l.get("applicable", True)]
        want = a.expect_identical == "all"
        if not ident or any(i != want for i in ident):
            sys.exit(f"expected identical_code {want} in every case line, got {ident}")
    if a.expect_not_applicable is not None:
        want = sorted(filter(None, a.expect_not_applicable.split(",")))
        na_lines = sorted(l["case"] for l in lines
                          if l["type"] == "case" and l.get("applicable") is False)
        na_cv = sorted(c for c, v in cv.items() if v == "not_applicable")
        na_run = sorted(c["case"] for c in lines[-1].get("cases", [])
                        if c["verdict"] == "not_applicable")
        count = lines[-1].get("not_applicable", 0)
        if not (na_lines == na_cv == na_run == want) or count != len(want):
            sys.exit(f"expected not applicable {want}; case lines {na_lines}, case "
                     f"verdicts {na_cv}, verdict line {na_run} counting {count}")
    print(f"ok: {len(lines)} lines valid, verdict {verdict}")


if __name__ == "__main__":
    main()
