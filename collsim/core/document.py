"""A schedule as a JSON document, and the checks a document passes before anything is built from it.

JSON schema (``Schedule.to_dict`` / ``Schedule.from_dict``)::

    {
      "ranks": P,            # int >= 1
      "count": N,            # elements per rank buffer, int >= 0
      "itemsize": 4,         # bytes per element, int >= 1
      "switches": 0,         # optional, int >= 0: switch endpoints P..P+switches-1
      "network": 0,          # optional, 0 or 1: the network's switch, endpoint P+switches
      "name": "ring",        # optional
      "steps": [             # list of steps, in order
        [ {"src": 0, "dst": 1, "offset": 0, "count": 4, "op": "reduce", "channel": 0}, ...],
        ...
      ]
    }

``channel`` is optional on input (default 0) and written on every transfer; ``lane`` (0 to ``MAX_LANE``) is
optional and written where it is not 0.

``from_json`` / ``from_dict`` check the document before building anything: JSON nested at most
``collsim.inputs.MAX_JSON_DEPTH`` deep; ``ranks`` 1 to ``MAX_RANKS``, ``count`` 0 to
``MAX_BYTES``, ``itemsize`` 1 to ``MAX_ITEMSIZE``, ``switches`` 0 to ``MAX_RANKS``, ``network`` 0 or 1;
every transfer an object whose src, dst, offset and count are integers from -``MAX_BYTES`` to
``MAX_BYTES``, channel from 0 to ``MAX_CHANNELS`` - 1, lane from 0 to ``MAX_LANE``,
(whether they make sense is the checker's question; within these bounds its arithmetic cannot
overflow) and whose op is "reduce" or "copy".
"""
from __future__ import annotations

from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_BYTES, MAX_CHANNELS, MAX_RANKS

MAX_ITEMSIZE = 1024  # bytes per element a schedule file may give
MAX_LANE = 255       # lanes of a channel (a uint8 column)


class ScheduleError(CollsimError):
    """A schedule (or its JSON) is malformed."""


def check_document(d) -> None:
    """Raise ``ScheduleError`` (one line) for a document that is not a schedule (module docstring)."""
    if not isinstance(d, dict):
        raise ScheduleError("a schedule must be a JSON object with ranks, count, itemsize and steps")
    for key in ("ranks", "count", "steps"):
        if key not in d:
            raise ScheduleError(f"schedule JSON lacks key {key!r}")
    for key, lo, hi in (("ranks", None, MAX_RANKS), ("count", None, MAX_BYTES), ("itemsize", None, MAX_ITEMSIZE),
                        ("switches", None, MAX_RANKS), ("network", None, 1)):
        if key in d and (not isinstance(d[key], int) or isinstance(d[key], bool)):
            raise ScheduleError(f"schedule JSON key {key!r} must be an integer, got {describe(d[key])}")
        if key in d and d[key] > hi:
            raise ScheduleError(f"schedule JSON key {key!r} must be <= {hi}, got {describe(d[key])}")
    if not isinstance(d["steps"], list) or not all(isinstance(s, list) for s in d["steps"]):
        raise ScheduleError("schedule JSON key 'steps' must be a list of lists of transfers")
    if not isinstance(d.get("name", ""), str) or not isinstance(d.get("meta") or {}, dict):
        raise ScheduleError("schedule JSON key 'name' must be a string and 'meta' an object")
    for s, step in enumerate(d["steps"]):
        for i, t in enumerate(step):
            if not isinstance(t, dict):
                raise ScheduleError(f"steps[{s}][{i}] is not an object")
            for key in ("src", "dst", "offset", "count") + tuple(k for k in ("channel", "lane") if k in t):
                v = t.get(key)
                if not isinstance(v, int) or isinstance(v, bool) or not -MAX_BYTES <= v <= MAX_BYTES:
                    raise ScheduleError(f"steps[{s}][{i}]: {key!r} must be an integer from "
                                        f"-{MAX_BYTES} to {MAX_BYTES}, got {describe(v)}")
            if not isinstance(t.get("op"), str):
                raise ScheduleError(f"steps[{s}][{i}]: 'op' must be 'reduce' or 'copy', "
                                    f"got {describe(t.get('op'))}")
            if not 0 <= t.get("channel", 0) < MAX_CHANNELS:
                raise ScheduleError(f"steps[{s}][{i}]: 'channel' must be from 0 to {MAX_CHANNELS - 1}, "
                                    f"got {describe(t['channel'])}")
            if not 0 <= t.get("lane", 0) <= MAX_LANE:
                raise ScheduleError(f"steps[{s}][{i}]: 'lane' must be from 0 to {MAX_LANE}, got {describe(t['lane'])}")
