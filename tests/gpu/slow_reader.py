#!/usr/bin/env python3
"""A client that reads slowly, for tests/gpu/slow_reader.sh.

    slow_reader.py http SOCKET PATH RATE OUT     GET PATH over quald's HTTP Unix socket
    slow_reader.py show SOCKET JOB RATE OUT      a control `show` of JOB on quald's socket
    slow_reader.py status SOCKET SECONDS OUT     a control `status` every 0.2 s for SECONDS
    slow_reader.py check REF KIND:FILE...        each reader's lines against REF

The readers take at most RATE bytes a second through a small receive buffer,
so that quald's side of the connection stays full for as long as the read
lasts, and write what they got to OUT (the HTTP body without its headers,
de-chunked; the show reply's lines). `status` writes one latency in
milliseconds per line. Standard library only: it runs on the GPU machine.
"""
import json
import socket
import sys
import time

CHUNK = 4096


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.connect(path)
    return s


def read_slowly(s, rate, out):
    """Reads until EOF at no more than rate bytes a second into out."""
    got = 0
    start = time.monotonic()
    while True:
        data = s.recv(CHUNK)
        if not data:
            break
        out.write(data)
        got += len(data)
        ahead = got / rate - (time.monotonic() - start)
        if ahead > 0:
            time.sleep(ahead)
    return got


def dechunk(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" not in head.lower():
        return head, body
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return head, bytes(out)


def http(sock, path, rate, out_path):
    s = connect(sock)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
    import io
    buf = io.BytesIO()
    n = read_slowly(s, rate, buf)
    head, body = dechunk(buf.getvalue())
    with open(out_path, "wb") as f:
        f.write(body)
    print(f"http {path}: {n} bytes in, {len(body)} bytes of body, "
          f"status {head.split(b' ', 2)[1].decode() if head else '?'}")


def show(sock, job, rate, out_path):
    s = connect(sock)
    s.sendall((json.dumps({"op": "show", "job": job}) + "\n").encode())
    s.shutdown(socket.SHUT_WR)
    with open(out_path, "wb") as f:
        n = read_slowly(s, rate, f)
    print(f"show {job}: {n} bytes")


def status(sock, seconds, out_path):
    end = time.monotonic() + seconds
    worst = 0.0
    with open(out_path, "w") as f:
        while time.monotonic() < end:
            t0 = time.monotonic()
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            s.sendall(b'{"op":"status"}\n')
            data = b""
            while not data.endswith(b"\n"):
                more = s.recv(65536)
                if not more:
                    break
                data += more
            s.close()
            ms = (time.monotonic() - t0) * 1000
            worst = max(worst, ms)
            f.write(f"{ms:.2f}\n")
            time.sleep(0.2)
    print(f"status: worst {worst:.1f} ms")


def lines_of(kind, path):
    """The job's lines a reader got, as bytes: a show's after its reply
    line, an event stream's data fields, the HTTP job's "lines" array
    (objects, compared after a parse)."""
    raw = open(path, "rb").read()
    if kind == "show":
        return raw.split(b"\n")[1:-1]
    if kind == "events":  # the message events' data; `event: end` is not a line
        got = []
        for event in raw.split(b"\n\n"):
            fields = event.split(b"\n")
            if any(f.startswith(b"event:") for f in fields):
                continue
            got += [f[len(b"data: "):] for f in fields if f.startswith(b"data: ")]
        return got
    if kind == "job":
        return json.loads(raw)["lines"]
    raise SystemExit(f"unknown reader kind '{kind}'")


def check(ref_path, readers):
    ref = [l for l in open(ref_path, "rb").read().split(b"\n")[:-1]
           if json.loads(l).get("type") != "reply"]
    verdict = json.loads(ref[-1])
    ok = verdict.get("type") == "verdict"
    print(f"stored: {len(ref)} lines, {sum(len(l) + 1 for l in ref)} bytes, "
          f"verdict {verdict.get('verdict')}")
    for spec in readers:
        kind, path = spec.split(":", 1)
        got = lines_of(kind, path)
        if kind == "job":
            same = got == [json.loads(l) for l in ref]
        else:
            same = got == ref
        last = got[-1] if got else None
        if isinstance(last, bytes):
            last = json.loads(last)
        print(f"{spec}: {len(got)} lines, {'identical to the stored log' if same else 'DIFFERENT'}, "
              f"verdict {last.get('verdict') if last else None}")
        ok = ok and same
    print(f"readers: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    mode = sys.argv[1]
    if mode == "http":
        http(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
    elif mode == "show":
        show(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
    elif mode == "status":
        status(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    elif mode == "check":
        sys.exit(check(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(f"unknown mode '{mode}'")


if __name__ == "__main__":
    main()
