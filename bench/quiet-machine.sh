#!/usr/bin/env bash
# Issue 28's service figures on a quiet machine with more cores than the
# 2-core build machine (the GPU machine: no GPU is used), for a new and an
# old quald side by side:
#
#     bash bench/quiet-machine.sh OUTDIR NEW_BUILD [OLD_BUILD]
#
# NEW_BUILD and OLD_BUILD are build folders with bin/quald and bin/qualctl
# (.carry from scripts/pack-gpu.sh; an old one packed the same way);
# NEW_BUILD/shims/libshim_noabi.so serves as the ELF file the fake jobs name.
# Runs bench/log_clients.py (64 non-reading HTTP GETs and 64 non-reading
# shows of a 60 MiB log: quald's peak RSS and control `status` times
# meanwhile) and bench/store_start.py (1 GiB stored: start to listening, the
# first history and `status` meanwhile), each quald in turn; writes their
# JSON lines to OUTDIR/log_clients.jsonl and OUTDIR/store_start.jsonl.
set -u
out=${1:?usage: quiet-machine.sh OUTDIR NEW_BUILD [OLD_BUILD]}
new=${2:?usage: quiet-machine.sh OUTDIR NEW_BUILD [OLD_BUILD]}
old=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
qualds=(--quald "$new/bin/quald")
[ -n "$old" ] && qualds+=(--quald "$old/bin/quald")
elf=$new/shims/libshim_noabi.so
nproc | sed 's/^/cores: /' | tee "$out/machine.txt"
status=0
timeout 300 python3 "$here/log_clients.py" --elf "$elf" "${qualds[@]}" \
  --mib 60 --clients 64 --seconds 5 >"$out/log_clients.jsonl" 2>"$out/log_clients.err" || status=1
cat "$out/log_clients.jsonl"
timeout 280 python3 "$here/store_start.py" --elf "$elf" "${qualds[@]}" \
  --gib 1 --jobs 16 --runs 1 >"$out/store_start.jsonl" 2>"$out/store_start.err" || status=1
cat "$out/store_start.jsonl"
exit $status
