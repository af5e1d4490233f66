#!/usr/bin/env python3
"""The code lines' theoretical occupancy against the driver's count, on a
timed job's lines (docs/explain.md, "Occupancy"):

    python3 tests/gpu/occupancy_check.py JOB.jsonl

For every case and arm with both figures: the code line's
occupancy.blocks_per_sm against the case line's driver_blocks_per_sm. Prints
one line a case and a summary; exit 1 where any differ or none was
compared."""
import json
import sys


def main():
    code, case = {}, {}
    for text in open(sys.argv[1]):
        if not text.strip():
            continue
        line = json.loads(text)
        if line.get("type") == "code":
            code[line["case"]] = line
        elif line.get("type") == "case" and line.get("timed"):
            case.setdefault(line["case"], line)
    compared = differ = no_code = 0
    for name in sorted(case):
        if name not in code:
            no_code += 1
            print(f"{name:<32} no code line")
            continue
        cells = []
        for arm in ("baseline", "candidate"):
            occ = (code[name].get(arm) or {}).get("occupancy") or {}
            ours, drv = occ.get("blocks_per_sm"), case[name][arm].get("driver_blocks_per_sm")
            if ours is None or drv is None:
                cells.append(f"{arm} {ours}/{drv} (not compared)")
                continue
            compared += 1
            same = ours == drv
            differ += not same
            cells.append(f"{arm} {ours}/{drv}{'' if same else ' DIFFER'} "
                         f"({occ.get('limited_by')}, {code[name][arm].get('registers')} regs)")
        print(f"{name:<32} " + "; ".join(cells))
    print(f"occupancy, computed against the driver's: {compared - differ} of {compared} arms "
          f"agree ({no_code} timed cases without a code line)")
    return 0 if compared and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
