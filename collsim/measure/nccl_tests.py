"""Import nccl-tests output (``all_reduce_perf``) as collsim measurement records.

Two inputs, told apart by their first non-blank character:

* the text table nccl-tests prints (``# nThread ... nGpus ...`` and ``#  Rank``
  header lines, a column header, rows ``size count type redop root`` followed
  by ``time algbw busbw #wrong`` for out-of-place and again for in-place,
  ``# Avg bus bandwidth`` footer; logs of nccl-tests before 2.10 have no ``root``
  column and a maximum deviation ``error`` for ``#wrong``: wrong is then 0 when
  the log says ``Out of bounds values : 0``, else unknown). NCCL log lines and other chatter may be
  interleaved, and each line may start with a launcher's tag (``[1,0]<stdout>:``,
  ``0:``); a line whose first word is made of digits is a result row and
  must parse (ASCII digits), else ``CollsimError`` names ``file:line`` (``strict=False``:
  the line is skipped and named in ``Measurements.skipped``). A file cut off
  inside its last row (no newline at its end) keeps its complete rows; the cut
  row is named in ``skipped`` and in a ``CollsimWarning``.
* the ``-J FILE`` JSON (``collsim.measure.nccl_tests_json``); several documents one after another
  are several runs, which ``import_nccl_tests`` refuses (one file each).

Values are checked as they are read: times and bandwidths finite numbers >= 0,
``#wrong`` a whole number or N/A, sizes within ``collsim.inputs.MAX_BYTES``, the
meta as ``collsim.measure.check_meta`` wants it.

Each row gives two records (``inplace`` false then true), tagged with
``harness: "nccl-tests"`` in the meta. Text logs do not say which algorithm or
protocol ran, so the caller gives a label ``ALGO/PROTO`` (``Ring/LL``,
``Tree``, ``default`` for NCCL's own choice) stored as ``algo``/``proto``; nor
which NCCL_* variables were set, so the caller may give them (``env``, stored as
meta ``env``; for ``-J`` JSON they add to the recorded ones). They matter to
``collsim.fit.points.harness_key``: NCCL_GRAPH_MIXING_SUPPORT changes a graph call's cost.
"""
from __future__ import annotations

import re
import warnings

from collsim.errors import CollsimError, CollsimWarning
from collsim.inputs import (
    MAX_BYTES,
    MAX_CALLS,
    MAX_RANKS,
    int_text,
    read_text,
)
from collsim.measure import Measurements, check_meta
from collsim.measure.inspector import is_inspector
from collsim.measure.nccl_tests_json import read_nccl_tests_json
from collsim.measure.nccl_tests_rows import (
    DTYPES,  # noqa: F401 - re-exported
    itemsize,
    number,
    parse_label,
    records,
    version_from_code,
)
from collsim.measure.perf_names import STARTING, from_program, resolve
from collsim.nccl.log import VERSION_PATTERN
from collsim.nccl.settings import env_arguments

_PARAMS = re.compile(r"# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) .*?"
                     # no graph: before 2.11
                     r"warmup iters: (\d+) iters: (\d+)(?: .*?graph: (\d+))?", re.ASCII)
_RANK = re.compile(r"#\s+Rank\s+(\d+)(?: Group\s+\d+)? Pid\s+\d+ on\s+(\S+) device\s+(\d+) "
                   r"\[[^\]]*\] (.*)$",
                   re.ASCII)
# What launchers put before each line: mpirun --tag-output "[1,0]<stdout>:", mpirun -l "[0] ", srun
# -l "0: "
_LAUNCHER_TAG = re.compile(r"^\s*(?:\[\d+(?:,\d+)*\](?:<std(?:out|err)>)?:?|\d+:)[ \t]?", re.ASCII)
_OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(\d+)", re.ASCII)
# Columns before the results (size count type redop root; no root before nccl-tests 2.10), the
# results per half-row (time algbw busbw #wrong), and whether the fourth is the older "error".
NEW_LAYOUT = (5, 4, False)
_TESTS_VERSION = re.compile(r"# nccl-tests version (\S+) nccl-headers=(\d+) nccl-library=(\d+)",
                            re.ASCII)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)")


