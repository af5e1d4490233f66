#!/usr/bin/python3
"""The user's own fixtures through qual-run (docs/fixtures.md, "Your own
fixtures"), without a GPU.

usage: user_fixtures_test.py TEST QUAL_RUN SOURCE_DIR [NVRTC [HIPRTC]]

TEST is one of:
  manifest     each broken manifest (one per kind of field) is a usage error
               (exit 4) whose message names the manifest and the field
  oracles      an oracle that crashes, hangs, exits 1, writes too few or too
               many values ends its case with oracle_failed (arm null, one
               line), the run an error, and the other cases still compile;
               a case whose oracle failed is never compiled (the oracles run
               before the compiles: counted by a QUAL_COMPILE wrapper)
  example      examples/fixtures/rmsnorm_f16 compiles compile-only with nvrtc
               (sm_90) and hiprtc (gfx90a), its oracle runs, every line is
               valid under docs/schema/lines.schema.json
  oracle       the example's oracle.py against a float64 re-computation
               written here (plain loops, math.fsum), on inputs qual-run wrote
  schema       the example's fixture.json is valid under
               docs/schema/fixture.schema.json, and broken ones are not
  compile_error a user kernel that neither compiler accepts is the fixture's
               fault (one bad_fixture line, arm null, the run an error),
               never the candidate's; one that only one compiler rejects
               ($QUAL_TEST_SHIM_REJECT, shim_hugelog) is that arm's
Oracle programs run with /usr/bin first on PATH (Debian's python3 with
numpy)."""
import copy
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import jsonschema

TEST, QUAL_RUN, SRC = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
NVRTC = sys.argv[4] if len(sys.argv) > 4 else ""
HIPRTC = sys.argv[5] if len(sys.argv) > 5 else ""
EXAMPLE = os.path.join(SRC, "examples", "fixtures", "rmsnorm_f16")
MODES = os.path.join(SRC, "tests", "data", "fixtures", "oracle_modes")
LINES_SCHEMA = os.path.join(SRC, "docs", "schema", "lines.schema.json")
FIXTURE_SCHEMA = os.path.join(SRC, "docs", "schema", "fixture.schema.json")
ENV = dict(os.environ, PATH="/usr/bin:" + os.environ.get("PATH", ""))


def fail(text):
    print("FAIL: " + text)
    sys.exit(1)


def qual_run(*args):
    p = subprocess.run([QUAL_RUN] + list(args), capture_output=True, text=True, env=ENV,
                       timeout=600)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, lines, p.stderr


def validate(lines):
    schema = json.load(open(LINES_SCHEMA))
    for i, l in enumerate(lines):
        try:
            jsonschema.validate(l, schema)
        except jsonschema.ValidationError as e:
            fail("line %d not valid: %s: %s" % (i + 1, e.message, json.dumps(l)[:300]))


def copy_example(tmp, name="fx"):
    d = os.path.join(tmp, name)
    shutil.copytree(EXAMPLE, d)
    return d


# Broken manifests: (what, edit of the example's manifest (dict -> None) or of
# its folder (path -> None), the field the message must name, a phrase it
# must hold). Each is checked through `qual-run --fixtures DIR --list`.
def set_(path, value):
    def edit(m):
        o = m
        for k in path[:-1]:
            o = o[k]
        if value is DELETE:
            del o[path[-1]]
        else:
            o[path[-1]] = value
    return edit


