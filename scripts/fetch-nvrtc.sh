#!/usr/bin/env bash
# Fetches real nvrtc builds from PyPI's wheels and packs each small enough to
# carry to the GPU machine (which has no network):
#
#     bash scripts/fetch-nvrtc.sh [OUT [CACHE]] [-- SERIES...]
#
# SERIES are version prefixes (default: 12.4 12.9 13): 12.x comes from
# nvidia-cuda-nvrtc-cu12, 13.x from nvidia-cuda-nvrtc; each is the newest
# final release that starts with the prefix. For each, the wheel is downloaded
# through PyPI's JSON API into CACHE (default /work/.nvrtc-cache, or
# $QUAL_NVRTC_CACHE) and its sha256 checked against the digest PyPI publishes
# (a cached wheel is checked again and reused); libnvrtc.so.1x and its
# libnvrtc-builtins.so.* are extracted into CACHE/nvrtc-VERSION/, and packed
# as OUT/nvrtc-VERSION.tar.xz (default OUT: .carry-nvrtc, ignored by git):
# `tar -cf - nvrtc-VERSION | xz -9`, 17-39 MB each, so one or two fit in a
# device carry (64 MiB a call). A pack whose recorded wheel digest matches is
# kept, so a second run downloads and packs nothing. tests/gpu/unpack-nvrtc.sh
# unpacks them on the GPU machine. Prints one line per version: VERSION PACK.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry-nvrtc
cache=${QUAL_NVRTC_CACHE:-/work/.nvrtc-cache}
series=()
pos=0
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; series=("$@"); break; fi
  case $pos in
    0) out=$1 ;;
    1) cache=$1 ;;
    *) echo "fetch-nvrtc.sh: unexpected argument '$1'" >&2; exit 2 ;;
  esac
  pos=$((pos + 1)); shift
done
[ ${#series[@]} -gt 0 ] || series=(12.4 12.9 13)
mkdir -p "$out" "$cache"

python3 - "$out" "$cache" "${series[@]}" <<'EOF'
import hashlib, json, os, re, shutil, subprocess, sys, urllib.parse, urllib.request, zipfile

out, cache, series = sys.argv[1], sys.argv[2], sys.argv[3:]

def fail(msg):
    sys.exit("fetch-nvrtc.sh: " + msg)

def package_for(prefix):
    major = prefix.split(".")[0]
    if major == "12":
        return "nvidia-cuda-nvrtc-cu12"
    if major == "13":
        return "nvidia-cuda-nvrtc"
    fail("series '%s': only 12.x and 13.x are known" % prefix)

def key(v):
    return tuple(int(p) for p in v.split("."))

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

def newest(pkg, prefix):
    url = "https://pypi.org/pypi/%s/json" % pkg
    with urllib.request.urlopen(url, timeout=60) as r:
        base = r.geturl()
        releases = json.load(r)["releases"]
    best = None
    for v, files in releases.items():
        if not re.fullmatch(r"\d+(\.\d+)*", v):  # final releases only
            continue
        if v != prefix and not v.startswith(prefix + "."):
            continue
        wheels = [f for f in files if f["packagetype"] == "bdist_wheel"
                  and "x86_64" in f["filename"] and not f.get("yanked")]
        if wheels and (best is None or key(v) > key(best[0])):
            # A mirror may give file addresses relative to the index page.
            best = (v, dict(wheels[0], url=urllib.parse.urljoin(base, wheels[0]["url"])))
    if best is None:
        fail("%s has no x86_64 wheel of a %s release on PyPI (%s)" % (pkg, prefix, url))
    return best

def download(f):
    path = os.path.join(cache, f["filename"])
    want = f["digests"]["sha256"]
    if os.path.exists(path) and sha256(path) == want:
        return path, want
    tmp = path + ".part"
    with urllib.request.urlopen(f["url"], timeout=600) as r, open(tmp, "wb") as w:
        shutil.copyfileobj(r, w, 1 << 20)
    got = sha256(tmp)
    if got != want:
        os.unlink(tmp)
        fail("%s: sha256 %s, PyPI says %s" % (f["filename"], got, want))
    os.replace(tmp, path)
    return path, want

for prefix in series:
    pkg = package_for(prefix)
    version, f = newest(pkg, prefix)
    name = "nvrtc-" + version
    pack = os.path.join(out, name + ".tar.xz")
    stamp = pack + ".sha256"
    if os.path.exists(pack) and os.path.exists(stamp) and \
            open(stamp).read().split() == [f["digests"]["sha256"], sha256(pack)]:
        print(version, pack)
        continue
    wheel, digest = download(f)
    folder = os.path.join(cache, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    major = version.split(".")[0]
    lib = re.compile(r"libnvrtc\.so\.%s$|libnvrtc-builtins\.so\.[0-9.]+$" % major)
    got = []
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            base = os.path.basename(info.filename)
            if lib.fullmatch(base):
                with z.open(info) as r, open(os.path.join(folder, base), "wb") as w:
                    shutil.copyfileobj(r, w, 1 << 20)
                got.append(base)
    if "libnvrtc.so." + major not in got or not any("builtins" in g for g in got):
        fail("%s: libnvrtc.so.%s or its builtins library missing (found %s)"
             % (wheel, major, ", ".join(got) or "nothing"))
    tmp = pack + ".part"
    with open(tmp, "wb") as w:
        tar = subprocess.Popen(["tar", "-cf", "-", "-C", cache, name], stdout=subprocess.PIPE)
        xz = subprocess.Popen(["xz", "-9", "-T1"], stdin=tar.stdout, stdout=w)
        tar.stdout.close()
        if xz.wait() != 0 or tar.wait() != 0:
            os.unlink(tmp)
            fail("packing %s failed" % folder)
    os.replace(tmp, pack)
    with open(stamp, "w") as s:
        s.write("%s %s\n" % (digest, sha256(pack)))
    print(version, pack)
EOF
