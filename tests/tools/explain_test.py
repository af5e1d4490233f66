#!/usr/bin/env python3
"""The code lines of qual-run and `qualctl explain` (docs/explain.md).

Scenarios:
  figures    nvrtc 13.0 against shim_slow (a compiler that changes the code)
             on every built-in case, compile-only: one code line per case,
             valid under the schema, whose figures agree with NVIDIA's own
             tools on the artifacts themselves: registers, stack and shared
             memory with `cuobjdump -res-usage`; instructions with the size
             of the CUBIN's .text sections (16 bytes an instruction) and the
             lines of `cuobjdump -sass`; tensor-core, local, shared and
             global counts with that listing; occupancy with a second
             computation of the sm_90 rules; the diff with its own hunks
  identical  nvrtc 13.0 against the same build under another name: the
             code line says identical, the diff is empty
  no_tool    QUAL_NVDISASM naming no file: the code line still has the
             compiler's figures, no mix, and says why there is no disassembly
  amd        hiprtc on gfx90a: llvm-objdump's listing, its v_mfma count
  compile_user  qual-run as root with --compile-user nobody: the
             disassembler runs as that user too (it reads the candidate
             compiler's output), and still reads the code (a memfd)
  kept       two runs on one artifact cache: the second disassembles
             nothing and writes the same code lines; a damaged kept analysis
             is read again from the tool
  cli        quald, a compile-only job, `qualctl explain JOB CASE` under a
             pseudo-terminal (figures side by side, the diff in colour),
             --no-diff, --json (the stored line exactly), a file of lines,
             and the errors for an unknown case and job
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import service_test as svc  # noqa: E402
from ptyrun import on_pty  # noqa: E402

check = svc.check
BUILT_IN = 13


def qual_run(args, base, cand, *extra, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([args.qual_run, base, cand, "--compile-only", *extra],
                       capture_output=True, text=True, env=e, timeout=240)
    check(r.returncode == 0, f"qual-run exited {r.returncode}: {r.stderr[-2000:]}")
    return [json.loads(x) for x in r.stdout.splitlines()]


def code_lines(lines):
    return {o["case"]: o for o in lines if o["type"] == "code"}


def validate(lines):
    for o in lines:
        svc.schema_check(json.dumps(o), f"a {o.get('type')} line")


def artifacts(cache):
    """sha256 -> path of every artifact in the cache folder."""
    import hashlib
    out = {}
    for dirpath, _, files in os.walk(cache):
        if "code" in files:
            p = os.path.join(dirpath, "code")
            with open(p, "rb") as f:
                out[hashlib.sha256(f.read()).hexdigest()] = p
    return out


def text_bytes(path):
    """The sizes of an ELF's .text.* sections, summed."""
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
    strtab = sh(shstrndx)
    total = 0
    for i in range(shnum):
        name_off, _, _, _, _, size = sh(i)[:6]
        start = strtab[4] + name_off
        name = elf[start:elf.index(b"\0", start)].decode()
        if name.startswith(".text."):
            total += size
    return total


def res_usage(cuobjdump, path):
    r = subprocess.run([cuobjdump, "-res-usage", path], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, f"cuobjdump -res-usage {path}: {r.stderr}")
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", r.stdout)
    check(m, f"cuobjdump -res-usage printed no resource line: {r.stdout}")
    return {k: int(v) for k, v in zip(("reg", "stack", "shared", "local"), m.groups())}


def sass_opcodes(cuobjdump, path):
    r = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"cuobjdump -sass {path}: {r.stderr}")
    ops = []
    for line in r.stdout.splitlines():
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[0-7T]\s+)?([A-Za-z0-9_.]+?)(?:\s|;)",
                     line)
        if m:
            ops.append(m.group(1).split(".")[0])
    return ops


