#!/usr/bin/env bash
# Installs the Debian packages that qual needs to build and test.
# Idempotent; run as root (or with sudo available) on Debian 12 or later.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libuv1-dev libjansson-dev libssl-dev
  libamdhip64-dev          # HIP runtime headers and hiprtc (libamdhip64.so.5)
  libcmocka-dev            # unit test framework
  python3 python3-scipy python3-jsonschema python3-numpy
  systemd                  # systemd-analyze, systemd-sysusers: tests/systemd.cmake
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
