"""Executed schedules: what ``runners/schedule_bench.py`` records about the schedules it ran on a
real backend, and the schedule behind each of its records.

A file of executed schedules is a measurement file (``collsim.measure``) whose meta has the key
``schedule``, one of:

* ``{"algorithms": {"ring": {"slices": 2}, "double-tree": {}}}``: the run built each size's schedule
  with ``collsim.algorithms.build_schedule`` (or ``collsim.algorithms.lecture.LECTURE``) for
  ``world_size`` ranks and the record's ``count``, passing these keyword parameters (parameters
  left out take their defaults, e.g. the tree's chunks follow the size);
* ``{"file": PATH, "sha256": HASH, "name": NAME}``: the run executed the schedule in a JSON file
  (``collsim.core.schedule``), as given on its command line. collsim never opens PATH itself: the
  schedule is one the user names (``compare --schedule FILE``) or the file of PATH's last component
  in the measurement file's own folder, taken only when its sha256 is the recorded one.

Its result records add ``executor``: "collsim" for the executed schedule (``algo``
"collsim:NAME", ``schedule_sha256`` the hash below, ``steps`` and ``transfers`` of the schedule)
or "native" for the backend's own ``all_reduce`` timed alongside (``algo`` null).
A schedule's hash is the sha256 of its canonical JSON (``Schedule.to_dict`` with sorted keys and
no spaces), so a rebuilt or re-read schedule can be proved to be the one that ran.
"""
from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path

from collsim.algorithms import ALGORITHMS, build_schedule
from collsim.algorithms.lecture import LECTURE
from collsim.core.schedule import Schedule, read_schedule
from collsim.errors import CollsimError, describe, describe_key
from collsim.inputs import read_field, regular_file

PREFIX = "collsim:"
# algorithm names of files written before collsim 0.2 (the same transfers, named as they were then)
LEGACY_NAMES = {"tree": "double-tree", "hierarchical-nccl": "nccl-tree"}


