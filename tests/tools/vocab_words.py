#!/usr/bin/env python3
"""The shared vocabulary is written once (proto/vocab.h): no C source outside
proto/vocab.c and proto/vocab.h may write a verdict's or a job state's word as
a string literal, since a second copy of a word is a second place to change it
and to get it wrong (issue 27). Comments, tests/ and docs/ are not looked at.
A literal that is the same word but not the vocabulary (a JSON key such as a
calibration record's "slower" count) says so with the marker "vocab:key" in a
comment on its line.

  vocab_words.py ROOT     lists every such literal under ROOT; exit 1 if any
  vocab_words.py --plant  the check of the check: in a scratch tree a clean
                          file, a marked key, a word in a comment and the
                          table itself pass, and a planted literal is found;
                          exit 0 when both hold
"""
import os
import re
import sys
import tempfile

WORDS = ("regression", "improvement", "neutral", "equivalent", "slower", "faster",
         "inconclusive", "identical", "not_timed", "not_applicable",
         # job states
         "queued", "running", "done", "cancelled", "interrupted")
SKIP_DIRS = {"tests", "docs", ".git"}
TABLE = {os.path.join("proto", "vocab.c"), os.path.join("proto", "vocab.h")}
TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def literals(text):
    """(line number, literal's value, the line) of every string literal."""
    lines = text.split("\n")
    for m in TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith('"'):
            n = text.count("\n", 0, m.start())
            yield n + 1, tok[1:-1], lines[n]


def check(root):
    found = []
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs
                         if not (rel == "." and (x in SKIP_DIRS or x.startswith("build"))))
        for f in sorted(files):
            path = os.path.normpath(os.path.join(rel, f))
            if not f.endswith((".c", ".h")) or path in TABLE:
                continue
            with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for n, value, line in literals(text):
                hit = f"{path}:{n}: {line.strip()}"
                if value in WORDS and "vocab:key" not in line and hit not in found:
                    found.append(hit)
    if found:
        print("vocabulary words written outside proto/vocab.h "
              "(use its enums and vocab_*_name()):")
        print("\n".join(found))
    return 1 if found else 0


def plant():
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "proto/vocab.c": 'const char *w = "neutral";\n',
            "tests/t.c": 'const char *w = "running";\n',
            "daemon/ok.c": 'json_object_get(o, "slower"); /* vocab:key */\n'
                           '/* a job "queued" in a comment */\n'
                           'const char *s = "done with it";\n',
        }
        for path, text in files.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as fh:
                fh.write(text)
        if check(tmp) != 0:
            print("a clean tree failed the check")
            return 1
        with open(os.path.join(tmp, "daemon", "planted.c"), "w") as fh:
            fh.write('if (!strcmp(v, "regression"))\n')
        if check(tmp) == 0:
            print("the planted literal was not found")
            return 1
        print("the planted literal was found")
        return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: vocab_words.py ROOT | --plant")
    sys.exit(plant() if sys.argv[1] == "--plant" else check(sys.argv[1]))
