#!/usr/bin/env python3
"""Loads quald's dashboard (daemon/web/) in a real headless Chromium and checks
what it shows against quald's own API.

    browser_test.py --base http://127.0.0.1:PORT --job ID --out DIR
                    [--code-job ID] [--chromium PATH] [--expect-live]
                    [--label K=V] [--timeout S]

Chromium is driven through the DevTools protocol over a WebSocket
(python3-websocket, Debian's): no Selenium or Playwright. Checked:

  /              the job's row in the recent jobs, with its state
  /jobs/ID       with --expect-live, that the page grows while the job runs
                 (lines received or pairs drawn, two reads at least 0.5 s
                 apart, the page not reloaded); the verdict shown within the
                 timeout; one row per case_verdict line with its verdict and
                 change in percent (as qual-view prints it), the lines count
                 and the pairs drawn per case equal to the API's; a full-page
                 screenshot DIR/job-ID.png
  /jobs/CODE     with --code-job, a job with code lines (e.g. compile-only):
                 per code line, every figure of both arms and its change in
                 [data-code-case] as the line has them, changed rows
                 highlighted, the disassembler's error, and the diff in a
                 closed <details> as text only (no element made of it);
                 loaded before the job ends when --expect-live (the lines
                 come over the event stream), then again once it has ended
                 (the stored lines); DIR/code-ID.png
  /jobs/UNKNOWN  shows quald's 404 message
  /history       (and /history?label=K=V with --label) one point and one
                 table row per job x case of /api/history, one plot per case;
                 DIR/history.png (and DIR/history-label.png)
  every page     no console error, no uncaught exception

Each screenshot must be a PNG of plausible size that is not blank. Exit 0
when every check passes, 1 naming each that failed, 2 when the browser or
the server cannot be used at all. Usable by hand against any server that
speaks the API (e.g. a mock replaying docs/gpu-runs/ lines)."""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib

try:
    import websocket  # python3-websocket
except ImportError:
    # A python3 other than Debian's (pyenv, a venv) does not see Debian's
    # packages; the Debian package is what install-deps.sh installs.
    sys.path.append("/usr/lib/python3/dist-packages")
try:
    import websocket
except ImportError:  # pragma: no cover
    sys.exit("browser_test: python3-websocket is needed (apt-get install python3-websocket)")

# The job states quald names (docs/protocol.md, "Job states").
STATES = {"queued", "running", "done", "cancelled", "interrupted"}


class Fatal(Exception):
    """Nothing further can be checked: the browser or the server is unusable."""