DELETE = object()
C1 = ["cases", 1]
BROKEN = [
    ("unknown top-level field", set_(["oracel"], "baseline"), "oracel", "unknown field"),
    ("unknown case field", set_(C1 + ["gird"], [1, 1, 1]), "cases[1].gird", "unknown field"),
    ("unknown buffer field", set_(C1 + ["buffers", 2, "outptu"], True),
     "cases[1].buffers[2].outptu", "unknown field"),
    ("missing entry", set_(["entry"], DELETE), "entry", "missing"),
    ("schema version", set_(["schema"], 2), "schema", "expected an integer in [1, 1]"),
    ("name wrong type", set_(["name"], 7), "name", "expected a non-empty string"),
    ("bad fixture name", set_(["name"], "RMSNorm"), "name", "lower-case"),
    ("bad case label", set_(C1 + ["name"], "big"), "cases[1].name", "digits and 'x'"),
    ("duplicate case", set_(C1 + ["name"], "4096x1024"), "cases[1].name",
     "is cases[0] too"),
    ("a built-in case's name", lambda m: (set_(["name"], "gemm_f16")(m),
                                          set_(C1 + ["name"], "256x512x256")(m)),
     "cases[1].name", "case 'gemm_f16-256x512x256' exists already"),
    ("reserved buffer name", set_(C1 + ["buffers", 1, "name"], "expected"),
     "cases[1].buffers[1].name", "reserved"),
    ("duplicate buffer name", set_(C1 + ["buffers", 1, "name"], "x"),
     "cases[1].buffers[1].name", "names buffers[0] too"),
    ("bad elem type", set_(C1 + ["buffers", 0, "type"], "f64"), "cases[1].buffers[0].type",
     "'f64' is not one of f16, bf16, f32, i32, i8, u8"),
    ("buffer too big", set_(C1 + ["buffers", 0, "count"], 600000000),
     "cases[1].buffers[0]", "more than the 1073741824 a buffer may have"),
    ("count wrong type", set_(C1 + ["buffers", 0, "count"], "4096"),
     "cases[1].buffers[0].count", "expected an integer"),
    ("grid", set_(C1 + ["grid"], [1024, 0, 1]), "cases[1].grid", "expected 3 positive"),
    ("block too large", set_(C1 + ["block"], [1024, 2, 1]), "cases[1].block",
     "more than 1024"),
    ("shared bytes", set_(C1 + ["shared_bytes"], -1), "cases[1].shared_bytes",
     "expected an integer"),
    ("constant with a newline", set_(C1 + ["constants", "EPS"], "1e-5f\n#include"),
     "cases[1].constants.EPS", "not allowed"),
    ("constant with a comment", set_(C1 + ["constants", "EPS"], "1e-5f/**/"),
     "cases[1].constants.EPS", "comment"),
    ("constant name", set_(C1 + ["constants", "2X"], 1), "cases[1].constants.2X",
     "C identifier"),
    ("random range", set_(C1 + ["buffers", 0, "init"], {"random": "float", "min": 2, "max": -2}),
     "cases[1].buffers[0].init.max", "below min"),
    ("random kind", set_(C1 + ["buffers", 0, "init"], {"random": "gauss", "min": 0, "max": 1}),
     "cases[1].buffers[0].init.random", "not one of float, int"),
    ("input without init", set_(C1 + ["buffers", 0, "init"], DELETE),
     "cases[1].buffers[0].init", "missing"),
    ("input file missing", set_(C1 + ["buffers", 0, "init"], {"file": "x.bin"}),
     "cases[1].buffers[0].init.file", "cannot find"),
    ("scalar type", set_(C1 + ["scalars", 0, "type"], "i64"), "cases[1].scalars[0].type",
     "not one of i32, u32, f32"),
    ("check of an input", set_(C1 + ["check", "buffer"], "x"), "cases[1].check.buffer",
     "not an output"),
    ("two tolerance kinds", set_(C1 + ["check", "tolerance", "abs"], 1),
     "cases[1].check.tolerance", "not more"),
    ("tolerance without why", set_(C1 + ["check", "tolerance", "why"], DELETE),
     "cases[1].check.tolerance.why", "missing"),
    ("source missing", set_(["sources"], ["rmsnorm.cu", "more.cu"]), "sources[1]",
     "cannot find"),
    ("source outside", set_(["sources"], ["../rmsnorm.cu"]), "sources[0]",
     "inside the fixture directory"),
    ("platform", set_(["platforms"], ["cuda", "metal"]), "platforms[1]",
     "not one of cuda, hip"),
    ("oracle outside", set_(["oracle", "program"], "/bin/true"), "oracle.program",
     "inside the fixture directory"),
    ("oracle missing", set_(["oracle", "program"], "nothere.py"), "oracle.program",
     "cannot find"),
    ("oracle string", set_(["oracle"], "host"), "oracle", "expected \"baseline\""),
]


