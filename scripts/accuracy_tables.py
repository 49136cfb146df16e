"""Measure the ranges and the quick run on every public and bundled log, leaving each log out in turn, and write
both tables into docs/accuracy.md (between the "ranges" and "quick" markers) and the widths every prediction's
range uses into collsim/fitted/widths.json (collsim.fit.coverage says how).

    cd <repo> && PYTHONPATH=$PWD .venv/bin/python scripts/accuracy_tables.py      # about 5 minutes on one core
"""
import json
import re
import sys
from pathlib import Path

from collsim.fit.coverage import leave_one_out, quick_checks, range_rows
from collsim.fit.sim_sets import ROOT, load_series
from collsim.predict.ranges import WIDTHS

DOC = ROOT / "docs" / "accuracy.md"


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def range_table(res: dict) -> str:
    lines = ["| log | rows | inside the range | median half-width | median error | latency / bandwidth from | "
             "rows fitted on it |", "|---|---|---|---|---|---|---|"]
    for log, s in res["logs"].items():
        kinds = " / ".join(",".join(s["kinds"][r]) for r in ("latency", "bandwidth"))
        lines.append(f"| {log} | {s['n']} | {s['inside']} ({pct(s['coverage'])}) | {pct(s['median_half_width'])} | "
                     f"{pct(s['median_abs_error'])} | {kinds} | {s['fitted']} |")
    for name, key in (("all", "all"), ("inputs from a log of the kind or this machine", "sure"),
                      ("some input from a datasheet or an assumption", "unsure")):
        s = res[key]
        lines.append(f"| **{name}** | {s['n']} | {s['inside']} ({pct(s['coverage'])}) | "
                     f"{pct(s['median_half_width'])} | {pct(s['median_abs_error'])} | | |")
    return "\n".join(lines)


def quick_table(table: dict) -> str:
    lines = ["| log | quick file | fitted | median error before (all held-out rows) | after: other sizes | "
             "after: other files (forced algorithms, other harness) |", "|---|---|---|---|---|---|"]
    for log, t in table.items():
        vals = ", ".join(f"{k} {v:g}" for k, v in t["values"].items())
        lines.append(f"| {log} | `{Path(t['file']).name}` ({t['quick_sizes']} sizes) | {vals} | "
                     f"{pct(t['before']['median_abs_rel_error'])} | {pct(t['other_sizes']['median_abs_rel_error'])} "
                     f"({t['other_sizes']['n']}) | {pct(t['other_files']['median_abs_rel_error'])} "
                     f"({t['other_files']['n']}) |")
    return "\n".join(lines)


def splice(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- {name}: scripts/accuracy_tables.py -->", f"<!-- /{name} -->"
    block = f"{begin}\n{body}\n{end}"
    if begin in text:
        return re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def main() -> int:
    series = load_series()
    quick, quick_rows = quick_checks(series)
    rows = range_rows(series) + quick_rows
    res = leave_one_out(rows)
    (ROOT / "collsim" / "fitted" / WIDTHS).write_text(json.dumps(
        {"source": "scripts/accuracy_tables.py (collsim.fit.coverage.leave_one_out: every unfitted row of "
                   "collsim.fit.sim_sets.SETS and of the quick-run checks)", "rows": len(rows),
         "widths": res["widths"]}, indent=1) + "\n")
    text = DOC.read_text()
    text = splice(text, "ranges", range_table(res))
    text = splice(text, "quick", quick_table(quick))
    DOC.write_text(text)
    print(range_table(res))
    print(quick_table(quick))
    print(json.dumps(res["widths"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