class Browser:
    """One headless Chromium and a DevTools session on its first page."""

    def __init__(self, chromium, workdir):
        self.profile = os.path.join(workdir, "profile")
        os.makedirs(self.profile)
        self.log = open(os.path.join(workdir, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--user-data-dir=" + self.profile, "--remote-debugging-port=0",
             "--remote-allow-origins=*", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-dev-shm-usage", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--mute-audio",
             "--window-size=1280,900", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        self.ws = None
        self.next_id = 0
        self.console = []      # (page url, text) of every error seen
        self.ignore = []       # substrings of error texts expected on purpose
        port = self._port()
        self.ws = self._connect(port)
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")

    def _port(self):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Fatal("chromium exited with status %d before it listened (see %s)"
                            % (self.proc.returncode, self.log.name))
            try:
                with open(path) as f:
                    first = f.readline().strip()
                if first:
                    return int(first)
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise Fatal("chromium wrote no DevToolsActivePort within 60 s")

    def _connect(self, port):
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port, timeout=5) as r:
                    targets = json.load(r)
                pages = [t for t in targets if t.get("type") == "page" and t.get("webSocketDebuggerUrl")]
                if pages:
                    return websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=30,
                                                       suppress_origin=True)
            except (OSError, ValueError, websocket.WebSocketException):
                pass
            if time.time() > deadline:
                raise Fatal("cannot open a DevTools session on chromium's port %d" % port)
            time.sleep(0.2)

    def _event(self, msg):
        method, p = msg.get("method"), msg.get("params", {})
        text = None
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = "console.%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            text = "uncaught: %s %s" % (d.get("text", ""), d.get("exception", {}).get("description", ""))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            text = "%s: %s %s" % (e.get("source", "log"), e.get("text", ""), e.get("url", ""))
        if text and not any(s in text for s in self.ignore):
            self.console.append(text.strip())

    def call(self, method, params=None, timeout=60):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
        deadline = time.time() + timeout
        while True:
            self.ws.settimeout(max(0.1, deadline - time.time()))
            try:
                msg = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                raise Fatal("chromium did not answer %s within %d s" % (method, timeout))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise Fatal("%s failed: %s" % (method, msg["error"].get("message")))
                return msg.get("result", {})
            if "method" in msg:
                self._event(msg)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise Fatal("evaluating %r threw: %s" % (expr[:80], r["exceptionDetails"].get("text")))
        return r.get("result", {}).get("value")

    def goto(self, url):
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise Fatal("cannot load %s: %s" % (url, r["errorText"]))
        if not self.wait("document.readyState === 'complete' && location.href === %s" % json.dumps(url), 30):
            raise Fatal("%s did not finish loading within 30 s" % url)

    def wait(self, expr, timeout, every=0.25):
        """Polls a JS expression until it is truthy; its last value."""
        deadline = time.time() + timeout
        while True:
            v = self.eval(expr)
            if v or time.time() > deadline:
                return v
            time.sleep(every)

    def screenshot(self, path):
        m = self.call("Page.getLayoutMetrics")
        size = m.get("cssContentSize") or m.get("contentSize")
        height = int(min(max(size["height"], 600), 16000))
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False})
        time.sleep(0.3)   # let the wider layout settle before the capture
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        self.call("Emulation.clearDeviceMetricsOverride")
        import base64
        with open(path, "wb") as f:
            f.write(base64.b64decode(shot["data"]))

    def close(self):
        try:
            if self.ws:
                self.ws.close()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ---- PNG -----------------------------------------------------------------

def png_pixels(data, max_rows=None):
    """(width, height, bytes a pixel, rows of RGB(A) bytes) of an 8-bit RGB or
    RGBA PNG; only the first max_rows rows are unfiltered when given (pure
    Python takes about a second a megapixel)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError("bad CRC in chunk %r" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    if not ihdr:
        raise ValueError("no IHDR")
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("not 8-bit RGB/RGBA non-interlaced (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError("image data is %d bytes, %d expected" % (len(raw), h * (stride + 1)))
    rows, prev = [], bytearray(stride)
    for y in range(h if max_rows is None else min(h, max_rows)):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError("unknown filter %d in row %d" % (f, y))
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def check_png(path, min_w=800, min_h=400):
    """None when the file is a plausible, non-blank screenshot, else why not."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        # The decompressed size is checked for every row; the colours are
        # counted over the top 1500, which hold the header and the first
        # table or plots of any of the pages.
        w, h, bpp, rows = png_pixels(data, 1500)
    except (OSError, ValueError, zlib.error, struct.error) as e:
        return "%s is not a readable PNG: %s" % (path, e)
    if w < min_w or h < min_h:
        return "%s is %dx%d, expected at least %dx%d" % (path, w, h, min_w, min_h)
    colours, total = {}, 0
    for y in range(0, len(rows), 3):
        r = rows[y]
        for x in range(0, w, 3):
            px = r[x * bpp:x * bpp + 3]
            colours[px] = colours.get(px, 0) + 1
            total += 1
    top = max(colours.values())
    if len(colours) < 16 or (total - top) / total < 0.02:
        return "%s looks blank: %d colours, %.1f%% of pixels differ from the background" % (
            path, len(colours), 100.0 * (total - top) / total)
    return None


# ---- what the page must show ----------------------------------------------

def get_json(base, path):
    try:
        with urllib.request.urlopen(base + path, timeout=30) as r:
            return json.load(r)
    except (OSError, ValueError) as e:
        raise Fatal("cannot GET %s%s: %s" % (base, path, e))


def change_text(r):
    """qual-view's change column for a ratio: '+1.23%', '-' when none."""
    if not isinstance(r, (int, float)) or isinstance(r, bool) or not r > 0 or r != r or r == float("inf"):
        return "-"
    return "%+.2f%%" % (100 * (r - 1))


