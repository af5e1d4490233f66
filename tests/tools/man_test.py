#!/usr/bin/python3
"""The man pages (docs/man/) against the programs they describe, and lint.

  man_test.py options PAGE PROGRAM [--subcommands]
      Runs PROGRAM --help (and, with --subcommands, `PROGRAM help`, then
      `PROGRAM help CMD` and `PROGRAM CMD --help` for every command that help
      lists as `PROGRAM CMD ...`), takes every long option the texts name,
      and fails naming each one PAGE does not mention (and, with
      --subcommands, each command). The options are read from the built
      program, so an option added to a program without its page fails here.
  man_test.py lint PAGE...
      groff -man -ww -z on each page: any warning fails (as does a page
      whose NAME, SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, FILES,
      EXAMPLES or SEE ALSO section is missing).

Exits 0 when all hold, 1 naming what does not."""
import re
import subprocess
import sys

SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "FILES",
            "EXAMPLES", "SEE ALSO"]
# A long option: two dashes and a name, not inside a longer word or option.
OPTION = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*[a-z0-9]")


def page_text(path):
    """The page's source with the escapes that break up words undone:
    \\- is a dash, font changes and \\& vanish, \\e is a backslash."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", text)
    return (text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
            .replace("\\%", ""))


def help_text(argv):
    """stdout and stderr of argv; the exit status does not matter here
    (a program may print its usage to stderr with status 4)."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30)
    if not p.stdout.strip():
        sys.exit(f"'{' '.join(argv)}' printed nothing (exit {p.returncode})")
    return p.stdout


def options(page, program, subcommands):
    texts = {"--help": help_text([program, "--help"])}
    commands = []
    if subcommands:
        top = help_text([program, "help"])
        texts["help"] = top
        name = re.escape(program.rsplit("/", 1)[-1])
        commands = sorted(set(re.findall(rf"^\s+{name} ([a-z][a-z-]*)", top, re.M)))
        if not commands:
            sys.exit(f"'{program} help' lists no commands")
        for c in commands:
            texts[f"help {c}"] = help_text([program, "help", c])
            texts[f"{c} --help"] = help_text([program, c, "--help"])
    text = page_text(page)
    mentioned = set(OPTION.findall(text))
    problems = []
    for c in commands:
        # A command is documented where the page names it as a word.
        if not re.search(rf"(?<![\w-]){re.escape(c)}(?![\w-])", text):
            problems.append(f"the command '{c}' ('{program} help' lists it)")
    seen = {}
    for where, t in texts.items():
        for opt in OPTION.findall(t):
            seen.setdefault(opt, where)
    for opt, where in sorted(seen.items()):
        if opt not in mentioned:
            problems.append(f"the option '{opt}' (from '{program} {where}')")
    if problems:
        print(f"{page} does not document:", *problems, sep="\n  ")
        return 1
    print(f"{page}: {len(seen)} options" +
          (f" and {len(commands)} commands" if commands else "") + " documented")
    return 0


def lint(pages):
    bad = 0
    for page in pages:
        p = subprocess.run(["groff", "-man", "-ww", "-z", page], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        said = p.stdout.strip()
        if p.returncode != 0 or said:
            print(f"{page}: groff -man -ww -z (exit {p.returncode}):\n{said}")
            bad = 1
        with open(page, encoding="utf-8") as f:
            heads = [h.strip().strip('"') for h in re.findall(r"^\.SH (.*)$", f.read(), re.M)]
        missing = [s for s in SECTIONS if s not in heads]
        if missing:
            print(f"{page}: no section {', '.join(missing)}")
            bad = 1
    if not bad:
        print(f"{len(pages)} pages: no warnings")
    return bad


def main(argv):
    if len(argv) >= 3 and argv[0] == "options" and argv[3:] in ([], ["--subcommands"]):
        return options(argv[1], argv[2], argv[3:] == ["--subcommands"])
    if len(argv) >= 2 and argv[0] == "lint":
        return lint(argv[1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
