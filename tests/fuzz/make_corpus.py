#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/) from real lines.

usage: make_corpus.py [REPO]   (default: the repository this file is in)

request/  every request line of tests/data/requests/{good,bad}.txt, one per
          file with its newline, and a few streams for the framing: several
          requests with blank lines between them, CRLF endings, a last request
          without its newline, a line longer than the fuzz target's framing
          limit (256 bytes) with and without its newline; and requests for
          the paths the data files leave out (made-*).
relay/    worker lines as the engine printed them on the H200
          (docs/gpu-runs/2026-11-29/*.jsonl): the first line of each type
          from each run, and two pairs; and what a worker must not print but
          might (not JSON, not an object, an object that already has job or
          seq, whitespace around it, a blank line). One line per file: the
          target relays an input's first line.

The files are named by what they hold, so a finding's neighbours are easy to
read. Run it again after changing the data files; it replaces the files it
made and keeps the inputs that found bugs (found-*: those are added by hand,
with the fix)."""
import glob
import json
import os
import sys

REPO = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(REPO, "tests", "fuzz", "corpus")
RUNS = os.path.join(REPO, "docs", "gpu-runs", "2026-11-29")


def write(folder, name, data):
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def request_lines():
    lines = []
    for name in ("good.txt", "bad.txt"):
        with open(os.path.join(REPO, "tests", "data", "requests", name), "rb") as f:
            for raw in f:
                line = raw.rstrip(b"\n")
                if not line or line.startswith(b"#") or line.startswith(b"=> "):
                    continue
                lines.append((name[:-4], line))
    return lines


def make_request(folder):
    counts = {}
    lines = request_lines()
    for kind, line in lines:
        counts[kind] = counts.get(kind, 0) + 1
        write(folder, f"{kind}-{counts[kind]:03d}", line + b"\n")
    submit = (b'{"op":"submit","baseline":"/usr/local/cuda/lib64/libnvrtc.so.13",'
              b'"candidate":"/usr/local/cuda/lib64/libnvrtc.alt.so.13",'
              b'"compile_only":true,"cases":["gemm_i8-256x512x256"],"id":7}')
    write(folder, "stream-several",
          b'{"op":"status"}\n\n  \t\n{"op":"list","limit":3}\n' + submit +
          b'\n{"op":"watch","after_job":"j000001","after_seq":4}\n')
    write(folder, "stream-crlf", b'{"op":"status"}\r\n\r\n{"op":"show","job":"j000002"}\r\n')
    write(folder, "stream-no-newline", b'{"op":"list"}\n{"op":"cancel","job":"j000003"}')
    long_path = b"/" + b"x" * 300
    write(folder, "stream-long-line",
          b'{"op":"submit","baseline":"' + long_path + b'","candidate":"/c"}\n'
          b'{"op":"status"}\n')
    write(folder, "stream-oversize-at-eof",
          b'{"op":"status"}\n{"op":"submit","baseline":"' + long_path + b'"')
    # Paths the data files do not take (found missing by gcov over the first
    # long run's corpus): libFuzzer cannot learn field names from jansson's
    # lookups, which are not instrumented.
    base = b'{"op":"submit","baseline":"/a","candidate":"/b"'
    extra = {
        "compile-timeout": b',"compile_timeout":2.5,"follow":false,"compile_only":true',
        "compile-timeout-small": b',"compile_timeout":0.01',
        "compile-timeout-string": b',"compile_timeout":"2"',
        "empty-case-entry": b',"cases":["gemm_i8-256x512x256",""]',
        "empty-cases": b',"cases":[]',
        "empty-options": b',"baseline_options":[],"candidate_options":["-G"]',
        "path-too-long": b',"pairs":31,"seed":1,"alpha":0.01,"margin":0' +
                         b',"candidate_options":["' + b"o" * 4100 + b'"]',
    }
    for name, more in extra.items():
        write(folder, f"made-{name}", base + more + b"}\n")
    # A quoted name cut at 64 bytes inside a UTF-8 character.
    write(folder, "made-clip-utf8",
          '{"op":"' + "x" * 63 + "\u00e9\u00e9" + '"}\n')  # written as UTF-8


def make_relay(folder):
    n = 0
    for path in sorted(glob.glob(os.path.join(RUNS, "*.jsonl"))):
        run = os.path.basename(path)[:-6]
        seen = {}
        with open(path, "rb") as f:
            for raw in f:
                line = raw.rstrip(b"\n")
                try:
                    kind = json.loads(line).get("type", "untyped")
                except ValueError:
                    kind = "bad"
                seen[kind] = seen.get(kind, 0) + 1
                if seen[kind] <= (2 if kind == "pair" else 1):
                    write(folder, f"{run}-{kind}-{seen[kind]}", line + b"\n")
                    n += 1
    odd = {
        "not-json": b"warning: the runtime printed this to stdout",
        "not-object-array": b'[{"type":"pair"}]',
        "not-object-number": b"42",
        "not-object-string": b'"verdict"',
        "truncated": b'{"type":"pair","case":"gemm_i8-256x512x256","i":3,"ba',
        "trailing-garbage": b'{"type":"pair"} x',
        "two-objects": b'{"type":"pair"}{"type":"pair"}',
        "empty-object": b"{}",
        "spaced-empty-object": b" { } \r",
        "whitespace-around": b'\t {"type":"case_verdict","verdict":"pass"}  \r',
        "has-job": b'{"type":"error","job":"j999999","arm":"candidate"}',
        "has-seq": b'{"type":"verdict","verdict":"pass","seq":-1}',
        "escaped-job-key": b'{"type":"pair","jo\\u0062":1}',
        "duplicate-keys": b'{"type":"pair","i":1,"i":2}',
        "big-numbers": b'{"type":"pair","ns":1.0000000000000002e308,"n":-9223372036854775808}',
        "too-big-integer": b'{"type":"pair","n":9223372036854775808}',
        "invalid-utf8": b'{"type":"error","message":"\xff\xfe"}',
        "invalid-utf8-text": b"compiler said: \xc3\x28 and more",
        "long-not-json": b"x" * 300,
        "blank": b" \t\r",
    }
    for name, data in odd.items():
        write(folder, f"odd-{name}", data if data.endswith(b"\n") else data + b"\n")


def main():
    for name, make in (("request", make_request), ("relay", make_relay)):
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        for f in os.listdir(folder):
            if not f.startswith("found-"):
                os.remove(os.path.join(folder, f))
        make(folder)
        print(f"{folder}: {len(os.listdir(folder))} files")


if __name__ == "__main__":
    main()
