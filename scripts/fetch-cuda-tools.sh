#!/usr/bin/env bash
# Installs NVIDIA's disassemblers, nvdisasm and cuobjdump, from PyPI's wheels
# (nvidia-cuda-nvdisasm, nvidia-cuda-cuobjdump; pinned by version and
# sha256) into DIR/bin (default /opt/qual-cuda-tools), for machines without
# the CUDA toolkit's: qual-run finds nvdisasm through QUAL_NVDISASM, PATH,
# /usr/local/cuda/bin or beside the compiler library (docs/explain.md), and
# the explain tests check its figures against cuobjdump's (tests/explain.cmake).
#
#     bash scripts/fetch-cuda-tools.sh [DIR]
#
# Idempotent: tools already there at the pinned version are kept.
set -euo pipefail
dir=${1:-/opt/qual-cuda-tools}
version=13.5.37
stamp="$dir/VERSION"
if [ -x "$dir/bin/nvdisasm" ] && [ -x "$dir/bin/cuobjdump" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
  echo "fetch-cuda-tools.sh: the PyPI wheels are for x86_64, this machine is $(uname -m)" >&2
  exit 1
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "fetch-cuda-tools.sh: $(command -v python3) has no pip (Debian: python3-pip)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/requirements.txt" <<REQ
nvidia-cuda-nvdisasm==$version --hash=sha256:d3fdbdd49fa53e2e4aacd3db8259d052bd2b049ececdcb69e92e083c6728e7ca
nvidia-cuda-cuobjdump==$version --hash=sha256:38780fee50863252a0b8926357faa91615ca1c8346490563f33a06100cd73f58
REQ
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
  --require-hashes -r "$work/requirements.txt" -d "$work/wheels"
mkdir -p "$dir/bin"
python3 - "$work/wheels" "$dir/bin" <<'PY'
import os, sys, zipfile
wheels, bin_dir = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(wheels)):
    with zipfile.ZipFile(os.path.join(wheels, name)) as z:
        for member in z.namelist():
            tool = os.path.basename(member)
            if member.startswith("nvidia/") and "/bin/" in member and tool in ("nvdisasm", "cuobjdump"):
                path = os.path.join(bin_dir, tool)
                with z.open(member) as src, open(path + ".new", "wb") as dst:
                    dst.write(src.read())
                os.chmod(path + ".new", 0o755)
                os.replace(path + ".new", path)
PY
"$dir/bin/nvdisasm" --version >/dev/null
"$dir/bin/cuobjdump" --version >/dev/null
echo "$version" > "$stamp"
echo "fetch-cuda-tools.sh: nvdisasm and cuobjdump $version in $dir/bin"
