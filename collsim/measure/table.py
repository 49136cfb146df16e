"""A measurement record as a row of an nccl-tests-style table (``collsim show``, the runners'
output)."""
from __future__ import annotations

import math

from collsim.outputs import printable

TABLE_HEADER = (f"{'size(B)':>12} {'count':>12} {'type':>9} {'redop':>6} {'root':>5} "
                f"{'algo/proto':>12} "
                f"{'place':>5} {'time(us)':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>7}")


def format_row(rec: dict) -> str:
    """One record as a table row under ``TABLE_HEADER`` (nccl-tests style, GB/s; redop and root
    "-" where the record does not say them); text from the record is
    ``collsim.outputs.printable``."""
    label = "/".join(str(x) for x in (rec.get("algo"), rec.get("proto")) if x) or "default"
    place = {True: "in", False: "out"}.get(rec.get("inplace"), "?")
    wrong = "N/A" if rec.get("wrong") is None else rec["wrong"]
    num = [math.nan if rec.get(k) is None else rec[k]
           for k in ("time_us", "algbw_GBps", "busbw_GBps")]
    redop, root = (rec.get(k, "-") for k in ("redop", "root"))
    return printable(f"{rec['size']:>12} {rec['count']:>12} {rec['dtype']:>9} {redop:>6} {root:>5} "
                     f"{label:>12} "
                     f"{place:>5} {num[0]:>10.2f} {num[1]:>8.2f} {num[2]:>8.2f} {wrong:>7}")
