#!/usr/bin/env bash
# On the GPU machine: what a session's GPU context costs, and whether a
# context opened or closed by another process disturbs timed device work
# (bench/open_cost.c), and what copies to and from the device cost from
# pageable and from page-locked memory:
#
#     bash bench/open_cost.sh OUT [BUILD]     (BUILD: .carry, the default)
#
# Writes OUT/open_cost.jsonl.
set -euo pipefail
out=${1:?usage: open_cost.sh OUT [BUILD]}
bin=${2:-.carry}/bin/open_cost
mkdir -p "$out"
{
  "$bin" open 8
  "$bin" perturb 20000
  "$bin" perturb 20000
  "$bin" copy 50
} | tee "$out/open_cost.jsonl"
