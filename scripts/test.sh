#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# that needs no GPU (ctest label gpu is for the device: tests/gpu/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd "${QUAL_BUILD:-build}"
ctest --output-on-failure -LE gpu -j"$(nproc)" "$@"
