#!/usr/bin/env bash
# Unpacks the nvrtc builds that scripts/fetch-nvrtc.sh packed, on the GPU
# machine, in the same call that uses them:
#
#     bash tests/gpu/unpack-nvrtc.sh [SRC [DEST]]
#
# SRC holds nvrtc-VERSION.tar.xz (default .carry-nvrtc); each is unpacked
# into DEST/nvrtc-VERSION/ (default /tmp/nvrtc; an existing folder is kept).
# Prints one line per version: VERSION PATH-OF-libnvrtc.so.1x. The library's
# folder holds its libnvrtc-builtins, which qual-compile finds there.
set -euo pipefail
src=${1:-.carry-nvrtc}
dest=${2:-/tmp/nvrtc}
mkdir -p "$dest"
shopt -s nullglob
for pack in "$src"/nvrtc-*.tar.xz; do
  name=$(basename "$pack" .tar.xz)
  version=${name#nvrtc-}
  if [ ! -d "$dest/$name" ]; then
    xz -dc "$pack" | tar -xf - -C "$dest"
  fi
  lib=$(ls "$dest/$name"/libnvrtc.so.[0-9]* 2>/dev/null | head -n 1)
  [ -n "$lib" ] || { echo "unpack-nvrtc.sh: $pack holds no libnvrtc.so.*" >&2; exit 1; }
  echo "$version $lib"
done
