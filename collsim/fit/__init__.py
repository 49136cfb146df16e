"""Fit ``collsim.fitted.model`` parameters to measurements, with held-out error.

Points come from ``collsim.fit.points.load_points`` (runner JSON Lines, nccl-tests output;
re-exported here). Records whose algorithm or protocol is NCCL's own choice (null) are not fitted
(``compare`` still predicts them). Nodes > 1 fits the "net" link class.

Harness overhead (``harness_overheads``): the per-call time a harness adds beyond NCCL's kernel
time (``points.harness_key``) is not fitted with the sweeps but measured by an A/B pair on the
same machine: the median difference, over sizes up to 64 KiB, between the harness's time and the
runner's "bare" graph time (NCCL_GRAPH_MIXING_SUPPORT=0) for the same NCCL choice and size. So is
each clock's fixed cost per measurement (``start_costs``), from the same harness timed at two
call counts. Both are then fixed terms of the model (``ModelParams.harness_us``, ``start_us``)
while the paths are fitted.

Method: per (link class, algorithm, protocol), least squares on log(predicted / measured) over the
training points of every configuration sharing those parameters, in log-parameter space within
``BOUNDS``, by ``scipy.optimize.least_squares`` ("trf"): from three starting points with scipy's
default tolerances, then from the best of them to convergence (``SOLVER``: central differences,
steps below 1e-12). A weak prior keeps every fit well-conditioned: each parameter also pays
MIN_EFFECT x sqrt(points) x log(value / start value), where the start value is its prior or the
path's value from an earlier stage (one e-fold below the lower bound for a term whose prior is 0, no
effect; for host_us without one, the fastest call measured: an eager call cannot be faster than the
launch interval, so that is its largest value). Moving parameters by a factor e then costs as much
as MIN_EFFECT (0.1%) rms of misfit: along directions the data sees this moves the fit negligibly;
along directions it cannot see (e.g. base_us against step_us x steps where the step count is the
same at every size, chan_GBps once the link cap binds, host_us with no eager point at the launch
floor) the prior decides, instead of rounding and the BLAS beneath. Parameters mostly in such
directions are listed per path in ``params.meta["unseen"]`` (``_unseen``): their values are the
prior's pull against data that barely moves them, not measurements. ACCURACY.md "Fit method"
compares this with the hand-written Levenberg-Marquardt it replaced: held-out medians of the graph
sweeps the same within 0.3 points or better; worse: the emulated socket path (5.5% -> 6.3%, p90 12%
-> 18%; five to ten points per path, which the old optimiser settled by rounding), eager Tree LL
(9.1% -> 9.8%) and runner -> nccl-tests Tree LL (6.4% -> 7.4%, from a Tree LL solution of lower
cost); parameters reproducible across OpenBLAS kernels to ~1e-6 instead of 1e-4 to 100%; fits up to
twice as fast. Fitted: base_us, step_us, chan_GBps, fill, warp_us (``BOUNDS``; warp_us is told apart
from step_us by the sizes where NCCL runs fewer threads per channel); spill too when the path's
training points have NCCL's receive buffers both within and beyond L2 (sizes >= 4 MiB, where
bandwidth shows; else it stays 0: nothing could tell it apart from chan_GBps); warm only when some
size >= 2 MiB was measured both with the user buffer still in L2 and not (an A/B such as the runner
with and without --rotate; a sweep alone has it in L2 up to 16 MiB and not above, which the fit
would confuse with how bandwidth grows with size) and not for the "net" class (its bandwidth is the
network's), else it stays at its start value (1: no effect); and, for a path whose training points
ran at three or more channel counts (NCCL_MAX/MIN_NCHANNELS sweeps), the link cap link_GBps and its
sharpness link_exp, shared by the paths fitted after it (those paths first); that path's own
parameters are then re-fitted on its runs at the default channel count only (a sweep is often
another session, whose latency floor differs). hop_us stays at its prior (NCCL's per-hop constant),
since with a fixed rank count only base + hops x hop_us is observable. Then host_us (eager launch
interval) is fitted on the eager training points, the others fixed (with eager points only, all five
together).

Hold-out (``points.split``): "odd", "even", "timing", "run"; errors on the test points only.

Modules: ``points`` (measured points and harness keys), ``overheads`` (harness terms), ``compare``
(measured vs collsim's fitted model vs NCCL's own; executed schedules vs their simulation),
``cluster_compare`` (the same from a cluster description), ``simulated`` (the event simulation's
per-transfer costs fitted with the simulation in the loop, on the sets of ``sim_sets``:
``sim_params.json``), ``quick`` (a cluster description calibrated on a quick run of the machine),
``coverage`` (leave-one-log-out of the ranges and the quick run), ``alpha_beta`` (the course's
alpha-beta fit).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collsim.core.budget import BASE_BYTES
from collsim.errors import CollsimError
from collsim.fit.overheads import with_overheads
from collsim.fit.points import Point, split
from collsim.fitted.layout import Config, layout
from collsim.fitted.model import predict_layout
from collsim.fitted.params import ModelParams, default_params, with_path
from collsim.inputs import check_memory
from collsim.measure import RECORD_BYTES

BOUNDS = {"base_us": (1e-2, 5000.0), "step_us": (1e-3, 500.0), "chan_GBps": (1e-3, 500.0),
          "fill": (1e-3, 16.0),
          "host_us": (1e-2, 5000.0), "spill": (1e-3, 2.0), "warp_us": (1e-4, 5.0),
          "warm": (0.3, 3.0),
          "link_GBps": (1.0, 5000.0),
          "link_exp": (0.5, 16.0)}
LINK_NAMES = ("link_GBps", "link_exp")  # fitted values that are not per path
FITTED = ("base_us", "step_us", "chan_GBps", "fill", "warp_us")
# the final least_squares: central differences (error ~1e-11, not 1e-8) and steps below 1e-12 before
# it stops
SOLVER = {"method": "trf", "jac": "3-point", "xtol": 1e-12, "ftol": None, "gtol": None}
# rms change of log(predicted) per unit change of log(parameters) the data must show
MIN_EFFECT = 1e-3
# per point, beside its record (collsim.measure.RECORD_BYTES): the residuals and Jacobians of
# least_squares
# (points x parameters, a few copies) and the layouts; the SVD of a Jacobian keeps only its small
# factor
FIT_BYTES_PER_POINT = 500
BOUND_TOL = 1e-6  # distance (log units) to a bound within which a fitted value is that bound


def config_suffix(cfg: Config) -> str:
    """"/harness" when not bare, "/buffB/chC" when NCCL_BUFFSIZE or a non-default channel count."""
    out = "" if cfg.harness == "bare" else f"/{cfg.harness}"
    if cfg.buffsize or cfg.channels not in (None, 24):
        out += f"/buff{cfg.buffsize or 'default'}/ch{cfg.channels or 'default'}"
    return out


def link_class(cfg: Config) -> str:
    return cfg.intra if cfg.nodes == 1 else "net"


def _groups(points):
    """{(link, algo, proto): {config: (sizes, times)}} for labelled points."""
    out: dict = {}
    for p in points:
        if p.algo is None or p.proto is None:
            continue
        cfgs = out.setdefault((link_class(p.config), p.algo, p.proto), {})
        cfgs.setdefault(p.config, ([], []))
        cfgs[p.config][0].append(p.size)
        cfgs[p.config][1].append(p.time_us)
    return out


def _with(params: ModelParams, key, values: dict) -> ModelParams:
    """params with ``values`` set: per-path names on path ``key``, LINK_NAMES on its link."""
    out = with_path(params, key, **{n: v for n, v in values.items() if n not in LINK_NAMES})
    if "link_GBps" in values:
        out.link_GBps = {**params.link_GBps, key[0]: values["link_GBps"]}
    if "link_exp" in values:
        out.link_exp = values["link_exp"]
    return out


def _fit_path(params: ModelParams, key, data: dict, names) -> tuple[ModelParams, tuple]:
    """(params with the best values of ``names`` for one (link, algo, proto), the others fixed;
    the names the data cannot tell apart, ``_unseen``). Method: module docstring."""
    layouts = [(layout(key[1], key[2], s, cfg, params.channels), np.log(t)) for cfg,
               (s, t) in data.items()]
    current = {**params.path(*key), "link_GBps": params.link_GBps[key[0]],
               "link_exp": params.link_exp or 2.0}
    floor = min(np.exp(lt).min() for _, lt in layouts)
    link = {n: current[n] for n in LINK_NAMES}
    guesses = [current,
               {**link, "base_us": floor * 0.8, "step_us": 0.05, "chan_GBps": 20.0, "fill": 1.0,
                "spill": 0.1,
                "warp_us": 0.05, "warm": 0.9},
               {**link, "base_us": floor * 0.5, "step_us": 2.0, "chan_GBps": 5.0, "fill": 0.2,
                "spill": 0.3,
                "warp_us": 0.001, "warm": 1.1}]
    names = list(names)
    lo, hi = (np.log([BOUNDS[n][i] for n in names]) for i in (0, 1))
    centre = {**current, "host_us": current["host_us"] or floor}
    prior = np.array([np.log(centre[n]) if centre[n] > BOUNDS[n][0] else lo[i] - 1 for i,
                      n in enumerate(names)])
    points = sum(lt.size for _, lt in layouts)
    weight = MIN_EFFECT * np.sqrt(points)

    def residual(u):
        trial = _with(params, key, dict(zip(names, np.exp(u))))
        return np.concatenate([np.log(predict_layout(trial, lay)) - lt for lay,
                               lt in layouts] + [weight * (u - prior)])

    from scipy.optimize import least_squares  # lazily: scipy costs every command 0.3 s to import
    starts = [np.clip(np.log([max(g.get(n, floor), BOUNDS[n][0]) for n in names]), lo, hi)
              for g in guesses]
    rough = min((least_squares(residual, u, bounds=(lo, hi), method="trf") for u in starts),
                key=lambda r: r.cost)
    best = least_squares(residual, rough.x, bounds=(lo, hi), **SOLVER)
    on_lo, on_hi = best.x - lo < BOUND_TOL, hi - best.x < BOUND_TOL
    # on a bound: exactly the bound
    values = np.exp(np.where(on_lo, lo, np.where(on_hi, hi, best.x)))
    unseen = _unseen(best.jac[:points], ~(on_lo | on_hi))
    return _with(params, key,
                 dict(zip(names, map(float, values)))), tuple(n for n, k in zip(names, unseen) if k)


def _unseen(jac: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """Which parameters the data cannot tell apart (bool per column of ``jac``).

    ``jac``: d log(predicted) / d log(parameter), one row per training point. A direction of the
    parameters is unseen when its singular value is below MIN_EFFECT x sqrt(rows): moving along
    it by a factor e changes the predictions by less than MIN_EFFECT rms (more columns than rows
    always leave such directions). A parameter off its bounds (``inside``) is unseen when at
    least half of it lies in them (the diagonal of the projector onto them, which does not depend
    on the basis the SVD picks); one on a bound is set by it."""
    out = np.zeros(jac.shape[1], dtype=bool)
    cols = np.flatnonzero(inside)
    if cols.size:
        # vt in full (cols x cols) needs U in full only with fewer rows than columns: never rows x
        # rows
        _, sv, vt = np.linalg.svd(jac[:, cols], full_matrices=jac.shape[0] < cols.size)
        small = np.concatenate([sv,
                                np.zeros(cols.size - sv.size)]) < MIN_EFFECT * np.sqrt(jac.shape[0])
        out[cols] = (vt[small] ** 2).sum(axis=0) >= 0.5
    return out


def _names(params: ModelParams, key, data: dict) -> tuple:
    """Which parameters the training data of one path can tell apart (module docstring)."""
    names = FITTED
    lays = [layout(key[1], key[2], s, cfg, params.channels) for cfg, (s, _) in data.items()]
    big = np.concatenate([lay.footprint[lay.sizes >= 4 << 20] for lay in lays])
    if (~params.in_l2(big)).any() and params.in_l2(big).any():
        names += ("spill",)
    warm = {}  # size (>= 2 MiB) -> {user buffer still in L2?} over the path's configurations
    for lay in lays:
        for size, hot in zip(lay.sizes.tolist(), params.in_l2(lay.user_footprint)):
            if size >= 2 << 20:
                warm.setdefault(size, set()).add(bool(hot))
    if key[0] != "net" and any(len(v) == 2 for v in warm.values()):
        names += ("warm",)
    if len({cfg.channels or params.channels for cfg in data}) >= 3:
        names += LINK_NAMES
    return names


def abs_rel_errors(pred, meas) -> np.ndarray:
    """|predicted - measured| / measured per point."""
    return np.abs(np.asarray(pred, float) / np.asarray(meas, float) - 1.0)


def summary(errors) -> dict:
    """median and p90 of |relative error| (fractions) and the point count."""
    e = np.asarray(errors, float)
    if e.size == 0:
        return {"n": 0, "median_abs_rel_error": None, "p90_abs_rel_error": None}
    return {"n": int(e.size), "median_abs_rel_error": float(np.median(e)),
            "p90_abs_rel_error": float(np.percentile(e, 90))}


def fit(points: list[Point], holdout: str = "odd", start: ModelParams | None = None,
        overhead_points: list[Point] | None = None) -> tuple[ModelParams, dict]:
    """Fit on the training points of ``holdout``; return (params, report). The report holds,
    per "link/algo/proto/ranks/nodes/timing[/harness]" group, held-out errors of the fitted
    model. ``overhead_points``: A/B measurements for ``harness_overheads`` (held fixed).
    ``params.meta`` records the hold-out, the point counts, the report and "unseen":
    {"link/algo/proto": names the training data cannot tell apart, whose values are the prior's}."""
    check_memory(BASE_BYTES + (RECORD_BYTES + FIT_BYTES_PER_POINT) * len(points),
                 f"fitting {len(points)} points (their records and Jacobians)")
    train, test = split(points, holdout)
    params = start or default_params()
    if overhead_points:
        params = with_overheads(params, overhead_points)
    tr = [p for p, k in zip(points, train) if k]
    groups = _groups(tr)
    if not groups:
        raise CollsimError("no labelled (algorithm/protocol) training points to fit")
    params = replace(params, paths=dict(params.paths), link_GBps=dict(params.link_GBps),
                     meta=dict(params.meta))
    plans = []
    for key, data in groups.items():
        graph = {c: v for c, v in data.items() if c.timing == "graph"}
        eager = {c: v for c, v in data.items() if c.timing == "eager"}
        names = _names(params, key, graph or eager) + (() if graph else ("host_us",))
        plans.append((key, graph, eager, names))
    unseen = {}  # (link, algo, proto) -> names the data cannot tell apart (_unseen)
    for key, graph, eager, names in sorted(plans, key=lambda x: "link_exp" not in x[3]):
        params, unseen[key] = _fit_path(params, key, graph or eager, names)
        # the sweep sets the link terms; the path's own, its default-channel runs
        if "link_exp" in names:
            own = {c: v for c, v in (graph or eager).items()
                   if (c.channels or params.channels) == params.channels}
            params, own_unseen = _fit_path(params, key, own or graph or eager,
                                           tuple(n for n in names if n not in LINK_NAMES))
            unseen[key] = tuple(n for n in unseen[key] if n in LINK_NAMES) + own_unseen
        if graph and eager:
            params, host_unseen = _fit_path(params, key, eager, ("host_us",))
            unseen[key] += host_unseen
    report = holdout_report(params, [p for p, k in zip(points, test) if k])
    params.meta = {"source": "fit", "holdout": holdout, "n_train": int(train.sum()),
                   "n_test": int(test.sum()), "holdout_errors": report,
                   "unseen": {"/".join(k): list(v) for k, v in sorted(unseen.items()) if v}}
    return params, report


def holdout_report(params: ModelParams, points: list[Point]) -> dict:
    """Errors of ``params`` on labelled ``points``, per group name."""
    errors: dict = {}
    for key, data in _groups(points).items():
        for cfg, (s, t) in data.items():
            pred = predict_layout(params, layout(key[1], key[2], s, cfg, params.channels))
            name = (f"{key[0]}/{key[1]}/{key[2]}/{cfg.ranks}r{cfg.nodes}n/{cfg.timing}"
                    + config_suffix(cfg))
            errors.setdefault(name, []).extend(abs_rel_errors(pred, t))
    return {name: summary(e) for name, e in sorted(errors.items())}
