#!/usr/bin/env python3
"""What contexts cost a job (tests/gpu/contexts.sh):

    python3 bench/contexts_cost.py JOBS_TXT JOBS_DIR PREFIX

For each job of JOBS_TXT ("NAME EXIT WALL_MS" lines) whose name starts
with PREFIX: its wall time, its sessions (session_time lines), the sum of
their time opening the GPU (time_s.open, which with --case-contexts holds
the reopens before each case), the start line's case_contexts, the verdict
and the exit status; then the median wall time per setting."""
import collections
import json
import statistics
import sys


def main():
    jobs_txt, folder, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    walls = collections.defaultdict(list)
    for row in open(jobs_txt):
        parts = row.split()
        if len(parts) != 3 or not parts[0].startswith(prefix):
            continue
        name, status, wall_ms = parts[0], int(parts[1]), int(parts[2])
        lines = []
        for text in open(f"{folder}/{name}.jsonl"):
            try:
                lines.append(json.loads(text))
            except ValueError:
                pass
        start = next((l for l in lines if l.get("type") == "start"), {})
        own = (start.get("settings") or {}).get("case_contexts")
        sessions = [l for l in lines if l.get("type") == "session_time"]
        opened = sum((l.get("time_s") or {}).get("open") or 0 for l in sessions)
        verdict = next((l.get("verdict") for l in lines if l.get("type") == "verdict"), None)
        walls[own].append(wall_ms)
        print(f"{name:<28} {wall_ms:>6} ms  sessions {len(sessions):>3}  open {opened:6.2f} s  "
              f"case_contexts {own}  {verdict}  exit {status}")
    for own, w in sorted(walls.items(), key=lambda kv: str(kv[0])):
        print(f"case_contexts {own}: median wall {statistics.median(w):.0f} ms over {len(w)}")


if __name__ == "__main__":
    main()