def _row(tokens, layout, where, ranks, extra) -> list[dict]:
    """The two records of one text row (out-of-place, in-place); ``layout`` as ``NEW_LAYOUT``."""
    lead, group, error_column = layout
    if len(tokens) < lead + 2 * group:
        raise CollsimError(f"{where}: nccl-tests row has {len(tokens)} fields, expected "
                           f"{lead + 2 * group}")
    results = []
    for start in (lead, lead + group):
        t, alg, bus, wrong = tokens[start:start + 4]
        if error_column and wrong != "N/A":
            # checked, not kept: a deviation, not a count (see _parse_text)
            number(wrong, where, "error")
        wrong = None if error_column or wrong == "N/A" else int_text(wrong, f"{where}: #wrong", 0,
                                                                     MAX_BYTES)
        results.append((number(t, where, "time"), number(alg, where, "algbw"),
                        number(bus, where, "busbw"), wrong))
    size = int_text(tokens[0], f"{where}: size", 0, MAX_BYTES)
    count = int_text(tokens[1], f"{where}: count", 0, MAX_BYTES)
    columns = {"redop": tokens[3]} if lead >= 4 else {}
    if lead == 5:
        columns["root"] = int_text(tokens[4], f"{where}: root", -1, MAX_RANKS)
    return records(size, count, tokens[2], results, ranks, where, {**columns, **extra})


def _parse_text(text, source, label, strict) -> Measurements:
    algo, proto = parse_label(label)
    meta = {"harness": "nccl-tests", "collective": None, "label": label, "algo": algo,
            "proto": proto, "hosts": [], "devices": []}
    m = Measurements(meta=meta, metas=[meta])
    layout = NEW_LAYOUT
    lines = text.split("\n")
    for lineno, line in enumerate(lines, 1):
        where = f"{source}:{lineno}"
        line = _LAUNCHER_TAG.sub("", line, count=1)
        try:
            if meta.get("nccl_version") is None and (v := VERSION_PATTERN.search(line)):
                meta["nccl_version"] = v.group(1)
            if (program := STARTING.search(line)) and "program" not in meta:
                meta["program"] = program.group(1)
            if line.lstrip().startswith("#"):
                layout = _comment(line, where, meta, layout)
                continue
            tokens = line.split()
            if not tokens or not tokens[0].isdigit():  # any digit: "²" starts a row that is wrong
                continue  # NCCL log lines, blank lines, warnings
            m.records += _row(tokens, layout, where, len(meta["devices"]) or None,
                              {"algo": algo, "proto": proto, "timing": meta.get("timing")})
        except CollsimError as e:
            if lineno == len(lines) and not text.endswith("\n"):  # cut off inside its last row
                m.skipped.append(f"{e} (the file ends inside this row: truncated)")
            elif strict:
                raise
            else:
                m.skipped.append(str(e))
    if layout[2] and meta.get("out_of_bounds") == 0:   # older logs: "Out of bounds values : 0 OK"
        for rec in m.records:
            rec["wrong"] = 0
    meta["world_size"] = len(meta["devices"]) or None
    meta["hosts"] = sorted({d["host"] for d in meta["devices"]})
    meta["nodes"] = len(meta["hosts"]) or 1   # "Rank ... on HOST device ...": one node per host
    check_meta(meta, source)
    if strict and not m.records:
        raise CollsimError(f"{source}: no nccl-tests result rows found")
    if strict and m.skipped:  # only the truncated last row: said once the rest has read well
        warnings.warn(f"skipped {m.skipped[0]}", CollsimWarning, stacklevel=3)
    return m