def folder_edit_not_executable(d):
    os.chmod(os.path.join(d, "oracle.py"), 0o644)


def folder_edit_link_out(d):
    os.remove(os.path.join(d, "oracle.py"))
    os.symlink("/bin/true", os.path.join(d, "oracle.py"))


def folder_edit_bad_json(d):
    with open(os.path.join(d, "fixture.json"), "a") as f:
        f.write("{")


def folder_edit_no_manifest(d):
    os.remove(os.path.join(d, "fixture.json"))


FOLDER_BROKEN = [
    ("oracle not executable", folder_edit_not_executable, "oracle.program", "not executable"),
    ("oracle a link out of DIR", folder_edit_link_out, "oracle.program",
     "leads outside the fixture directory"),
    ("bad JSON", folder_edit_bad_json, "line ", "not valid JSON"),
    ("no manifest", folder_edit_no_manifest, "", "No such file"),
]


def test_manifest():
    with tempfile.TemporaryDirectory() as tmp:
        good = copy_example(tmp, "good")
        rc, _, err = qual_run("--fixtures", good, "--list")
        if rc != 0:
            fail("the example does not load: %s" % err)
        # The same directory twice: its names are taken the second time.
        rc, lines, err = qual_run("--fixtures", good, "--fixtures", good, "--list")
        if rc != 4 or "cases[0].name" not in err or "exists already" not in err:
            fail("a second load of one directory: exit %d, %s" % (rc, err))
        base = json.load(open(os.path.join(EXAMPLE, "fixture.json")))
        for i, (what, edit, field, phrase) in enumerate(BROKEN + FOLDER_BROKEN):
            d = copy_example(tmp, "b%d" % i)
            manifest = os.path.join(os.path.realpath(d), "fixture.json")
            if (what, edit, field, phrase) in FOLDER_BROKEN:
                edit(d)
            else:
                m = copy.deepcopy(base)
                edit(m)
                json.dump(m, open(manifest, "w"))
            rc, lines, err = qual_run("--fixtures", d, "--list")
            want = "'%s': %s" % (manifest, field)
            if rc != 4:
                fail("%s: exit %d, not 4 (stderr %r)" % (what, rc, err))
            if want not in err or phrase not in err:
                fail("%s: message %r lacks %r or %r" % (what, err.strip(), want, phrase))
            if not lines or lines[0].get("code") != "bad_fixture" or \
               lines[0].get("stage") != "setup":
                fail("%s: no bad_fixture error line: %r" % (what, lines))
            validate(lines)
            print("ok: %s: %s" % (what, err.strip()))


def compile_wrapper(tmp):
    """A QUAL_COMPILE that logs the case of every compile, then runs the real
    qual-compile (beside qual-run); returns (its path, the log's)."""
    log = os.path.join(tmp, "compiles.log")
    real = os.path.join(os.path.dirname(os.path.realpath(QUAL_RUN)), "qual-compile")
    path = os.path.join(tmp, "qual-compile")
    with open(path, "w") as f:
        f.write('#!/bin/sh\nif [ "$1" = compile ]; then\n'
                '  grep -o "qual: case [^,]*" "$QUAL_COMPILE_SRC" >> "%s"\nfi\n'
                'exec "%s" "$@"\n' % (log, real))
    os.chmod(path, 0o755)
    return path, log


