#!/usr/bin/python3
"""Checks that the built-in cases of one family run on AMD's matrix cores.

Usage: mfma_check.py QUAL_RUN FIXTURE_SOURCE HIPRTC OBJDUMP FAMILY WORKDIR

Every case whose name begins with FAMILY- (from `QUAL_RUN --list`) is
assembled with FIXTURE_SOURCE (prelude + constants + kernel, as
fixture_source() builds it), compiled with the hiprtc library HIPRTC for
gfx90a and for gfx1030 through rtc_check.py (next to this file), and its code
object disassembled with OBJDUMP (llvm-objdump). The gfx90a code must contain
v_mfma instructions (the prelude's MFMA path, fixtures/prelude_hip.h) and the
gfx1030 code none (RDNA2 has no matrix cores: the shuffle path). Exits 0 when
every case passes, 1 otherwise (each failure printed), 2 on usage errors.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The arch, and whether its code must contain v_mfma.
ARCHS = (("gfx90a", True), ("gfx1030", False))


def count_mfma(objdump, code):
    out = subprocess.run([objdump, "-d", code], capture_output=True, text=True,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError("%s -d '%s' failed: %s" % (objdump, code, out.stderr.strip()))
    return len(re.findall(r"^\s+v_mfma_", out.stdout, re.M))


def main(argv):
    if len(argv) != 7:
        sys.stderr.write(__doc__)
        return 2
    qual_run, fixture_source, hiprtc, objdump, family, work = argv[1:]
    os.makedirs(work, exist_ok=True)
    names = subprocess.run([qual_run, "--list"], capture_output=True, text=True,
                           check=True).stdout.split()
    cases = [n for n in names if n.startswith(family + "-")]
    if not cases:
        print("no built-in case of family '%s' in %s" % (family, names))
        return 1
    failed = 0
    for case in cases:
        src = os.path.join(work, case + ".cu")
        subprocess.run([fixture_source, case, "hip", src], check=True)
        for arch, want in ARCHS:
            code = os.path.join(work, "%s.%s.co" % (case, arch))
            env = dict(os.environ, RTC_CHECK_OUT=code)
            rc = subprocess.run([sys.executable, os.path.join(HERE, "rtc_check.py"),
                                 hiprtc, arch, src], env=env, capture_output=True,
                                text=True, check=False)
            if rc.returncode != 0:
                print("%s %s: compile failed:\n%s%s" % (case, arch, rc.stdout, rc.stderr))
                failed += 1
                continue
            n = count_mfma(objdump, code)
            ok = n > 0 if want else n == 0
            print("%s %s: %d v_mfma instructions%s" % (case, arch, n,
                                                       "" if ok else " (FAIL)"))
            failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
