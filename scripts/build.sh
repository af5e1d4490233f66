#!/usr/bin/env bash
# Configures and builds qual into build/ (or $QUAL_BUILD). Extra arguments go
# to cmake's configure step, e.g. -DQUAL_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${QUAL_BUILD:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
