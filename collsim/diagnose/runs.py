"""Several nccl-tests runs pasted into one file: split them, and name the NCCL version of each.

Users paste two runs one after the other to compare them ("2.19.3:" then a table, "2.20.3" then
another), or a test that ran once per node prints its table twice. ``split(src, run)`` cuts
``run``'s rows where a new table header (``#  size  count  type ...``) follows rows already read, or
where the sizes start again (a size not above the one before); each piece keeps the file as its
``source`` and is labelled ``name#k``, and takes the NCCL version named between the previous piece's
last row and its own first row (``NCCL version 2.20.3``, ``nccl-library=22003``, or a bare
``2.20.3`` on a line of its own, as users label their pastes), else the run's. One piece: ``[run]``,
with the version named above its rows when it has none.

Also what rows are: ``allreduce_rows`` drops the rows of a log read as AllReduce's that are not
(size != count x type size) and keeps the ranks they imply (a log naming or fitting another
collective is read as it: ``collsim.diagnose.sources``); ``loose_rows`` reads rows whose columns
launcher tags broke; ``clean`` removes the tags.
"""

from __future__ import annotations

import re
from dataclasses import replace

_TAG = re.compile(r"\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?|^\s*\d+:(?=\s)")

_TABLE = re.compile(r"#\s+size\s+count\s+type")
_LABEL = re.compile(r"^\W*(?:NCCL[ _-]?(?:version)?\s*v?)?(2\.\d+\.\d+)(?:-\d+)?\W*$", re.I)
_LIBRARY = re.compile(r"nccl-library=(\d)(\d\d)(\d\d)\b")
_VERSION = re.compile(r"NCCL version (2\.\d+\.\d+)")


def version_named(lines, start: int, end: int) -> tuple | None:
    """(version, 1-based line) of the last version named in ``lines[start:end]`` (module docstring),
    or None.
    """
    found = None
    for n in range(max(start, 0), min(end, len(lines))):
        line = lines[n]
        if m := (_VERSION.search(line) or _LABEL.match(line)):
            found = (m.group(1), n + 1)
        elif m := _LIBRARY.search(line):
            found = (f"{m.group(1)}.{int(m.group(2))}.{int(m.group(3))}", n + 1)
    return found


def split(src, run) -> list:
    """``run`` cut into the runs its file holds (module docstring)."""
    rows = sorted(run.rows, key=lambda r: r["line"])
    if len(rows) < 2 or not all(r.get("line") for r in rows):
        return [run]
    tables = [n for n, line in enumerate(src.lines, 1) if _TABLE.search(line)]
    pieces, current = [], [rows[0]]
    for prev, row in zip(rows, rows[1:]):
        header_between = any(prev["line"] < t < row["line"] for t in tables)
        if header_between or row["bytes"] <= prev["bytes"]:
            pieces.append(current)
            current = []
        current.append(row)
    pieces.append(current)
    if len(pieces) == 1:
        named = None if run.version else version_named(src.lines, 0, rows[0]["line"] - 1)
        return [replace(run, version=named) if named else run]
    out, end = [], 0
    for k, piece in enumerate(pieces, 1):
        first = piece[0]["line"]
        version = version_named(src.lines, end, first - 1) or run.version
        out.append(replace(run, rows=piece, label=f"{src.name}#{k}", version=version))
        end = piece[-1]["line"]
    return out


def clean(line: str) -> str:
    """``line`` without launcher tags (``[1,0]<stdout>:``, ``0:``)."""
    return _TAG.sub(" ", line)


ITEMSIZE = {
    "float32": 4,
    "float16": 2,
    "float64": 8,
    "bfloat16": 2,
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


def allreduce_rows(src, rows: list, records: list) -> list:
    """``rows`` unless their records are not AllReduce's: an AllReduce row holds size = count x type
    size (ReduceScatter, AllGather and AlltoAll rows count per rank); such rows are dropped and said
    so.
    """
    odd = [
        r
        for r in records
        if ITEMSIZE.get(r.get("dtype"), 0) and r["size"] != r["count"] * ITEMSIZE[r["dtype"]]
    ]
    if odd and len(odd) * 2 >= len(records):
        ranks = {
            r["size"] // (r["count"] * ITEMSIZE[r["dtype"]])
            for r in odd
            if r["count"] and r["size"] % (r["count"] * ITEMSIZE[r["dtype"]]) == 0
        }
        if (
            len(ranks) == 1 and rows
        ):  # ReduceScatter/AllGather count per rank: size = count x type x ranks
            src.rows_ranks = (ranks.pop(), rows[0]["line"])
        src.notes.append(
            f"{len(odd)} rows are not AllReduce's (size != count x type size: another collective's "
            "test): not compared"
        )
        return []
    return rows


def loose_rows(lines, candidates) -> list[dict]:
    """Rows whose columns were cut by tags: size, then the out-of-place time, algbw and busbw after
    the type, redop and root columns.
    """
    out = []
    for n in candidates:
        t = clean(lines[n - 1]).split()
        numbers = []
        for tok in t[3:]:
            try:
                numbers.append(float(tok))
            except ValueError:
                continue
        if numbers and numbers[0] == -1:  # the root column of AllReduce (nccl-tests 2.10 and later)
            numbers = numbers[1:]
        if len(numbers) >= 3:
            out.append(
                {"bytes": int(t[0]), "busbw_GBps": numbers[2], "time_us": numbers[0], "line": n}
            )
    return out
