#!/usr/bin/env python3
"""The house limits (docs/style.md, "Files a person can hold"): no C source
file outside tests/ (and build folders) over 1,000 lines, and no function
over 150 lines.

    source_limits.py ROOT       lists every file and function over a limit;
                                exit status 1 when there is one
    source_limits.py --self-test
                                plants a 1,001-line file and a 151-line
                                function in a scratch tree and checks that
                                both are reported, and that a 150-line
                                function and data initialisers are not

A function is a body that opens at column 0: a line that is '{' alone after
a declarator, or a declarator line ending in '{' (the project writes
definitions as `type\\nname(args)\\n{`), and ends at the next '}' at column
0. Initialisers of data (`= {`, struct/enum/union definitions) are not
functions. Its length is the lines between the braces."""
import os
import re
import sys
import tempfile

MAX_FILE, MAX_FN = 1000, 150
DATA = re.compile(r"^(static\s+)?(const\s+)?(struct|enum|union|typedef)\b[^(]*\{$")


def _opens_function(line):
    if line == "{":
        return True
    return (line.endswith("{") and line[:1] not in ("", " ", "\t", "#", "/", "*", "}")
            and "(" in line and "=" not in line and not DATA.match(line))


def check_file(path, rel):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    found = []
    if len(lines) > MAX_FILE:
        found.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE})")
    start = name = None
    for i, line in enumerate(lines):
        if start is None and _opens_function(line):
            start = i
            j = i - 1 if line == "{" else i
            while j > 0 and "(" not in lines[j]:
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j])
            name = m.group(1) if m else "?"
        elif start is not None and line.startswith("}"):
            if i - start - 1 > MAX_FN:
                found.append(f"{rel}:{start + 1}: {name}() is {i - start - 1} lines "
                             f"(at most {MAX_FN})")
            start = None
    return found


def check_tree(root):
    found = []
    for d, subs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        top = rel.split(os.sep)[0]
        if rel != "." and (top == "tests" or top.startswith(("build", "."))):
            subs[:] = []
            continue
        subs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                p = os.path.join(d, f)
                found += check_file(p, os.path.relpath(p, root))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "daemon"))
        os.makedirs(os.path.join(root, "tests"))
        body = "\tx++;\n"
        text = ("static int table[] = {\n" + "\t1,\n" * 400 + "};\n"
                + "int\nok(int x)\n{\n" + body * (MAX_FN - 1) + "\treturn x;\n}\n")
        too_long_at = text.count("\n") + 1
        text += "int too_long(int x) {\n" + body * (MAX_FN + 1) + "}\n"
        text += "/* pad */\n" * (MAX_FILE + 1 - text.count("\n"))
        with open(os.path.join(root, "daemon", "big.c"), "w") as f:
            f.write(text)
        with open(os.path.join(root, "tests", "t.c"), "w") as f:
            f.write("void\nt(void)\n{\n" + body * 2000 + "}\n")
        found = check_tree(root)
        want = [f"daemon/big.c: {MAX_FILE + 1} lines (at most {MAX_FILE})",
                f"daemon/big.c:{too_long_at}: too_long() is {MAX_FN + 1} lines "
                f"(at most {MAX_FN})"]
        if found != want:
            print("self-test: expected", want, "got", found, file=sys.stderr)
            return 1
    print("source_limits: self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    found = check_tree(argv[1] if len(argv) > 1 else ".")
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
