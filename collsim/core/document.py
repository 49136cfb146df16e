"""A schedule as a JSON document: the transfer record, its rows, and the checks a document passes
before anything is built from it.

JSON schema (``Schedule.to_dict`` / ``Schedule.from_dict``)::

    {
      "ranks": P,            # int >= 1
      "count": N,            # elements per rank buffer, int >= 0
      "itemsize": 4,         # bytes per element, int >= 1
      "switches": 0,         # optional, int >= 0: switch endpoints P..P+switches-1
      "network": 0,          # optional, 0 or 1: the network's switch, endpoint P+switches
      "name": "ring",        # optional
      "collective": "all_reduce",   # optional: what it computes (collsim.core.collective)
      "steps": [             # list of steps, in order
        [ {"src": 0, "dst": 1, "offset": 0, "count": 4, "op": "reduce", "channel": 0}, ...],
        ...
      ]
    }

``channel`` is optional on input (default 0) and written on every transfer; ``lane`` (0 to
``MAX_LANE``) is optional and written where it is not 0; ``dst_offset`` (where the transfer writes
at ``dst``, default ``offset``) is optional and written where it differs from ``offset`` (alltoall).

``from_json`` / ``from_dict`` check the document before building anything: JSON nested at most
``collsim.inputs.MAX_JSON_DEPTH`` deep; ``ranks`` 1 to ``MAX_RANKS``, ``count`` 0 to ``MAX_BYTES``,
``itemsize`` 1 to ``MAX_ITEMSIZE``, ``switches`` 0 to ``MAX_RANKS``, ``network`` 0 or 1; every
transfer an object whose src, dst, offset and count are integers from -``MAX_BYTES`` to
``MAX_BYTES``, channel from 0 to ``MAX_CHANNELS`` - 1, lane from 0 to ``MAX_LANE``, (whether they
make sense is the checker's question; within these bounds its arithmetic cannot overflow) and whose
op is "reduce" or "copy".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_CHANNELS, MAX_RANKS

OP_NAMES = ("reduce", "copy")
OP_CODES = {name: code for code, name in enumerate(OP_NAMES)}
MAX_ITEMSIZE = 1024  # bytes per element a schedule file may give
MAX_LANE = 255       # lanes of a channel (a uint8 column)


class ScheduleError(CollsimError):
    """A schedule (or its JSON) is malformed."""


@dataclass(frozen=True)
class Transfer:
    """One message: ``count`` elements at ``offset`` from ``src`` to ``dst`` on ``channel`` and
    ``lane``, written at ``dst_offset`` (None: at ``offset``)."""

    src: int
    dst: int
    offset: int
    count: int
    op: str = "reduce"
    channel: int = 0
    lane: int = 0
    dst_offset: int | None = None

    def to_dict(self) -> dict:
        d = {"src": self.src, "dst": self.dst, "offset": self.offset, "count": self.count,
             "op": self.op, "channel": self.channel}
        if self.lane:
            d["lane"] = self.lane
        if self.dst_offset is not None and self.dst_offset != self.offset:
            d["dst_offset"] = self.dst_offset
        return d


def op_code(op) -> int:
    if isinstance(op, str):
        if op not in OP_CODES:
            raise ScheduleError(f"unknown op {op!r}: expected 'reduce' or 'copy'")
        return OP_CODES[op]
    return int(op)


def check_document(d) -> None:
    """Raise ``ScheduleError`` (one line) for a document
    that is not a schedule (module docstring)."""
    if not isinstance(d, dict):
        raise ScheduleError("a schedule must be a JSON object with ranks, count, itemsize and "
                            "steps")
    for key in ("ranks", "count", "steps"):
        if key not in d:
            raise ScheduleError(f"schedule JSON lacks key {key!r}")
    for key, lo, hi in (("ranks", None, MAX_RANKS), ("count", None, MAX_BYTES),
                        ("itemsize", None, MAX_ITEMSIZE), ("switches", None, MAX_RANKS),
                        ("network", None, 1)):
        if key in d and (not isinstance(d[key], int) or isinstance(d[key], bool)):
            raise ScheduleError(f"schedule JSON key {key!r} must be an integer, got "
                                f"{describe(d[key])}")
        if key in d and d[key] > hi:
            raise ScheduleError(f"schedule JSON key {key!r} must be <= {hi}, got "
                                f"{describe(d[key])}")
    if not isinstance(d["steps"], list) or not all(isinstance(s, list) for s in d["steps"]):
        raise ScheduleError("schedule JSON key 'steps' must be a list of lists of transfers")
    if "collective" in d:
        try:
            get_collective(d["collective"])
        except CollsimError as e:
            raise ScheduleError(f"schedule JSON key 'collective': {e}") from None
    if not isinstance(d.get("name", ""), str) or not isinstance(d.get("meta") or {}, dict):
        raise ScheduleError("schedule JSON key 'name' must be a string and 'meta' an object")
    for s, step in enumerate(d["steps"]):
        for i, t in enumerate(step):
            if not isinstance(t, dict):
                raise ScheduleError(f"steps[{s}][{i}] is not an object")
            for key in (("src", "dst", "offset", "count")
                        + tuple(k for k in ("channel", "lane", "dst_offset") if k in t)):
                v = t.get(key)
                if (not isinstance(v, int) or isinstance(v, bool)
                        or not -MAX_BYTES <= v <= MAX_BYTES):
                    raise ScheduleError(f"steps[{s}][{i}]: {key!r} must be an integer from "
                                        f"-{MAX_BYTES} to {MAX_BYTES}, got {describe(v)}")
            if not isinstance(t.get("op"), str):
                raise ScheduleError(f"steps[{s}][{i}]: 'op' must be 'reduce' or 'copy', "
                                    f"got {describe(t.get('op'))}")
            if not 0 <= t.get("channel", 0) < MAX_CHANNELS:
                raise ScheduleError(f"steps[{s}][{i}]: 'channel' must be from 0 to "
                                    f"{MAX_CHANNELS - 1}, got {describe(t['channel'])}")
            if not 0 <= t.get("lane", 0) <= MAX_LANE:
                raise ScheduleError(f"steps[{s}][{i}]: 'lane' must be from 0 to {MAX_LANE}, got "
                                    f"{describe(t['lane'])}")


def transfer_rows(steps):
    """Steps of ``Transfer``s, dicts or tuples (``Schedule.from_steps``) as an int64 array of rows
    (src, dst, offset, count, op, channel, lane, dst_offset) and the step pointer; zero-length
    transfers and the steps they leave empty are dropped."""
    rows, ptr = [], [0]
    for step in steps:
        for t in step:
            if isinstance(t, Transfer):
                row = (t.src, t.dst, t.offset, t.count, op_code(t.op), t.channel, t.lane,
                       t.offset if t.dst_offset is None else t.dst_offset)
            elif isinstance(t, dict):
                try:
                    row = (t["src"], t["dst"], t["offset"], t["count"], op_code(t["op"]),
                           t.get("channel", 0), t.get("lane", 0), t.get("dst_offset", t["offset"]))
                except KeyError as e:
                    raise ScheduleError(f"transfer {t} lacks key {e.args[0]!r}") from None
            else:
                src, dst, off, cnt, *rest = t
                row = (src, dst, off, cnt, op_code(rest[0] if rest else "reduce"),
                       rest[1] if len(rest) > 1 else 0, rest[2] if len(rest) > 2 else 0, off)
            if row[3] > 0:                     # zero-length transfers move nothing (as the builder)
                rows.append(row)
        if len(rows) > ptr[-1]:                 # steps left empty are dropped
            ptr.append(len(rows))
    return np.array(rows, dtype=np.int64).reshape(-1, 8), ptr