def occupancy_sm90(threads, regs, shared):
    """The sm_90 rules, written again: registers per warp in units of 256
    from four 16384-register sub-partitions, 64 warps, 32 blocks, 228 KiB of
    shared memory in units of 128 bytes plus 1 KiB a block."""
    warps = -(-threads // 32)
    per_warp = -(-regs * 32 // 256) * 256
    by_regs = (16384 // per_warp) * 4 // warps
    per_block = -(-shared // 128) * 128 + 1024
    by_shared = 233472 // per_block
    return min(64 // warps, 32, by_shared, by_regs)


def check_diff(d, case):
    text = d["text"]
    lines = text.splitlines()
    if not d["truncated"]:
        check(sum(1 for x in lines if x.startswith("+")) == d["added"],
              f"{case}: the diff's + lines are not its 'added' {d['added']}")
        check(sum(1 for x in lines if x.startswith("-")) == d["removed"],
              f"{case}: the diff's - lines are not its 'removed' {d['removed']}")
    check(len(text.encode()) <= 128 * 1024, f"{case}: a diff over 128 KiB")
    # Each hunk holds what its header says.
    i = 0
    while i < len(lines):
        m = re.fullmatch(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@", lines[i])
        check(m, f"{case}: not a hunk header: {lines[i]!r}")
        na, nb = int(m.group(2)), int(m.group(4))
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            na -= lines[i][0] in " -"
            nb -= lines[i][0] in " +"
            i += 1
        check(d["truncated"] or (na == 0 and nb == 0), f"{case}: a hunk's counts are wrong")


def scenario_figures(args, root):
    cache = os.path.join(root, "cache")
    lines = qual_run(args, args.nvrtc, args.shim_slow, "--cache", cache,
                     env={"QUAL_NVDISASM": args.nvdisasm})
    validate(lines)
    codes = code_lines(lines)
    check(len(codes) == BUILT_IN, f"{len(codes)} code lines, expected {BUILT_IN}")
    # Before the case lines, after the start line.
    types = [o["type"] for o in lines]
    check(types.index("code") > types.index("start") and
          max(i for i, t in enumerate(types) if t == "code") < types.index("case"),
          "the code lines are not between the start line and the first case line")
    arts = artifacts(cache)
    changed = 0
    for name, o in codes.items():
        check(o["disassembler"]["tool"] == "nvdisasm" and o["disassembly_error"] is None,
              f"{name}: {o['disassembler']} {o['disassembly_error']}")
        check(o["target"] in ("sm_90", "sm_90a"), f"{name}: target {o['target']}")
        for arm in ("baseline", "candidate"):
            a = o[arm]
            path = arts.get(a["artifact_sha256"])
            check(path, f"{name} {arm}: artifact {a['artifact_sha256']} is not in the cache")
            ru = res_usage(args.cuobjdump, path)
            check(a["registers"] == ru["reg"], f"{name} {arm}: registers {a['registers']}, "
                  f"cuobjdump says {ru['reg']}")
            check(a["local_bytes"] == ru["stack"], f"{name} {arm}: local {a['local_bytes']}, "
                  f"cuobjdump's stack {ru['stack']}")
            check(a["shared_bytes"] + 1024 == ru["shared"], f"{name} {arm}: shared "
                  f"{a['shared_bytes']} (+1 KiB reserved), cuobjdump says {ru['shared']}")
            check(a["code_bytes"] == os.path.getsize(path), f"{name} {arm}: code_bytes")
            check(a["instructions"] * 16 == text_bytes(path), f"{name} {arm}: "
                  f"{a['instructions']} instructions, .text is {text_bytes(path)} bytes")
            ops = sass_opcodes(args.cuobjdump, path)
            check(len(ops) == a["instructions"], f"{name} {arm}: {a['instructions']} "
                  f"instructions, cuobjdump -sass lists {len(ops)}")
            mix = a["mix"]
            check(sum(mix.values()) == a["instructions"], f"{name} {arm}: the mix sums "
                  f"to {sum(mix.values())}")
            want = {
                "mma": sum(op.endswith("MMA") for op in ops),
                "local": sum(op in ("LDL", "STL") for op in ops),
                "shared": sum(op in ("LDS", "STS", "LDSM", "STSM", "ATOMS") for op in ops),
                "global": sum(op in ("LDG", "STG", "LDGSTS", "RED", "ATOM", "ATOMG", "LD",
                                     "ST", "UTMALDG", "UTMASTG", "UBLKCP", "REDG", "UTMAPF")
                              for op in ops),
            }
            for k, v in want.items():
                check(mix[k] == v, f"{name} {arm}: mix {k} {mix[k]}, cuobjdump -sass {v}")
            occ = occupancy_sm90(o["block_threads"], ru["reg"],
                                 a["shared_bytes"] + o["dynamic_shared_bytes"])
            check(a["occupancy"]["blocks_per_sm"] == occ, f"{name} {arm}: occupancy "
                  f"{a['occupancy']}, expected {occ} blocks")
        check(not o["identical_code"], f"{name}: shim_slow's code is the same")
        check_diff(o["diff"], name)
        changed += o["diff"]["added"] + o["diff"]["removed"] > 0
        check(o["baseline"]["mix"]["mma"] > 0, f"{name}: no tensor-core instruction")
    check(changed == BUILT_IN, f"{changed} of {BUILT_IN} diffs show a change")
    svc.log(f"{BUILT_IN} code lines agree with cuobjdump")


def scenario_identical(args, root):
    case = "gemm_f16-256x512x256"
    lines = qual_run(args, args.nvrtc, args.nvrtc_alt, "--case", case,
                     env={"QUAL_NVDISASM": args.nvdisasm})
    o = code_lines(lines)[case]
    check(o["identical_code"], "nvrtc against itself: code not identical")
    check(o["diff"] == {"text": "", "added": 0, "removed": 0, "truncated": False,
                        "coarse": False}, f"diff of identical code: {o['diff']}")
    check(o["baseline"] == o["candidate"], "identical code, different figures")


def scenario_no_tool(args, root):
    case = "gemm_f16-256x512x256"
    lines = qual_run(args, args.nvrtc, args.shim_slow, "--case", case,
                     env={"QUAL_NVDISASM": os.path.join(root, "none")})
    validate(lines)
    o = code_lines(lines)[case]
    check(o["disassembler"] is None and "QUAL_NVDISASM" in o["disassembly_error"] and
          "not an executable file" in o["disassembly_error"],
          f"no tool: {o['disassembler']} {o['disassembly_error']}")
    check(o["diff"] is None and o["baseline"]["mix"] is None, "a mix or diff without a tool")
    check(o["baseline"]["registers"] > 0 and o["candidate"]["occupancy"]["blocks_per_sm"] > 0,
          "the compiler's figures are missing")
    out = subprocess.run([args.qualctl, "explain", "-", case], input="\n".join(
        json.dumps(x) for x in lines), capture_output=True, text=True, timeout=30)
    check(out.returncode == 0 and "no disassembly: QUAL_NVDISASM names" in out.stdout,
          f"explain without a disassembly: {out.returncode} {out.stdout} {out.stderr}")


def scenario_amd(args, root):
    case = "gemm_f16-256x512x256"
    cache = os.path.join(root, "cache")
    lines = qual_run(args, args.hiprtc, args.hiprtc, "--case", case, "--cache", cache,
                     env={"QUAL_LLVM_OBJDUMP": args.objdump})
    validate(lines)
    o = code_lines(lines)[case]
    check(o["target"] == "gfx90a" and o["disassembler"]["tool"] == "llvm-objdump",
          f"amd: {o['target']} {o['disassembler']}")
    path = artifacts(cache)[o["baseline"]["artifact_sha256"]]
    r = subprocess.run([args.objdump, "-d", path], capture_output=True, text=True, timeout=60)
    mfma = len(re.findall(r"^\s+v_mfma\w*\s", r.stdout, re.M))
    insts = len(re.findall(r"^\s+[a-z][a-z0-9_]*(\s|$).*//", r.stdout, re.M))
    check(mfma > 0 and o["baseline"]["mix"]["mma"] == mfma,
          f"amd: mix mma {o['baseline']['mix']['mma']}, llvm-objdump lists {mfma} v_mfma")
    check(o["baseline"]["instructions"] == insts,
          f"amd: {o['baseline']['instructions']} instructions, llvm-objdump lists {insts}")
    check(o["baseline"]["occupancy"]["limited_by"] in ("registers", "shared"), "amd occupancy")


def scenario_compile_user(args, root):
    import pwd
    case = "gemm_f16-256x512x256"
    nobody = pwd.getpwnam("nobody").pw_uid
    seen = os.path.join(root, "uids")
    os.makedirs(seen)
    os.chmod(seen, 0o777)
    os.chmod(root, 0o755)
    wrapper = os.path.join(root, "nvdisasm")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nid -u >> {seen}/$$\nexec {args.nvdisasm} \"$@\"\n")
    os.chmod(wrapper, 0o755)
    lines = qual_run(args, args.nvrtc, args.shim_slow, "--case", case, "--compile-user",
                     "nobody", "--no-cache", env={"QUAL_NVDISASM": wrapper})
    o = code_lines(lines)[case]
    check(o["disassembly_error"] is None and o["baseline"]["instructions"] > 0,
          f"as the compile user: {o['disassembly_error']}")
    uids = set()
    for name in os.listdir(seen):
        with open(os.path.join(seen, name)) as f:
            uids.update(int(x) for x in f.read().split())
    # --version (finding the tool) runs as qual-run; each disassembly as nobody.
    check(nobody in uids, f"no disassembly ran as nobody ({nobody}): {uids}")
    runs_as = [int(x) for n in os.listdir(seen) for x in open(os.path.join(seen, n)).read().split()]
    check(runs_as.count(nobody) == 2, f"uids of the tool's runs: {runs_as}")


def counting_tool(args, root):
    """A wrapper of nvdisasm that counts its disassemblies (not --version)."""
    count = os.path.join(root, "count")
    wrapper = os.path.join(root, "nvdisasm")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\n[ \"$1\" = --version ] || echo x >> {count}\n"
                f"exec {args.nvdisasm} \"$@\"\n")
    os.chmod(wrapper, 0o755)

    def runs():
        if not os.path.exists(count):
            return 0
        with open(count) as f:
            n = len(f.read().split())
        os.unlink(count)
        return n
    return wrapper, runs


def scenario_kept(args, root):
    cases = ["gemm_f16-256x512x256", "conv3x3_f16-7x7x512x512"]
    cache = os.path.join(root, "cache")
    wrapper, runs = counting_tool(args, root)
    sel = [a for c in cases for a in ("--case", c)]
    env = {"QUAL_NVDISASM": wrapper}
    first = code_lines(qual_run(args, args.nvrtc, args.shim_slow, "--cache", cache, *sel,
                                env=env))
    check(runs() == 4, "the first run did not disassemble its 4 artifacts")
    second = code_lines(qual_run(args, args.nvrtc, args.shim_slow, "--cache", cache, *sel,
                                 env=env))
    n = runs()
    check(n == 0, f"the second run disassembled {n} artifacts, expected none")
    check(first == second, "the code lines of the run served from the cache differ")
    kept = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
            if f.startswith("explain-")]
    check(len(kept) == 4, f"{len(kept)} kept analyses, expected 4")
    with open(kept[0], "r+") as f:
        f.write("damaged")
    third = code_lines(qual_run(args, args.nvrtc, args.shim_slow, "--cache", cache, *sel,
                                env=env))
    check(runs() == 1 and third == first, "a damaged kept analysis was not read again")


def scenario_cli(args, root):
    case = "gemm_f16-256x512x256"
    env = dict(os.environ, QUAL_NVDISASM=args.nvdisasm)
    os.environ["QUAL_NVDISASM"] = args.nvdisasm
    with svc.serving(svc.Quald(args, root)) as d:
        r = d.ctl("submit", args.nvrtc, args.shim_slow, "--case", case, "--compile-only",
                  "--json")
        job = svc.submit_job_id(r)
        d.wait_job_state(job, ("done",), 60)
        stored = [json.loads(x) for x in d.stored_lines(job)]
        code = next(o for o in stored if o["type"] == "code")
        argv = [args.qualctl, "--socket", d.sock, "explain", job, case]
        env.pop("NO_COLOR", None)
        env["TERM"] = "xterm"
        rc, out = on_pty(argv, env)
        check(rc == 0, f"explain under a pty exited {rc}: {out[-2000:]}")
        b, c = code["baseline"], code["candidate"]
        row = re.search(r"^  registers per thread\s+(\d+)\s+(\d+)\s+([+-]\d+) \(([+-][\d.]+)%\)$",
                        out, re.M)
        check(row and int(row.group(1)) == b["registers"] and
              int(row.group(2)) == c["registers"] and
              int(row.group(3)) == c["registers"] - b["registers"],
              f"the registers row does not give the line's figures:\n{out[:2000]}")
        for label, key in (("instructions", "instructions"), ("code bytes", "code_bytes")):
            check(re.search(rf"^  {label}\s+{b[key]}\s+{c[key]}\b", out, re.M),
                  f"no '{label}' row with {b[key]} and {c[key]}:\n{out[:2000]}")
        check(re.search(rf"^    mma\s+{b['mix']['mma']}\s+{c['mix']['mma']}\b", out, re.M),
              "no mma row")
        diff = code["diff"]
        check(f"of first use: {diff['added']} lines added, {diff['removed']} removed" in out,
              "the diff's counts are not said")
        check("\033[32m+" in out and "\033[31m-" in out,
              f"the diff is not in colour on a tty: {out[-600:]!r}")
        for line in out.splitlines():
            if not line.startswith(("+", "-", " ", "@", "\033")) or line.startswith("  "):
                check(len(line) <= 80, f"a line over 80 columns: {line!r}")
        rc, out = on_pty(argv + ["--no-diff"], env)
        check(rc == 0 and "registers per thread" in out and "diff of" not in out,
              f"--no-diff: {rc} {out[-500:]}")
        j = d.ctl("explain", job, case, "--json")
        check(j.returncode == 0, f"--json: {j.returncode} {j.stderr}")
        got = json.loads(j.stdout)
        check(got == code, "--json does not print the stored code line")
        bad = d.ctl("explain", job, "nope")
        check(bad.returncode == 4 and "has no case 'nope'" in bad.stderr and case in bad.stderr,
              f"unknown case: {bad.returncode} {bad.stderr}")
        gone = d.ctl("explain", "j999999", case)
        check(gone.returncode == 4 and "j999999" in gone.stderr,
              f"unknown job: {gone.returncode} {gone.stderr}")
        f = os.path.join(root, "run.jsonl")
        with open(f, "w") as fh:
            fh.write("\n".join(json.dumps(o) for o in stored) + "\n")
        fr = subprocess.run([args.qualctl, "explain", f, case, "--json"], capture_output=True,
                            text=True, timeout=30)
        check(fr.returncode == 0 and json.loads(fr.stdout) == code,
              f"explain FILE: {fr.returncode} {fr.stderr}")
        # A timed job's case line carries the driver's occupancy count:
        # printed beside the computed one. The job here is compile-only,
        # so its case line is made a timed one with counts of the test's
        # own; an untimed line with counts prints none.
        def with_counts(name, timed):
            path = os.path.join(root, name)
            with open(path, "w") as fh:
                for o in stored:
                    if o["type"] == "case":
                        o = dict(o, timed=timed,
                                 baseline=dict(o["baseline"], driver_blocks_per_sm=7),
                                 candidate=dict(o["candidate"], driver_blocks_per_sm=9))
                    fh.write(json.dumps(o) + "\n")
            return subprocess.run([args.qualctl, "explain", path, case, "--no-diff"],
                                  capture_output=True, text=True, timeout=30)
        fr = with_counts("timed.jsonl", True)
        check(fr.returncode == 0 and re.search(r"^    by the driver\s+7\s+9\s+\+2 ", fr.stdout,
                                               re.M),
              f"no driver's count row: {fr.returncode} {fr.stdout[-800:]} {fr.stderr}")
        check("by the driver" not in out, "a driver's count row for a compile-only job")
        fr = with_counts("untimed.jsonl", False)
        check(fr.returncode == 0 and "by the driver" not in fr.stdout,
              f"an untimed case line's counts shown: {fr.stdout[-800:]}")
        junk = os.path.join(root, "junk.txt")
        with open(junk, "w") as fh:
            fh.write("not json\n{\"type\": 3}\n\x1b[31mred\n")
        fr = subprocess.run([args.qualctl, "explain", junk, case], capture_output=True,
                            text=True, timeout=30)
        check(fr.returncode == 4 and f"has no case '{case}'" in fr.stderr,
              f"explain of a file of no lines: {fr.returncode} {fr.stderr}")
        fr = subprocess.run([args.qualctl, "explain", os.path.join(root, "gone.jsonl"), case],
                            capture_output=True, text=True, timeout=30)
        check(fr.returncode == 4 and "cannot read" in fr.stderr and "gone.jsonl" in fr.stderr,
              f"explain of a missing file: {fr.returncode} {fr.stderr}")


SCENARIOS = {
    "figures": scenario_figures,
    "identical": scenario_identical,
    "no_tool": scenario_no_tool,
    "amd": scenario_amd,
    "compile_user": scenario_compile_user,
    "kept": scenario_kept,
    "cli": scenario_cli,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--quald", "--qualctl", "--worker", "--compile-helper", "--nvrtc", "--nvrtc-alt",
              "--shim-slow", "--nvdisasm", "--cuobjdump", "--hiprtc", "--objdump"):
        ap.add_argument(o, required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.qual_run = args.worker
    if args.scenario == "compile_user" and os.geteuid() != 0:
        print("skipped: --compile-user needs root")
        return 77
    return svc.run_scenario(args.scenario, SCENARIOS[args.scenario], args,
                            prefix="qual-explain-", limit=170)


if __name__ == "__main__":
    sys.exit(main())
