"""Measured vs predicted AllReduce times: collsim's model and NCCL's own tuning model.

Per configuration (algorithm, protocol, ranks, nodes, timing, buffer, channels) the median and
p90 of |predicted / measured - 1| for ``collsim.fitted.model`` and for NCCL's model
(``collsim.nccl.tuning``). NCCL's table is the one NCCL printed in the run (meta
``nccl_probe.tuning``, with its ``coll_channels``) when present, else computed from hardware
inputs (the probe's graph search result, else 2 x H200 defaults: 12 channels x 30 GB/s); the
result says which. Records labelled with NCCL's own choice (algo null) are predicted with the
(algorithm, protocol) NCCL logged for that size, else the argmin of NCCL's table.

Which points: with ``holdout="auto"`` the points the parameters were not fitted on when the
params' hold-out mode can be re-applied here ("odd", "even", "timing"); "all" takes every point.

Executed schedules (``executed``): files of ``runners/schedule_bench.py`` hold the time of collsim
schedules run on a real backend; each is set beside collsim's simulation of the very schedule
that ran (``collsim.measure.executed.executed_schedule``, ``collsim.simulate.simulate_times``) and
beside the backend's own all_reduce timed in the same run.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from collsim.core.budget import simulable
from collsim.errors import CollsimError
from collsim.fit import abs_rel_errors, config_suffix, summary
from collsim.fit.points import Point, split
from collsim.fitted.model import explain, predict
from collsim.fitted.params import ModelParams
from collsim.inputs import read_field
from collsim.measure import load
from collsim.measure.executed import executed_schedule, is_executed, schedules_by_hash
from collsim.nccl import canonical_pair
from collsim.nccl.decision import measured_choice, nccl_table
from collsim.nccl.log import parse_file
from collsim.nccl.probe import check_probe
from collsim.nccl.tuning import algo_time_us
from collsim.simulate import simulate_times


def attach_probe(points: list[Point], path) -> None:
    """Give points whose run recorded no NCCL probe the probe of ``path``: an NCCL debug log
    with the TUNING table, or a runner .jsonl whose meta holds one (``--nccl-probe``)."""
    if str(path).endswith(".jsonl"):
        probe = load(path).meta.get("nccl_probe") or {}  # checked by the loader
    else:
        probe = parse_file(path).to_dict()
        check_probe(probe, f"NCCL log {path}")
    # one new meta per run's meta, shared by its points (compare makes NCCL's table once per meta)
    given = {}
    for p in points:
        if not p.meta.get("nccl_probe"):
            p.meta = given.setdefault(id(p.meta), {**p.meta, "nccl_probe": probe})


def nccl_choice(p: Point) -> tuple[str, str]:
    """(algorithm, protocol) that ran at point ``p`` (``collsim.nccl.decision.measured_choice``)."""
    return measured_choice(p.meta, p.algo, p.proto, p.size, p.config.ranks, p.config.nodes,
                           p.config.intra)


def term_shares(params: ModelParams, points: list[Point]) -> tuple[np.ndarray, dict]:
    """Where time goes: (sizes, {term: share of collsim's predicted time per size}) for ``points``
    of one configuration (``collsim.fitted.model.explain``'s terms, each size with the algorithm and
    protocol that ran there; sizes ascending, shares sum to 1 per size). Points whose pair collsim
    does not model get no shares (left out)."""

    rows = {}
    by_pair: dict = {}
    for p in points:
        by_pair.setdefault(nccl_choice(p), []).append(p)
    for (algo, proto), pts in by_pair.items():
        try:
            a, pr = canonical_pair(algo, proto)
        except CollsimError:
            continue
        cfg = pts[0].config
        for row in explain(params, a, pr, sorted({q.size for q in pts}), cfg):
            rows[row["bytes"]] = row["shares"]
    sizes = np.array(sorted(rows), dtype=np.int64)
    names = list(next(iter(rows.values()))) if rows else []
    return sizes, {k: np.array([rows[int(s)].get(k, 0.0) for s in sizes]) for k in names}


def predictions(params: ModelParams,
                points: list[Point]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(collsim us, NCCL-model us, NCCL table source) per point; nan where a model has no answer
    (NCCL chose an algorithm collsim does not model, or the table disables the pair). NCCL's table
    is made once per run and machine, and each model predicts all sizes of one configuration at
    once."""
    n = len(points)
    ours, theirs, sources = np.full(n, np.nan), np.full(n, np.nan), [""] * n
    tables, groups = {}, {}
    for i, p in enumerate(points):
        c = p.config
        key = (id(p.meta), c.ranks, c.nodes, c.intra)
        if key not in tables:
            tables[key] = nccl_table(p.meta, c.ranks, c.nodes, c.intra)
        table, sources[i] = tables[key]
        algo, proto = measured_choice(p.meta, p.algo, p.proto, size=p.size, ranks=c.ranks,
                                      nodes=c.nodes, intra=c.intra, table=table)
        groups.setdefault((key, algo, proto, c), []).append(i)
    for (key, algo, proto, config), idx in groups.items():
        table, sizes = tables[key][0], [points[i].size for i in idx]
        try:
            a, pr = canonical_pair(algo, proto)
            ours[idx] = predict(params, a, pr, sizes, config)
        except CollsimError:
            pass
        if (algo, proto) in table.bw:
            theirs[idx] = algo_time_us(table, algo, proto, sizes)
    return ours, theirs, sources


def select(points: list[Point], params: ModelParams, holdout: str = "auto", algo=None, proto=None,
           ranks=None) -> tuple[list[Point], str]:
    """Points to compare on, filtered by labels, and a description of which they are."""
    if algo or proto:
        want = canonical_pair(algo or "Ring", proto or "Simple")
        points = [p for p in points if (not algo or p.algo == want[0])
                  and (not proto or p.proto == want[1])]
    if ranks:
        points = [p for p in points if p.config.ranks == int(ranks)]
    if not points:
        raise CollsimError("no measured points match the --algo/--proto/--ranks filters")
    mode = params.meta.get("holdout") if holdout == "auto" else holdout
    if mode in ("odd", "even", "timing"):
        _, test = split(points, mode)
        points = [p for p, k in zip(points, test) if k]
        if not points:
            raise CollsimError(f"no held-out points ({mode}) among the selected measurements")
        return points, f"held out ({mode})"
    if holdout not in ("auto", "all", "run"):
        raise CollsimError(
            f"unknown --holdout {holdout!r}; expected auto, all, odd, even or timing")
    return points, "all"


def config_name(p: Point) -> str:
    c = p.config
    return (f"{p.algo or 'default'}/{p.proto or 'default'}/{c.ranks}r{c.nodes}n/{c.intra}/"
            f"{c.timing}" + config_suffix(c))


def compare(params: ModelParams, points: list[Point], holdout: str = "auto", algo=None, proto=None,
            ranks=None) -> dict:
    """Errors of collsim and of NCCL's model: overall and per configuration (fractions).
    "unknown_harness" lists the harness keys of the points whose per-call overhead ``params``
    does not hold (predicted with none: give their A/B files to ``fit.with_overheads``)."""
    points, which = select(points, params, holdout, algo, proto, ranks)
    ours, theirs, sources = predictions(params, points)
    meas = np.array([p.time_us for p in points])
    e_ours, e_theirs = abs_rel_errors(ours, meas), abs_rel_errors(theirs, meas)
    names = [config_name(p) for p in points]
    configs = []
    for name in sorted(set(names)):
        idx = [i for i, n in enumerate(names) if n == name]
        configs.append({"config": name, "nccl_table": sources[idx[0]],
                        "model": summary(e_ours[idx][np.isfinite(e_ours[idx])]),
                        "nccl": summary(e_theirs[idx][np.isfinite(e_theirs[idx])]),
                        "sizes": [points[i].size for i in idx], "measured_us": meas[idx].tolist(),
                        "model_us": ours[idx].tolist(), "nccl_us": theirs[idx].tolist()})
    unknown = sorted({p.config.harness for p in points} - {"bare"} - set(params.harness_us))
    return {"points": which, "model": summary(e_ours[np.isfinite(e_ours)]),
            "nccl": summary(e_theirs[np.isfinite(e_theirs)]), "configs": configs,
            "unknown_harness": unknown}


def _by_algo_and_size(record: dict) -> tuple:
    """Records in (algorithm, size) order; one without them sorts last, and ``executed_schedule``
    names it."""
    size = record.get("size")
    return str(record.get("algo")), size if isinstance(size,
                                                       (int,
                                                        float)) and not isinstance(size,
                                                                                   bool) else 2**63


def executed(paths, topology_for, gamma: float = 0.0, schedule_files=()) -> list[dict]:
    """One row per executed schedule and size of each file (by algo, then size): ``measured_us``
    (the record's time_us, max over ranks of each rank's mean), ``simulated_us`` (the schedule that
    ran, simulated on ``topology_for(world_size)`` with ``gamma`` s/byte), ``native_us`` (the file's
    native all_reduce of that size, None without --with-native), ``wrong``, ``file``, ``topology``
    (its description), ``algo``, ``size`` (bytes), ``ranks``. A file that is not of executed
    schedules, or whose schedule cannot be rebuilt as it ran, raises ``CollsimError``.
    ``schedule_files``: the schedule files the user named for records that ran one (else only the
    file of the recorded name beside the measurement file is looked at, ``executed_schedule``)."""
    rows, given = [], schedules_by_hash(schedule_files)
    for path in paths:
        m = load(path)
        if not is_executed(m.meta):
            raise CollsimError(f"{path}: not a file of executed collsim schedules (its meta has no "
                               "'schedule'); "
                               "compare NCCL measurements with --params PARAMS --measured FILE")
        native = {r["size"]: r["time_us"] for r in m.records if r.get("executor") == "native"}
        records = sorted((r for r in m.records if r.get("executor") == "collsim"),
                         key=_by_algo_and_size)
        schedules = (executed_schedule(m.meta, r, Path(path).parent, given) for r in records)
        world = read_field(m.meta, "world_size", f"{path}: meta", int, required=True, minimum=1)
        topology = topology_for(world)
        simulated = simulate_times(simulable(schedules), topology, gamma)
        rows += [{"file": str(path), "topology": topology.describe(), "algo": r.get("algo"),
                  "bytes": r["size"],
                  "ranks": r.get("ranks") or world, "wrong": r["wrong"],
                  "measured_us": r["time_us"],
                  "simulated_us": float(t) * 1e6, "native_us": native.get(r["size"])}
                 for r, t in zip(records, simulated)]
    return rows