def counts_in_geomean(cv):
    return cv.get("verdict") not in (None, "fail", "not_timed", "not_applicable") and \
        change_text(cv.get("ratio_median")) != "-"


def pairs_drawn(lines):
    """Pairs the page draws per case: a retake's pair replaces its attempt."""
    n, seen = {}, set()
    for l in lines:
        if l.get("type") != "pair":
            continue
        key = (l.get("case"), l.get("session", 0), l.get("pair"))
        if l.get("retake") and key in seen:
            continue
        seen.add(key)
        n[l.get("case")] = n.get(l.get("case"), 0) + 1
    return n


class Test:
    def __init__(self, args, browser):
        self.a, self.b, self.failures = args, browser, []

    def fail(self, what):
        print("FAIL: " + what, flush=True)
        self.failures.append(what)

    def ok(self, what):
        print("ok: " + what, flush=True)

    def errors_on(self, page):
        if self.b.console:
            for e in self.b.console:
                self.fail("%s: console error: %s" % (page, e))
            self.b.console.clear()

    def index(self):
        a, b = self.a, self.b
        b.goto(a.base + "/")
        sel = "#jobs tr[data-job=%s]" % json.dumps(a.job)
        state = b.wait("(document.querySelector(%s) || {dataset: {}}).dataset.state" % json.dumps(sel), 15)
        if not state:
            self.fail("/: job %s is not among the recent jobs" % a.job)
        elif state not in STATES:
            self.fail("/: job %s shows state %r, not one of quald's" % (a.job, state))
        else:
            api = {j["job"]: j["state"] for j in get_json(a.base, "/api/jobs?limit=50").get("jobs", [])}
            shown = b.eval("document.querySelector(%s).dataset.state" % json.dumps(sel))
            if a.job in api and api[a.job] != shown and not a.expect_live:
                self.fail("/: job %s shows state %r, /api/jobs says %r" % (a.job, shown, api[a.job]))
            else:
                self.ok("/: job %s listed, state %s" % (a.job, shown))
        slots = b.eval("document.querySelectorAll('#slots tbody tr').length")
        if not slots:
            self.fail("/: the slots table is empty")
        self.errors_on("/")

    def job(self):
        a, b = self.a, self.b
        url = a.base + "/jobs/" + urllib.parse.quote(a.job)
        b.goto(url)
        counters = ("[+document.body.dataset.lines || 0, [...document.querySelectorAll('.case[data-pairs]')]"
                    ".reduce((s, e) => s + (+e.dataset.pairs), 0), (document.getElementById('job-verdict') || {})"
                    ".textContent || '']")
        if a.expect_live:
            b.eval("window.__browserTestMark = 1")
            # The first lines arrive with the fetch; give the page a moment.
            b.wait("+document.body.dataset.lines > 0", 15)
            lines0, pairs0, verdict0 = b.eval(counters)
            t0 = time.time()
            if verdict0:
                self.fail("%s: the job already had its verdict (%s) when the page loaded: nothing to see live"
                          % (url, verdict0))
            else:
                grown = False
                deadline = t0 + 60
                while time.time() < deadline:
                    time.sleep(0.5)
                    lines1, pairs1, _ = b.eval(counters)
                    if time.time() - t0 >= 0.5 and (lines1 > lines0 or pairs1 > pairs0):
                        grown = True
                        break
                if not b.eval("window.__browserTestMark === 1"):
                    self.fail("%s: the page reloaded while the job ran" % url)
                elif not grown:
                    self.fail("%s: nothing new on the page in 60 s while the job ran (lines %d, pairs %d)"
                              % (url, lines0, pairs0))
                else:
                    self.ok("%s: live: lines %d -> %d, pairs drawn %d -> %d in %.1f s, no reload"
                            % (url, lines0, lines1, pairs0, pairs1, time.time() - t0))
        verdict = b.wait("(document.getElementById('job-verdict') || {}).textContent", a.timeout)
        if not verdict:
            self.fail("%s: no job verdict shown (#job-verdict empty) after %d s" % (url, a.timeout))
            self.errors_on(url)
            return
        # Let the page draw what came with the verdict (it draws every 200 ms).
        b.wait("document.body.dataset.done === '1'", 5)
        time.sleep(0.5)
        # quald says running until the verdict line is on disk, which may
        # come a moment after the page has it.
        deadline = time.time() + 10
        while True:
            job = get_json(a.base, "/api/jobs/" + urllib.parse.quote(a.job))
            if job.get("state") not in ("queued", "running") or time.time() > deadline:
                break
            time.sleep(0.2)
        lines = job.get("lines", [])
        vl = [l for l in lines if l.get("type") == "verdict"]
        if vl and vl[-1].get("verdict") != verdict:
            self.fail("%s: verdict shown %r, the verdict line says %r" % (url, verdict, vl[-1].get("verdict")))
        state = b.eval("document.getElementById('job-state').textContent")
        if state != job.get("state"):
            self.fail("%s: state shown %r, /api/jobs/ID says %r" % (url, state, job.get("state")))
        shown_lines = b.eval("+document.body.dataset.lines")
        if shown_lines != len(lines):
            self.fail("%s: the page took %s lines, the job has %d" % (url, shown_lines, len(lines)))
        rows = b.eval("Object.fromEntries([...document.querySelectorAll('#verdict-table tr[data-case-row]')]"
                      ".map(r => [r.dataset.caseRow, [r.dataset.verdict, r.querySelector('[data-change]')"
                      ".dataset.change, r.cells[5].textContent]]))")
        forest = set(b.eval("[...document.querySelectorAll('[data-forest-case]')].map(e => e.dataset.forestCase)"))
        cvs = [l for l in lines if l.get("type") == "case_verdict"]
        bad = 0
        for cv in cvs:
            name = cv.get("case")
            if name not in rows:
                self.fail("%s: no row for case %s in the verdict table" % (url, name))
                bad += 1
                continue
            v, change, cell = rows[name]
            want = change_text(cv.get("ratio_median")) if counts_in_geomean(cv) else "-"
            if v != cv.get("verdict"):
                self.fail("%s: case %s shows verdict %r, its case_verdict says %r" % (url, name, v, cv.get("verdict")))
                bad += 1
            if change != want or not cell.startswith(want):
                self.fail("%s: case %s shows change %r (%r), expected %s" % (url, name, change, cell, want))
                bad += 1
            if change_text(cv.get("ratio_median")) != "-" and name not in forest:
                self.fail("%s: case %s has no row in the forest plot" % (url, name))
                bad += 1
        if not cvs and not rows and vl and vl[-1].get("cases"):
            self.fail("%s: no verdict table rows, though the verdict line has cases" % url)
        drawn = b.eval("Object.fromEntries([...document.querySelectorAll('.case[data-case]')]"
                       ".map(e => [e.dataset.case, +e.dataset.pairs]))")
        for name, n in pairs_drawn(lines).items():
            if drawn.get(name) != n:
                self.fail("%s: case %s drew %s pairs, the job has %d" % (url, name, drawn.get(name), n))
                bad += 1
        for l in lines:
            if l.get("type") == "case" and l.get("case") not in drawn:
                self.fail("%s: no block for case %s" % (url, l.get("case")))
                bad += 1
        bad += self.code_shown(url, lines)
        if not bad:
            self.ok("%s: verdict %s, %d case rows match their case_verdict lines, %d lines, pairs %s"
                    % (url, verdict, len(cvs), len(lines), sum(pairs_drawn(lines).values())))
        shot = os.path.join(a.out, "job-%s.png" % a.job)
        b.screenshot(shot)
        why = check_png(shot)
        self.fail(why) if why else self.ok("screenshot " + shot)
        self.errors_on(url)

    # The figures of a code line the page shows, as docs/schema's code_arm
    # has them: (field, kind); mix classes are added per line.
    CODE_FIGURES = (("code_bytes", "int"), ("instructions", "int"), ("registers", "int"),
                    ("spill_stores", "int"), ("spill_loads", "int"), ("local_bytes", "int"),
                    ("shared_bytes", "int"), ("occupancy", "fraction"), ("blocks_per_sm", "int"),
                    ("warps_per_sm", "int"), ("limited_by", "word"))

    @staticmethod
    def code_value(arm, field):
        arm = arm if isinstance(arm, dict) else {}
        occ = arm.get("occupancy") if isinstance(arm.get("occupancy"), dict) else {}
        if field == "occupancy":
            return occ.get("fraction")
        if field in ("blocks_per_sm", "warps_per_sm", "limited_by"):
            return occ.get(field)
        if field.startswith("mix."):
            return (arm.get("mix") or {}).get(field[4:])
        return arm.get(field)

    def code_shown(self, url, lines):
        """Checks every code line of the job against [data-code-case]; the
        number of problems."""
        b, bad = self.b, 0
        codes = [l for l in lines if l.get("type") == "code"]
        shown = b.eval("""Object.fromEntries([...document.querySelectorAll('[data-code-case]')].map(e => [
            e.dataset.codeCase, {
              cells: [...e.querySelectorAll('td[data-code-field]')].map(td => [td.dataset.codeField,
                     td.dataset.arm, td.textContent, td.dataset.value === undefined ? null : td.dataset.value]),
              changed: [...e.querySelectorAll('tr.changed[data-code-row]')].map(r => r.dataset.codeRow),
              error: (e.querySelector('[data-code-error]') || {}).textContent || null,
              diff: e.querySelector('details[data-code-diff] pre') ? {
                open: e.querySelector('details[data-code-diff]').open,
                text: [...e.querySelector('details[data-code-diff] pre').children].map(s => s.textContent).join('\\n'),
                kids: [...e.querySelector('details[data-code-diff] pre').querySelectorAll('*')].map(k =>
                      k.tagName + '.' + k.className + '/' + k.childElementCount),
                added: [...e.querySelectorAll('pre .d-add')].reduce((n, s) => n + s.textContent.split('\\n').length, 0),
                removed: [...e.querySelectorAll('pre .d-del')].reduce((n, s) => n + s.textContent.split('\\n').length, 0),
              } : null,
              markup: e.querySelectorAll('script, b, img').length,
            }]))""")
        if set(shown) != {l.get("case") for l in codes}:
            self.fail("%s: code shown for cases %s, the job has code lines for %s"
                      % (url, sorted(shown), sorted(l.get("case") for l in codes)))
            return 1
        if b.eval("document.body.dataset.injected || ''"):
            self.fail("%s: markup from a diff ran (body[data-injected] set)" % url)
            bad += 1
        for l in codes:
            name, got = l["case"], shown[l["case"]]
            cells = {(f, arm): (text, value) for f, arm, text, value in got["cells"]}
            mix = []
            for arm in ("baseline", "candidate"):
                for k in (l.get(arm) or {}).get("mix") or {}:
                    if k not in mix:
                        mix.append(k)
            want_changed = set()
            for field, kind in self.CODE_FIGURES + tuple(("mix." + k, "int") for k in mix):
                vals = [self.code_value(l.get(arm), field) for arm in ("baseline", "candidate")]
                for arm, v in zip(("baseline", "candidate"), vals):
                    text, value = cells.get((field, arm), (None, None))
                    known = v is not None
                    if kind == "fraction":
                        ok = (value is not None and known and float(value) == v and text.endswith("%")) or \
                             (not known and text == "-")
                    else:
                        ok = text == (str(v) if known else "-") and value == (str(v) if known else None)
                    if not ok:
                        self.fail("%s: case %s, %s of the %s shows %r (value %r), its code line says %r"
                                  % (url, name, field, arm, text, value, v))
                        bad += 1
                text, value = cells.get((field, "change"), (None, None))
                if None not in vals and vals[0] != vals[1]:
                    want_changed.add(field)
                    if kind == "word":
                        ok = text == "%s → %s" % tuple(vals)
                    else:
                        ok = value is not None and abs(float(value) - (vals[1] - vals[0])) < 1e-12 and text and \
                            (kind != "int" or text.split(" ")[0] == "%+d" % (vals[1] - vals[0]))
                else:
                    ok = text == ""
                if not ok:
                    self.fail("%s: case %s, change of %s shows %r (value %r) for %r -> %r"
                              % (url, name, field, text, value, vals[0], vals[1]))
                    bad += 1
            if set(got["changed"]) != want_changed:
                self.fail("%s: case %s highlights %s as changed, its code line changes %s"
                          % (url, name, sorted(got["changed"]), sorted(want_changed)))
                bad += 1
            err = l.get("disassembly_error")
            if (err is None) != (got["error"] is None) or (err and err not in got["error"]):
                self.fail("%s: case %s shows disassembly error %r, its code line says %r" % (url, name, got["error"], err))
                bad += 1
            d = l.get("diff") if isinstance(l.get("diff"), dict) else None
            dt = d["text"] if d and d.get("text") else None
            if (dt is None) != (got["diff"] is None):
                self.fail("%s: case %s: diff block %s, its code line has %s"
                          % (url, name, "shown" if got["diff"] else "missing", "a diff" if dt else "none"))
                bad += 1
            elif dt:
                g = got["diff"]
                plus = sum(1 for s in dt.split("\n") if s.startswith("+"))
                minus = sum(1 for s in dt.split("\n") if s.startswith("-"))
                if g["text"].split("\n") != dt.rstrip("\n").split("\n"):
                    self.fail("%s: case %s: the diff block's text is not the code line's diff" % (url, name))
                    bad += 1
                if g["open"]:
                    self.fail("%s: case %s: the diff block is open before it was asked for" % (url, name))
                    bad += 1
                if (g["added"], g["removed"]) != (plus, minus):
                    self.fail("%s: case %s: %d lines coloured added and %d removed, the diff has %d and %d"
                              % (url, name, g["added"], g["removed"], plus, minus))
                    bad += 1
                if any(not k.startswith("SPAN.d-") or not k.endswith("/0") for k in g["kids"]):
                    self.fail("%s: case %s: the diff made elements other than its line spans: %s"
                              % (url, name, g["kids"][:8]))
                    bad += 1
            if got["markup"]:
                self.fail("%s: case %s: %d script, b or img elements in the code block (from the diff?)"
                          % (url, name, got["markup"]))
                bad += 1
        return bad

    def code_job(self):
        """The page of a job with code lines: live if it has not ended when
        loaded, then loaded again from the stored lines."""
        a, b = self.a, self.b
        url = a.base + "/jobs/" + urllib.parse.quote(a.code_job)
        for how in ("live", "stored"):
            b.goto(url)
            at_load = b.wait("(document.getElementById('job-state') || {}).textContent", 15)
            if how == "live":
                if at_load not in ("queued", "running"):
                    if a.expect_live:
                        self.fail("%s: the job was %r when the page loaded: nothing came live" % (url, at_load))
                    else:
                        print("note: %s was %s when loaded: its code lines came stored" % (url, at_load))
                        continue
            if not b.wait("document.body.dataset.done === '1'", a.timeout):
                self.fail("%s: no verdict shown after %d s" % (url, a.timeout))
                self.errors_on(url)
                return
            time.sleep(0.3)   # the page draws every 200 ms
            lines = get_json(a.base, "/api/jobs/" + urllib.parse.quote(a.code_job)).get("lines", [])
            codes = [l for l in lines if l.get("type") == "code"]
            if not codes:
                self.fail("%s: the job has no code line to check" % url)
                return
            if not self.code_shown("%s (%s, loaded %s)" % (url, how, at_load), lines):
                self.ok("%s (%s, loaded %s): %d code lines shown as their figures, changes, errors and diffs"
                        % (url, how, at_load, len(codes)))
        b.eval("document.querySelectorAll('details[data-code-diff]').forEach(d => d.open = true)")
        shot = os.path.join(a.out, "code-%s.png" % a.code_job)
        b.screenshot(shot)
        why = check_png(shot)
        self.fail(why) if why else self.ok("screenshot " + shot)
        self.errors_on(url)

    def unknown_job(self):
        a, b = self.a, self.b
        bogus = "no-such-job-%d" % os.getpid()
        url = a.base + "/jobs/" + bogus
        try:
            urllib.request.urlopen(a.base + "/api/jobs/" + bogus, timeout=10)
            self.fail("/api/jobs/%s answered 200 for a job that does not exist" % bogus)
            return
        except urllib.error.HTTPError as e:
            try:
                message = json.load(e).get("error", "")
            except ValueError:
                message = ""
            if e.code != 404 or not message:
                self.fail("/api/jobs/%s: expected 404 with an error message, got %d %r" % (bogus, e.code, message))
                return
        except OSError as e:
            raise Fatal("cannot GET /api/jobs/%s: %s" % (bogus, e))
        # The browser logs the 404 itself; that one is expected.
        b.ignore.append(bogus)
        b.goto(url)
        shown = b.wait("!document.getElementById('error').hidden && document.getElementById('error').textContent", 10)
        if shown != message:
            self.fail("%s: expected the message %r, the page shows %r" % (url, message, shown))
        else:
            self.ok("%s: shows %r" % (url, message))
        self.errors_on(url)
        b.ignore.remove(bogus)

    def history(self):
        self.history_page([], "history.png")
        if self.a.label:
            self.history_page(self.a.label, "history-label.png")

    def history_page(self, labels, png):
        a, b = self.a, self.b
        q = [("label", l) for l in labels]
        page = a.base + "/history" + ("?" + urllib.parse.urlencode(q) if q else "")
        api = get_json(a.base, "/api/history?" + urllib.parse.urlencode(q + [("limit", "100")]))
        want = {(j["job"], c["case"]) for j in api.get("jobs", []) for c in j.get("cases", [])}
        b.goto(page)
        if not b.wait("document.body.dataset.ready === '1'", 20):
            self.fail("%s: the page did not finish drawing within 20 s" % page)
            self.errors_on(page)
            return
        points = b.eval("[...document.querySelectorAll('.plot-card [data-point]')].map(e => [e.dataset.job, e.dataset.case])")
        rows = b.eval("[...document.querySelectorAll('#history-table tr.hist-row')].map(e => [e.dataset.job, e.dataset.case])")
        plots = b.eval("[...document.querySelectorAll('.plot-card[data-case]')].map(e => e.dataset.case)")
        got_p = [tuple(p) for p in points]
        got_r = [tuple(r) for r in rows]
        bad = 0
        for what, got in (("points", got_p), ("table rows", got_r)):
            if len(got) != len(set(got)) or set(got) != want:
                missing = sorted(want - set(got))[:5]
                extra = sorted(set(got) - want)[:5]
                self.fail("%s: %d %s for %d job x case of /api/history (missing %s, extra %s)"
                          % (page, len(got), what, len(want), missing, extra))
                bad += 1
        cases = {c for _, c in want}
        if set(plots) != cases:
            self.fail("%s: plots for %s, /api/history has cases %s" % (page, sorted(plots), sorted(cases)))
            bad += 1
        if any(j == a.job for j, _ in want) and not any(p[0] == a.job for p in got_p):
            self.fail("%s: job %s has no point" % (page, a.job))
            bad += 1
        if not want:
            print("note: /api/history has no job for %s" % page, flush=True)
        if not bad:
            self.ok("%s: %d points in %d plots and %d rows, as /api/history says" % (page, len(got_p), len(plots), len(got_r)))
        shot = os.path.join(a.out, png)
        b.screenshot(shot)
        why = check_png(shot, min_h=300)
        self.fail(why) if why else self.ok("screenshot " + shot)
        self.errors_on(page)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="http://127.0.0.1:PORT of quald --http")
    ap.add_argument("--job", required=True, help="the job to check")
    ap.add_argument("--out", required=True, help="folder for the screenshots")
    ap.add_argument("--code-job", help="also check the page of this job with code lines")
    ap.add_argument("--chromium", help="the browser (default: chromium on PATH)")
    ap.add_argument("--expect-live", action="store_true", help="the job is running: check the page updates")
    ap.add_argument("--label", action="append", default=[], metavar="K=V", help="also filter /history by it")
    ap.add_argument("--timeout", type=int, default=90, help="seconds to wait for the verdict (default 90)")
    a = ap.parse_args()
    a.base = a.base.rstrip("/")
    chromium = a.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("browser_test: no chromium (apt-get install chromium, or --chromium PATH)", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="browser_test.")
    browser = None
    try:
        browser = Browser(chromium, work)
        t = Test(a, browser)
        t.index()
        if a.code_job:
            t.code_job()
        t.job()
        t.unknown_job()
        t.history()
    except Fatal as e:
        print("browser_test: %s" % e, file=sys.stderr)
        return 2
    finally:
        if browser:
            browser.close()
        shutil.rmtree(work, ignore_errors=True)
    if t.failures:
        print("browser_test: %d check%s failed" % (len(t.failures), "" if len(t.failures) == 1 else "s"))
        return 1
    print("browser_test: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