def test_oracles():
    tmp = tempfile.mkdtemp()
    wrapper, log = compile_wrapper(tmp)
    env = dict(ENV, QUAL_COMPILE=wrapper)
    p = subprocess.run([QUAL_RUN, "--compile-only", NVRTC, NVRTC, "--fixtures", MODES,
                        "--only-fixtures", "--oracle-timeout", "2", "--no-cache"],
                       capture_output=True, text=True, env=env, timeout=600)
    rc, err = p.returncode, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    with open(log) as f:
        compiled = sorted(set(f.read().split("\n")) - {""})
    shutil.rmtree(tmp)
    if compiled != ["qual: case oracle_modes-1"]:
        fail("compiled %r: only oracle_modes-1, whose oracle works, may be" % compiled)
    print("ok: only the case whose oracle works was compiled")
    validate(lines)
    prog = os.path.join(os.path.realpath(MODES), "oracle.py")
    want = {
        2: "killed by signal SIGSEGV",
        3: "ran past its time limit of 2 s",
        4: "exited with status 1: oracle.py: cannot compute this one",
        5: "wrote 2040 bytes, not the 2048 of 256 float64 values",
        6: "wrote more than 2048 bytes",
    }
    errors = {l["case"]: l for l in lines if l["type"] == "error"}
    cases = {l["case"]: l for l in lines if l["type"] == "case"}
    verdicts = {l["case"]: l for l in lines if l["type"] == "case_verdict"}
    if rc != 3 or lines[-1].get("verdict") != "error":
        fail("exit %d, verdict %r: want 3, error" % (rc, lines[-1]))
    c1 = cases.get("oracle_modes-1")
    if not c1 or not c1["baseline"]["compiled"] or not c1["candidate"]["compiled"]:
        fail("the good case did not compile: %r" % c1)
    if c1["oracle"] != {"kind": "host", "what": prog}:
        fail("oracle field %r" % c1["oracle"])
    if verdicts["oracle_modes-1"]["verdict"] != "not_timed":
        fail("good case verdict %r" % verdicts["oracle_modes-1"])
    for mode, phrase in want.items():
        name = "oracle_modes-%d" % mode
        e = errors.get(name)
        if not e:
            fail("%s: no error line" % name)
        n = sum(1 for l in lines if l["type"] == "error" and l.get("case") == name)
        if n != 1:
            fail("%s: %d error lines, want 1" % (name, n))
        if e["stage"] != "setup" or e["code"] != "oracle_failed" or e["arm"] is not None:
            fail("%s: %r" % (name, e))
        if ("oracle '%s'" % prog) not in e["message"] or ("case '%s'" % name) not in \
           e["message"] or phrase not in e["message"]:
            fail("%s: message %r lacks the oracle, the case or %r" % (name, e["message"], phrase))
        v = verdicts[name]
        # Neither arm's doing: the run is an error, never a fail.
        if v["verdict"] != "fail" or v.get("failed_arm") != "baseline":
            fail("%s: case verdict %r" % (name, v))
        print("ok: %s: %s" % (name, e["message"]))


def test_example():
    for lib, arch in ((NVRTC, "sm_90"), (HIPRTC, "gfx90a")):
        if not lib:
            continue
        rc, lines, err = qual_run("--compile-only", "--arch", arch, lib, lib, "--fixtures",
                                  EXAMPLE, "--only-fixtures")
        validate(lines)
        cases = [l for l in lines if l["type"] == "case"]
        names = [c["case"] for c in cases]
        if rc != 0 or names != ["rmsnorm_f16-4096x1024", "rmsnorm_f16-1024x4096"]:
            fail("%s %s: exit %d, cases %r, stderr %s, lines %r" % (lib, arch, rc, names, err,
                                                                    lines[-3:]))
        for c in cases:
            for arm in ("baseline", "candidate"):
                if not c[arm]["compiled"]:
                    fail("%s: %s did not compile" % (c["case"], arm))
            if c["family"] != "rmsnorm_f16" or c["kernel"] != "rmsnorm_f16" or \
               c["oracle"]["kind"] != "host" or c["tolerance_kind"] != "ulps":
                fail("case line %r" % c)
        # Specialized: the two shapes are two programs.
        if cases[0]["baseline"]["artifact_sha256"] == cases[1]["baseline"]["artifact_sha256"]:
            fail("%s: one artifact for both shapes" % arch)
        print("ok: %s %s: %s" % (arch, lib, names))
    # With the built-in cases first; --list after every --fixtures.
    out = subprocess.run([QUAL_RUN, "--list", "--fixtures", EXAMPLE], capture_output=True,
                         text=True).stdout.split()
    if "gemm_f16-256x512x256" not in out or out[-2:] != ["rmsnorm_f16-4096x1024",
                                                         "rmsnorm_f16-1024x4096"]:
        fail("--list: %r" % out)


