"""Which collective an nccl-tests log measured: its program (``all_gather_perf``), its redop and
root columns, and what its rows say when the log names no program.

nccl-tests prints ``# Collective test starting: all_gather_perf`` from 2.17 (commit dafb704, June
2025) and ``-J`` JSON keeps the command line (``args[0]``); older text logs name nothing. Their
rows still tell most collectives apart (``src/*.cu``, ``*GetCollByteCount`` and ``*InitData``):

* a root column >= 0: broadcast (redop ``none``) or reduce (``sum``);
* size = ranks x count x element size (the size column is the whole buffer of ``ranks``
  segments): reduce_scatter (``sum``), all_gather (``none``, in-place rows checked) or alltoall
  (``none``, in-place ``#wrong`` N/A: nccl-tests checks no in-place alltoall);
* size = count x element size: all_reduce, or sendrecv when every in-place ``#wrong`` is N/A and
  the out-of-place ones are counts (nccl-tests checks no in-place sendrecv); rows checked nowhere
  (``-c 0``, a failed log of nccl-tests before 2.10) read as all_reduce, as collsim always read
  them.

On one rank size = count for every collective, so a reduce_scatter there reads as all_reduce and an
all_gather as all_gather or alltoall (the same calls on one rank). What stays ambiguous (a log of
``-c 0``, which checks nothing, of all_gather or alltoall) is a one-line error asking for
``--coll``. A ``--coll`` that contradicts the program line or the rows' shape is an error too.
"""
from __future__ import annotations

import re

from collsim.core.collective import COLLECTIVES, get
from collsim.errors import CollsimError

STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)", re.ASCII)


def columns(name: str, root: int = 0) -> tuple[str, int]:
    """nccl-tests' redop and root columns for collective ``name``: ("sum" or "none", root or -1;
    the record's ``redop`` and ``rooted``, ``collsim.core.collective``)."""
    c = get(name)
    return c.redop, root if c.rooted else -1


def from_program(text: str | None) -> str | None:
    """The collective of a program name or path (``./build/all_gather_perf``,
    ``sendrecv_perf_mpi``); None when it is no ``*_perf`` program."""
    m = re.search(r"([a-z_]+?)_perf(?:_mpi)?$", str(text or "").rsplit("/", 1)[-1])
    return m.group(1) if m and m.group(1) in COLLECTIVES else None


def _segments(rec: dict, itemsize) -> int:
    """size / (count x element size): the segments of a row's buffer (0 when it does not divide)."""
    cell = rec["count"] * itemsize(rec["dtype"])
    return rec["size"] // cell if cell and rec["size"] % cell == 0 else 0


def candidates(records: list, itemsize) -> list[str]:
    """The collectives the rows fit (module docstring); ``itemsize(dtype)`` gives element bytes."""
    redops = {r.get("redop") for r in records} - {None}
    roots = {r.get("root") for r in records} - {None}
    placed = {p: [r["wrong"] is not None for r in records if r.get("inplace") is p]
              for p in (False, True)}
    in_checked = bool(placed[True]) and all(placed[True])
    in_unchecked = bool(placed[False]) and all(placed[False]) and not any(placed[True])
    if roots and max(roots) >= 0:
        redop = "sum" if "sum" in redops else "none"
        return [n for n, c in COLLECTIVES.items() if c.rooted and c.redop == redop]
    shapes = {_segments(r, itemsize) for r in records if r["count"]}
    if len(shapes) != 1 or 0 in shapes:
        return []
    one = shapes == {1}
    if redops == {"none"}:
        pair = ["all_gather", "alltoall"]
    # no redop column (old JSON): read as a sum, as collsim always read them
    elif redops <= {"sum"}:
        pair = ["all_reduce", "sendrecv"] if one else ["reduce_scatter"] if redops else \
            ["reduce_scatter", "all_gather", "alltoall"]
    else:
        return []
    if len(pair) == 2 and (in_checked or in_unchecked):
        return [pair[1] if in_unchecked else pair[0]]
    return pair


def resolve(found: str | None, given: str | None, records: list, itemsize, source: str) -> str:
    """The collective of a log: the program it names (``found``), else ``given`` (``--coll``), else
    the one its rows fit; a ``given`` that contradicts either, or rows that fit several, is a
    one-line error naming ``source``."""
    given = get(given).name if given else None
    fits = candidates(records, itemsize) if records else []
    if found and given and found != given:
        raise CollsimError(f"{source}: the log says {found}_perf, not --coll {given}")
    name = found or given
    if name:
        if fits and name not in fits and not found:
            raise CollsimError(f"{source}: its rows are not {name}'s (they fit {', '.join(fits)}): "
                               "check --coll")
        return name
    if len(fits) == 1 or fits[:2] == ["all_reduce", "sendrecv"]:
        # unchecked rows of size = count and sum: all_reduce, as they were always read
        return fits[0]
    what = f"could be {', '.join(fits)}" if fits else "fit no collective's size convention"
    raise CollsimError(f"{source}: the log names no *_perf program and its rows {what}; say which "
                       "with --coll")
