#!/usr/bin/python3
"""Checks every relative link of every .md file below ROOT (an installed
docdir): usage: doc_links.py ROOT.

A link is an inline one, [text](target) or ![alt](target), or a reference
definition, [label]: target, outside code blocks and code spans. Links with
a scheme (https:, mailto:, file:) are not checked; every other target must
be a file or folder inside ROOT, and a #fragment on a .md target (or alone,
for the file itself) must be one of its headings' anchors, as GitHub makes
them. Exits 0 when all resolve, 1 listing each that does not."""
import os
import re
import sys

INLINE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose(text):
    """The lines of text outside fenced and indented code blocks, with code
    spans blanked, numbered from 1."""
    fence = None
    prev_blank = True
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if prev_blank and line.startswith("    "):
            continue  # an indented code block (it goes on while indented)
        prev_blank = not line.strip()
        yield n, re.sub(r"(`+).*?\1", "", line)


def anchors(path, cache={}):
    """GitHub's heading anchors of a .md file: lower case, punctuation but
    hyphens and underscores dropped, spaces as hyphens, repeats numbered."""
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        seen = {}
        out = set()
        for _, line in prose(text):
            m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            k = seen.get(slug, 0)
            seen[slug] = k + 1
            out.add(slug if k == 0 else f"{slug}-{k}")
        cache[path] = out
    return cache[path]


def check(root):
    root = os.path.realpath(root)
    bad, count, files = [], 0, 0
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            files += 1
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for n, line in prose(text):
                targets = INLINE.findall(line)
                m = REFDEF.match(line)
                if m:
                    targets.append(m.group(1))
                for t in targets:
                    if SCHEME.match(t):
                        continue
                    count += 1
                    target, _, frag = t.partition("#")
                    dest = os.path.realpath(os.path.join(dirpath, target)) if target else path
                    where = f"{rel}:{n}: '{t}'"
                    if dest != root and not dest.startswith(root + os.sep):
                        bad.append(f"{where} leads outside {root}")
                    elif not os.path.exists(dest):
                        bad.append(f"{where}: no {os.path.relpath(dest, root)}")
                    elif frag and dest.endswith(".md") and frag not in anchors(dest):
                        bad.append(f"{where}: no heading with anchor '#{frag}'")
    if files == 0:
        bad.append(f"no .md file below {root}")
    for b in bad:
        print(b)
    if not bad:
        print(f"{count} relative links in {files} .md files below {root}: all resolve")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1]))