def rmsnorm_reference(x, w, rows, cols, eps):
    out = []
    for r in range(rows):
        row = x[r * cols:(r + 1) * cols]
        ms = math.fsum(v * v for v in row) / cols
        inv = 1.0 / math.sqrt(ms + eps)
        out.extend(v * inv * w[c] for c, v in enumerate(row))
    return out


def test_oracle():
    """Inputs as qual writes them (raw f16, a case.json), small shapes, and
    the values oracle.py writes compared with plain float64 loops."""
    import random
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        for rows, cols in ((3, 1024), (2, 4096)):
            # f16 values: random bit patterns of finite numbers in [-2, 2].
            def f16(lo, hi):
                v = rng.uniform(lo, hi)
                return struct.unpack("<e", struct.pack("<e", v))[0]
            x = [f16(-2, 2) for _ in range(rows * cols)]
            w = [f16(0.5, 1.5) for _ in range(cols)]
            open(os.path.join(tmp, "x.bin"), "wb").write(struct.pack("<%de" % len(x), *x))
            open(os.path.join(tmp, "w.bin"), "wb").write(struct.pack("<%de" % len(w), *w))
            case = {"case": "rmsnorm_f16-%dx%d" % (rows, cols),
                    "constants": {"ROWS": rows, "COLS": cols, "EPS": "1e-5f", "THREADS": 256},
                    "buffers": [{"name": "x", "type": "f16", "count": len(x), "file": "x.bin"},
                                {"name": "w", "type": "f16", "count": cols, "file": "w.bin"},
                                {"name": "out", "type": "f16", "count": len(x), "output": True}],
                    "scalars": [{"type": "i32", "value": rows}],
                    "output": {"name": "out", "type": "f16", "count": len(x)}}
            json.dump(case, open(os.path.join(tmp, "case.json"), "w"))
            out = os.path.join(tmp, "expected.bin")
            p = subprocess.run([os.path.join(EXAMPLE, "oracle.py"),
                                os.path.join(tmp, "case.json"), out], cwd=EXAMPLE, env=ENV,
                               capture_output=True, text=True)
            if p.returncode != 0:
                fail("oracle.py: %s" % p.stderr)
            got = struct.unpack("<%dd" % len(x), open(out, "rb").read())
            eps = struct.unpack("<f", struct.pack("<f", 1e-5))[0]
            want = rmsnorm_reference(x, w, rows, cols, eps)
            worst = max(abs(g - v) / max(abs(v), 1e-300) for g, v in zip(got, want))
            # Two float64 evaluations in another order: 1e-13 is thousands of
            # float64 ulps and far below an f16 ulp (2^-11 relative).
            if worst > 1e-13:
                fail("%dx%d: oracle.py differs by %g relative" % (rows, cols, worst))
            print("ok: %dx%d: largest relative difference %g" % (rows, cols, worst))


def test_schema():
    schema = json.load(open(FIXTURE_SCHEMA))
    jsonschema.Draft202012Validator.check_schema(schema)
    for d in (EXAMPLE, MODES, os.path.join(SRC, "tests", "data", "fixtures", "differential")):
        jsonschema.validate(json.load(open(os.path.join(d, "fixture.json"))), schema)
    base = json.load(open(os.path.join(EXAMPLE, "fixture.json")))
    # Each broken manifest that the schema can see is refused by it too.
    for what, edit, field, phrase in BROKEN:
        if what in ("duplicate case", "a built-in case's name", "buffer too big",
                    "duplicate buffer name", "block too large", "input file missing",
                    "source missing", "oracle missing", "check of an input", "random range",
                    "source outside", "oracle outside", "constant with a comment"):
            continue  # needs the files or cross-field checks: qual-run's own
        m = copy.deepcopy(base)
        edit(m)
        try:
            jsonschema.validate(m, schema)
        except jsonschema.ValidationError:
            continue
        fail("the schema accepts the manifest with %s" % what)
    print("ok: schema")


