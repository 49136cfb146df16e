"""Harness terms of the model, measured rather than fitted: each clock's fixed cost per measurement
(``start_costs``) and each harness's per-call overhead (``harness_overheads``), from A/B files on
one machine; ``with_overheads`` puts both into ``ModelParams`` (``harness_us``, ``start_us``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fit.points import Point
from collsim.fitted.params import ModelParams, clock_share


def start_costs(points: list[Point], max_size: int = 65536) -> dict:
    """{clock: fixed cost per measurement in us} from measurements of one harness at two or more
    call counts (``Config.calls``; e.g. the runner's -n 100 and -n 400, nccl-tests' -G 20 and
    -G 100): with t = t_call + F / calls, F = (t_few - t_many) / (1/few - 1/many) from the
    fewest and the most calls (median time per count), median over the graph points of sizes <=
    ``max_size`` of the same label, rank count and harness. Clocks timed at one count only are
    not listed."""
    runs: dict = {}
    for p in points:
        c = p.config
        if c.calls and c.timing == "graph" and p.size <= max_size:
            key = (c.clock, c.harness, p.size, p.algo, p.proto, c.ranks)
            runs.setdefault(key, {}).setdefault(c.calls, []).append(p.time_us)
    est: dict = {}
    for key, by_calls in runs.items():
        if len(by_calls) > 1:
            few, many = min(by_calls), max(by_calls)
            dt = float(np.median(by_calls[few]) - np.median(by_calls[many]))
            est.setdefault(key[0], []).append(dt / (1 / few - 1 / many))
    return {k: max(float(np.median(v)), 0.0) for k, v in sorted(est.items())}


def harness_overheads(points: list[Point], max_size: int = 65536,
                      start_us: dict | None = None) -> dict:
    """{harness key: per-call overhead in us} from A/B measurements on one machine: for each
    harness other than "bare", the median over sizes <= ``max_size`` of (its time - the bare
    time) for points of the same size, algorithm/protocol label and rank count, each time less
    its clock's share of ``start_us`` (``nccl_model.clock_share``); repeated runs of the bare
    runner count by their median time per size."""
    start_us = start_us or {}
    runs: dict = {}
    for p in points:
        if p.config.harness == "bare" and p.config.timing == "graph" and p.size <= max_size:
            runs.setdefault((p.size, p.algo, p.proto, p.config.ranks), []).append(
                p.time_us - clock_share(start_us, p.config))
    bare = {k: float(np.median(v)) for k, v in runs.items()}
    diffs: dict = {}
    for p in points:
        ref = bare.get((p.size, p.algo, p.proto, p.config.ranks))
        if p.config.harness != "bare" and ref is not None:
            diffs.setdefault(p.config.harness,
                             []).append(p.time_us - clock_share(start_us, p.config) - ref)
    if not diffs:
        raise CollsimError("harness overheads need graph points of a harness and of the bare "
                           "runner "
                           f"(NCCL_GRAPH_MIXING_SUPPORT=0) at the same sizes up to {max_size} B")
    return {k: max(float(np.median(v)), 0.0) for k, v in sorted(diffs.items())}


def with_overheads(params: ModelParams, overhead_points: list[Point]) -> ModelParams:
    """``params`` with the clocks' fixed costs (``start_costs``) and the harness overheads
    measured from ``overhead_points`` (A/B files)."""
    start = {**params.start_us, **start_costs(overhead_points)}
    return replace(params, start_us=start,
                   harness_us={**params.harness_us,
                               **harness_overheads(overhead_points, start_us=start)})
