"""The course's own alpha-beta model fitted to measured AllReduce times, and what it misses.

For each configuration of measured points (``collsim.fit.points``: one algorithm/protocol, or
NCCL's own choice) ``alpha_beta_fit`` fits ``collsim.cost.closed_form`` of an algorithm (default:
the ring) with ``collsim.cost.fit_alpha_beta`` (least squares on relative error), on the training
sizes of a hold-out split (``collsim.fit.points.split``; "odd": fit on even powers of two, test the
odd ones; "all": fit and test every size), and reports the residual per size and the error on
the held-out sizes. With NCCL's choice the entry also says which protocol NCCL ran at each size
(from the run's probe, ``collsim.fit.compare.nccl_choice``), so the residuals can be read against
NCCL's protocol switches.

Units: sizes in bytes per rank, alpha in seconds per message, beta in seconds per byte, times in
microseconds, errors as fractions (predicted / measured - 1).
"""
from __future__ import annotations

import numpy as np

from collsim.cost import closed_form, fit_alpha_beta
from collsim.errors import CollsimError
from collsim.fit import summary
from collsim.fit.compare import nccl_choice
from collsim.fit.points import Point, split


def label(p: Point) -> str:
    """"Ring/Simple" for a forced algorithm/protocol, "NCCL's choice" for NCCL's own."""
    return f"{p.algo}/{p.proto}" if p.algo and p.proto else "NCCL's choice"


def alpha_beta_fit(points: list[Point], holdout: str = "odd", algorithm: str = "ring") -> dict:
    """{label: entry} per configuration of ``points`` (all of one rank count). An entry holds
    ``alpha_s``, ``beta_s_per_byte``, ``rate_GBps`` (1 / beta), ``sizes``, ``measured_us``,
    ``predicted_us``, ``error`` (signed, per size), ``held_out`` (per size), ``test`` (summary of
    |error| on the held-out sizes), ``all`` (summary over every size), ``worst`` (size, signed
    error of the largest |error|) and, for NCCL's choice, ``choice`` ("Ring/LL" ... per size)."""

    if not points:
        raise CollsimError("no measured points to fit")
    ranks = {p.config.ranks for p in points}
    if len(ranks) != 1:
        raise CollsimError(f"alpha_beta_fit takes points of one rank count, got {sorted(ranks)}")
    p_ranks = ranks.pop()
    groups: dict[str, list[Point]] = {}
    for p in points:
        groups.setdefault(label(p), []).append(p)
    out = {}
    for name, pts in sorted(groups.items()):
        pts = sorted(pts, key=lambda p: p.size)
        sizes = np.array([p.size for p in pts], float)
        meas = np.array([p.time_us for p in pts])
        if holdout == "all":
            train = test = np.ones(len(pts), bool)
        else:
            train, test = split(pts, holdout)
        alpha, beta = fit_alpha_beta(sizes[train], meas[train] * 1e-6, algorithm, p_ranks)
        pred = closed_form(algorithm, p_ranks, sizes, alpha, beta) * 1e6
        err = pred / meas - 1
        i = int(np.argmax(np.abs(err)))
        entry = {"alpha_s": alpha, "beta_s_per_byte": beta, "rate_GBps": 1e-9 / beta if beta > 0
                 else float("inf"),
                 "sizes": sizes.astype(np.int64).tolist(), "measured_us": meas.tolist(),
                 "predicted_us": pred.tolist(),
                 "error": err.tolist(), "held_out": test.tolist(),
                 "test": summary(np.abs(err[test])),
                 "all": summary(np.abs(err)), "worst": (int(sizes[i]), float(err[i]))}
        if name == "NCCL's choice":
            entry["choice"] = ["/".join(nccl_choice(p)) for p in pts]
        out[name] = entry
    return out


def switches(entry: dict) -> list[tuple[int, str, str]]:
    """(first size, from, to) wherever NCCL's choice changes along an entry's sizes."""
    choice = entry.get("choice") or []
    return [(entry["sizes"][i], choice[i - 1], choice[i]) for i in range(1, len(choice))
            if choice[i] != choice[i - 1]]
