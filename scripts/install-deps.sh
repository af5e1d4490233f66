#!/usr/bin/env bash
# Installs the Debian packages that qual needs to build and test.
# Idempotent; run as root (or with sudo available) on Debian 12 or later.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libuv1-dev libjansson-dev libssl-dev
  libh2o-dev               # quald --http: H2O's library on libuv (daemon/http.c)
  python3-prometheus-client  # /metrics read by Prometheus' parser: tests/http.cmake
  libamdhip64-dev          # HIP runtime headers and hiprtc (libamdhip64.so.5)
  libcmocka-dev            # unit test framework
  python3 python3-scipy python3-jsonschema python3-numpy
  python3-pip              # scripts/fetch-cuda-tools.sh: nvdisasm from PyPI
  systemd                  # systemd-analyze, systemd-sysusers: tests/systemd.cmake
  valgrind                 # quald under memcheck: tests/valgrind.cmake
  clang                    # libFuzzer targets: tests/fuzz.cmake (and below)
  llvm                     # llvm-objdump: the v_mfma checks of tests/fixtures_amd.cmake
  groff-base               # groff -man -ww: tests/man.cmake lints the man pages
  zsh                      # the zsh completion's compsys test: tests/completion.cmake
  dpkg-dev                 # dpkg-shlibdeps: cpack's Depends: (cmake/package.cmake)
  fakeroot                 # dpkg --root as a user: tests/package.cmake
  chromium                 # headless browser for the dashboard: tests/tools/browser_test.py
  python3-websocket        # browser_test.py drives chromium over the DevTools protocol
  fonts-dejavu-core        # the dashboard's fonts (no web fonts): readable screenshots
  slurmctld slurmd slurm-client munge  # one-node test clusters: scripts/slurm-cluster.sh
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
updated=false

install_missing() { # PACKAGE...: installs those not installed
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! $updated; then
    $sudo apt-get update -q
    updated=true
  fi
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}

install_missing "${packages[@]}"
# libFuzzer and the sanitizer runtimes come with libclang-rt-N-dev, N the
# major version of the clang just installed (14 on Debian 12).
clang_major=$(clang -dumpversion | cut -d. -f1)
install_missing "libclang-rt-${clang_major}-dev"
# NVIDIA's disassemblers for the code lines' tests (tests/explain.cmake):
# from PyPI, since Debian packages no CUDA toolkit.
$sudo bash "$(dirname "$0")/fetch-cuda-tools.sh"