def test_compile_error():
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "broken")
        shutil.copytree(MODES, d)
        with open(os.path.join(d, "twice.cu"), "a") as f:
            f.write("\nthis is not a declaration\n")
        rc, lines, err = qual_run("--compile-only", NVRTC, NVRTC, "--fixtures", d,
                                  "--case", "oracle_modes-1")
        validate(lines)
        errors = [l for l in lines if l["type"] == "error"]
        verdicts = [l for l in lines if l["type"] == "case_verdict"]
        if rc != 3 or lines[-1].get("verdict") != "error":
            fail("exit %d, verdict %r: want 3, error" % (rc, lines[-1]))
        if len(errors) != 1 or errors[0]["code"] != "bad_fixture" or \
           errors[0]["arm"] is not None or errors[0]["stage"] != "compile" or \
           "oracle_modes-1" not in errors[0]["message"] or \
           "baseline: " not in errors[0]["message"] or \
           "candidate: " not in errors[0]["message"]:
            fail("error lines %r" % errors)
        if len(verdicts) != 1 or verdicts[0].get("failed_arm") == "candidate":
            fail("case verdict %r" % verdicts)
        print("ok: %s" % errors[0]["message"])
    # A good kernel that only one compiler rejects (shim_hugelog rejects
    # everything) is that arm's failure, as for a built-in case.
    reject = os.environ.get("QUAL_TEST_SHIM_REJECT")
    if not reject:
        return
    ENV["QUAL_SHIM_HUGELOG_BYTES"] = "4096"
    for base, cand, arm, want_rc, verdict in ((NVRTC, reject, "candidate", 2, "fail"),
                                              (reject, NVRTC, "baseline", 3, "error")):
        rc, lines, err = qual_run("--compile-only", base, cand, "--fixtures", MODES,
                                  "--case", "oracle_modes-1")
        errors = [l for l in lines if l["type"] == "error"]
        if rc != want_rc or lines[-1].get("verdict") != verdict or len(errors) != 1 or \
           errors[0]["code"] != "compile_failed" or errors[0]["arm"] != arm:
            fail("only the %s rejects: exit %d, %r, %r" % (arm, rc, lines[-1], errors))
        print("ok: only the %s rejects: %s, %s" % (arm, verdict, errors[0]["code"]))


def test_oracle_user():
    """The oracle runs in DIR, as qual-run's user, or as --compile-user's
    (root only: skipped, 77, otherwise)."""
    if os.geteuid() != 0:
        print("skipped: --compile-user needs root")
        sys.exit(77)
    tmp = tempfile.mkdtemp()
    try:
        os.chmod(tmp, 0o755)
        d = os.path.join(tmp, "probe")
        shutil.copytree(MODES, d)
        with open(os.path.join(d, "oracle.py"), "w") as f:
            f.write('#!/bin/sh\necho "ran as $(id -un) in $(pwd)" >&2\nexit 1\n')
        os.chmod(os.path.join(d, "oracle.py"), 0o755)
        for extra, user in (([], "root"), (["--compile-user", "nobody"], "nobody")):
            rc, lines, err = qual_run(*(["--compile-only"] + extra + [NVRTC, NVRTC, "--fixtures",
                                      d, "--case", "oracle_modes-1"]))
            e = [l for l in lines if l["type"] == "error"]
            want = "exited with status 1: ran as %s in %s" % (user, os.path.realpath(d))
            if rc != 3 or len(e) != 1 or want not in e[0]["message"]:
                fail("%s: exit %d, %r (want %r)" % (user, rc, e, want))
            print("ok: %s" % e[0]["message"])
    finally:
        shutil.rmtree(tmp)


{"oracle_user": test_oracle_user, "compile_error": test_compile_error, "manifest": test_manifest, "oracles": test_oracles, "example": test_example,
 "oracle": test_oracle, "schema": test_schema}[TEST]()