def _comment(line, where, meta, layout) -> tuple:
    """Read a comment line into ``meta``; returns the row layout (``NEW_LAYOUT``), from the column
    header when this is it."""
    if p := _PARAMS.search(line):
        limits = {"nThread": MAX_RANKS, "nGpus": MAX_RANKS, "minBytes": MAX_BYTES,
                  "maxBytes": MAX_BYTES,
                  "warmup iters": MAX_CALLS, "iters": MAX_CALLS, "graph": MAX_CALLS}
        v = [int_text(x or "0", f"{where}: {name}", 0, hi) for (name, hi),
             x in zip(limits.items(), p.groups())]
        meta.update(gpus_per_process=v[0] * v[1], min_bytes=v[2], max_bytes=v[3], warmup=v[4],
                    iters=v[5],
                    graph=v[6], timing="graph" if v[6] > 0 else "eager")
    elif r := _RANK.search(line):
        meta["devices"].append({"rank": int_text(r.group(1), f"{where}: Rank", 0, MAX_RANKS),
                                "host": r.group(2),
                                "device": int_text(r.group(3), f"{where}: device", 0, MAX_RANKS),
                                "gpu": r.group(4).strip()})
    elif t := _TESTS_VERSION.search(line):
        meta["tests_version"] = t.group(1)
        meta["nccl_library_version"] = version_from_code(int_text(t.group(3),
            f"{where}: nccl-library", 0, 10**9))
    elif a := _AVG.search(line):
        meta["avg_busbw_GBps"] = number(a.group(1), where, "average bus bandwidth")
    elif o := _OUT_OF_BOUNDS.search(line):
        meta["out_of_bounds"] = int_text(o.group(1), f"{where}: out of bounds values", 0, MAX_BYTES)
    elif "size" in line.split() and "count" in line.split():
        names = line.lstrip("#").split()
        lead = names.index("time") if "time" in names else 0
        group = (len(names) - lead - ("timestamp" in names)) // 2
        if lead not in (4, 5) or group < 4:
            raise CollsimError(f"{where}: nccl-tests column header has {len(names)} columns, "
                               "expected size count "
                               "type redop [root], then time algbw busbw #wrong (or error) twice")
        return lead, group, names[lead + 3] == "error"
    return layout


def import_nccl_tests(path, label: str | None = None, strict: bool = True,
                      env: dict | None = None, coll: str | None = None) -> Measurements:
    """Read nccl-tests text output or ``-J`` JSON from ``path`` into ``Measurements``;
    ``env``: NCCL_* variables the run had (``{"NCCL_GRAPH_MIXING_SUPPORT": "0"}``); ``coll``:
    the collective (nccl-tests' name) when the log does not name its program. The meta's
    ``collective`` is the program's, else ``coll``, else what the rows fit
    (``collsim.measure.perf_names.resolve``); a contradiction is a one-line CollsimError."""
    text = read_text(path, "nccl-tests output", errors="replace")
    if text.lstrip().startswith("{"):
        if is_inspector(text):
            raise CollsimError(f"{path}: NCCL Inspector output, not nccl-tests': collsim diagnose "
                               "reads it (a run per communicator and collective)")
        runs = read_nccl_tests_json(text, str(path), label, coll)
        if len(runs) > 1:
            raise CollsimError(f"{path}: holds {len(runs)} nccl-tests -J documents one after "
                               "another (runs pasted together); import them one file each")
        m = runs[0]
    else:
        m = _parse_text(text, str(path), label, strict)
        m.meta["collective"] = resolve(from_program(m.meta.get("program")), coll, m.records,
                                       itemsize, str(path))
    if env:
        m.meta["env"] = {**(m.meta.get("env") or {}), **{str(k): str(v) for k, v in env.items()}}
    return m


def parse_env(items) -> dict:
    """``["NCCL_GRAPH_MIXING_SUPPORT=0", ...]`` -> dict (``collsim.nccl.settings.env_arguments``:
    repeated ``--env`` merged, a name given twice with different values refused); a malformed item
    is a one-line error."""
    return env_arguments(items, prefix="")
