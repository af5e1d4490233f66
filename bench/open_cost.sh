#!/usr/bin/env bash
# On the GPU machine: what a session's GPU context costs, and whether a
# context opened or closed by another process disturbs timed device work
# (bench/open_cost.c), and what copies to and from the device cost from
# pageable and from page-locked memory. Usage: bench/open_cost.sh OUT BIN (BIN: the built
# open_cost). Writes OUT/open_cost.jsonl.
set -euo pipefail
out=$1 bin=$2
mkdir -p "$out"
{
  "$bin" open 8
  "$bin" perturb 20000
  "$bin" perturb 20000
  "$bin" copy 50
} | tee "$out/open_cost.jsonl"