def schedule_hash(schedule: Schedule) -> str:
    """sha256 (hex) of the schedule's canonical JSON."""
    text = json.dumps(schedule.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def parameters() -> dict[str, type]:
    """The keyword parameters ``build_schedule`` takes and their type (str where the default is
    a string, else int): what a runner passes through as ``--name`` options."""
    sig = inspect.signature(build_schedule).parameters.values()
    return {p.name: str if isinstance(p.default, str) else int for p in sig
            if p.kind is p.KEYWORD_ONLY}


def algorithm_names(spec: str) -> list[str]:
    """"ring", "ring,double-tree", "all" (every registered algorithm a backend can run: none through
    a switch) or "all,lecture-ring" as names, each once; the lecture's schedules (``LECTURE``) are
    accepted by name."""
    parts = [n.strip() for n in spec.split(",") if n.strip()]
    # no backend has a switch endpoint
    runnable = [n for n, a in ALGORITHMS.items() if not (a.switches or a.network)]
    names = list(dict.fromkeys(n for p in parts for n in (runnable if p == "all" else [p])))
    known = list(ALGORITHMS) + list(LECTURE)
    for n in names:
        if n not in known:
            raise CollsimError(f"unknown algorithm {n!r}; choose from {', '.join(known)} or all")
    if not names:
        raise CollsimError("--algo needs an algorithm name")
    return names


def algorithm_params(names: list[str], given: dict, ranks_per_node: int) -> dict[str, dict]:
    """Each algorithm's keyword parameters: those of ``given`` it takes, and ``gpus_per_node``
    (default ``ranks_per_node``) where it needs one. A parameter no algorithm takes is an error."""
    takes = {n: ALGORITHMS[n].params if n in ALGORITHMS else () for n in names}
    unused = [k for k in given if not any(k in t for t in takes.values())]
    if unused:
        raise CollsimError(f"no algorithm of {', '.join(names)} takes {unused[0]!r}")
    out = {}
    for n, t in takes.items():
        out[n] = {k: v for k, v in given.items() if k in t}
        if n in ALGORITHMS and "gpus_per_node" in ALGORITHMS[n].needs:
            out[n].setdefault("gpus_per_node", ranks_per_node)
    return out


def build(name: str, ranks: int, count: int, itemsize: int, params: dict) -> Schedule:
    """The schedule of a registered algorithm or of the lecture's pseudo-code; a name of an older
    collsim (``LEGACY_NAMES``) builds today's schedule under the name it had then."""
    if name in LECTURE:
        return LECTURE[name](ranks, count, itemsize)
    schedule = build_schedule(LEGACY_NAMES.get(name, name), ranks, count, itemsize, **params)
    if name in LEGACY_NAMES:                  # as it was then: no lanes
        schedule.lane[:] = 0
    schedule.name = name
    return schedule


def file_name(schedule: Schedule, path) -> str:
    """The name a schedule file's records carry: the schedule's own, else the file's stem."""
    return schedule.name or Path(path).stem


def is_executed(meta: dict) -> bool:
    return isinstance(meta.get("schedule"), dict)


def schedule_meta(meta: dict, where: str = "meta") -> dict:
    """The meta's ``schedule`` checked: ``algorithms`` an object of algorithm names, each with an
    object of ``build_schedule``'s parameters, or ``file`` a plain file name with its ``sha256``;
    else one CollsimError line naming the field."""
    how = meta.get("schedule")
    if not isinstance(how, dict):
        raise CollsimError(f"{where}: field 'schedule' must be an object, got {describe(how)}")
    if "file" in how:
        for key in ("file", "sha256"):
            if not isinstance(how.get(key), str) or not how[key]:
                raise CollsimError(f"{where}: field 'schedule.{key}' must be a non-empty string, "
                                   "got "
                                   f"{describe(how.get(key))}")
        return how
    algorithms = how.get("algorithms")
    if not isinstance(algorithms, dict):
        raise CollsimError(f"{where}: field 'schedule.algorithms' must be an object of algorithm "
                           "names, got "
                           f"{describe(algorithms)}")
    takes = parameters()
    for name, params in algorithms.items():
        if name not in ALGORITHMS and name not in LECTURE and name not in LEGACY_NAMES:
            raise CollsimError(f"{where}: field 'schedule.algorithms' names an unknown algorithm "
                               f"{describe(name)}")
        if not isinstance(params, dict):
            raise CollsimError(f"{where}: field 'schedule.algorithms.{name}' must be an object of "
                               "parameters, got "
                               f"{describe(params)}")
        for key, value in params.items():
            if key not in takes:
                raise CollsimError(f"{where}: field 'schedule.algorithms.{name}' has an unknown "
                                   "parameter "
                                   f"{describe_key(key)} (known: {', '.join(takes)})")
            kind = bool if key == "direct" else takes[key]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                wanted = ("a string" if kind is str else "true or false" if kind is bool
                          else "an integer")
                raise CollsimError(f"{where}: field 'schedule.algorithms.{name}.{key}' must be "
                                   f"{wanted}, got {describe(value)}")
    return how


def schedules_by_hash(paths) -> dict[str, Schedule]:
    """The schedule files the user named (``compare --schedule``), by their hash."""
    return {schedule_hash(s): s for s in (read_schedule(p) for p in paths or ())}


def _beside(name: str, folder) -> Schedule | None:
    """The schedule file ``name`` of a meta looked up in ``folder`` (the measurement file's, which
    the user named): by its last path component only, a regular file within the bounds that holds a
    valid schedule (its hash is checked by the caller); None otherwise. Nothing of what it holds
    reaches an error message."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    if base in ("", ".", ".."):
        return None
    path = Path(folder) / base
    try:
        regular_file(path, "schedule file")
        schedule = read_schedule(path)
    except CollsimError:
        return None
    return schedule


def executed_schedule(meta: dict, record: dict, folder=".", given: dict | None = None) -> Schedule:
    """The schedule a record of executed schedules ran, rebuilt from the meta's algorithm and
    parameters, or for a schedule file one of ``given`` (``schedules_by_hash`` of the files the user
    named) or the file of that name in ``folder`` (the measurement file's, never another path the
    meta names), its hash checked against the record's: a mismatch (collsim or the file changed
    since the run) raises ``CollsimError``."""
    how = schedule_meta(meta)
    where = f"record of {describe(record.get('algo'))} at {describe(record.get('size'))} B"
    name = str(record.get("algo") or "")[len(PREFIX):]
    expected = read_field(record, "schedule_sha256", where, str, required=True)
    size = read_field(record, "size", where, int, required=True, minimum=0)
    if "file" in how:
        schedule = (given or {}).get(expected) or _beside(how["file"], folder)
        if schedule is None:
            raise CollsimError(f"{where}: ran the schedule file {describe(how['file'])}, which is "
                               "not beside the "
                               "measurement file with the recorded sha256; give it with --schedule "
                               "FILE "
                               "(collsim opens no other path a measurement file names)")
        what = f"schedule file {how['file'][:200]}"
    else:
        params = how["algorithms"].get(name)
        if params is None:
            raise CollsimError(f"{where}: the meta lists no such algorithm")
        count = read_field(record, "count", where, int, required=True, minimum=0)
        ranks = read_field(record, "ranks", where, int, minimum=1) or read_field(
            meta, "world_size", "meta", int, required=True, minimum=1)
        schedule = build(name, ranks, count, size // max(count, 1), params)
        what = f"{name} {params} rebuilt by this collsim"
    if schedule_hash(schedule) != expected:
        raise CollsimError(f"{what} is not the schedule that ran at {size} B (its sha256 differs)")
    return schedule
