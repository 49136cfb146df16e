"""Fit ``collsim.nccl.model`` parameters to measurements, with held-out error.

Points come from ``collsim.fit.points.load_points`` (runner JSON Lines, nccl-tests output; re-exported
here). Records whose algorithm or protocol is NCCL's own choice (null) are not fitted
(``compare`` still predicts them). Nodes > 1 fits the "net" link class.

Harness overhead (``harness_overheads``): the per-call time a harness adds beyond NCCL's kernel
time (``points.harness_key``) is not fitted with the sweeps but measured by an A/B pair on the
same machine: the median difference, over sizes up to 64 KiB, between the harness's time and the
runner's "bare" graph time (NCCL_GRAPH_MIXING_SUPPORT=0) for the same NCCL choice and size. So is
each clock's fixed cost per measurement (``start_costs``), from the same harness timed at two
call counts. Both are then fixed terms of the model (``ModelParams.harness_us``, ``start_us``)
while the paths are fitted.

Method: per (link class, algorithm, protocol), least squares on log(predicted / measured) over
the training points of every configuration sharing those parameters, by a bounded
Levenberg-Marquardt in log-parameter space (numpy only), from a few starting points.
Fitted: base_us, step_us, chan_GBps, fill, warp_us (``BOUNDS``; warp_us is told apart from step_us
by the sizes where NCCL runs fewer threads per channel); spill too when the path's training
points have NCCL's receive buffers both within and beyond L2 (sizes >= 4 MiB, where bandwidth
shows; else it stays 0: nothing could tell it apart from chan_GBps); warm only when some size
>= 2 MiB was measured both with the user buffer still in L2 and not (an A/B such as the runner
with and without --rotate; a sweep alone has it in L2 up to 16 MiB and not above, which the fit
would confuse with how bandwidth grows with size) and not for the "net" class (its bandwidth is
the network's), else it stays at its start value (1: no effect); and, for a path whose
training points ran at three or more channel counts (NCCL_MAX/MIN_NCHANNELS sweeps), the link
cap link_GBps and its sharpness link_exp, shared by the paths fitted after it (those paths
first); that path's own parameters are then re-fitted on its runs at the default channel count
only (a sweep is often another session, whose latency floor differs). hop_us stays at its prior (NCCL's
per-hop constant), since with a fixed rank count only base + hops x hop_us is observable. Then
host_us (eager launch interval) is fitted on the eager training points, the others fixed (with
eager points only, all five together).

Hold-out (``points.split``): "odd", "even", "timing", "run"; errors on the test points only.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fit.overheads import with_overheads
from collsim.fit.points import Point, split
from collsim.nccl.layout import Config, layout
from collsim.nccl.model import predict_layout
from collsim.nccl.params import ModelParams, default_params, with_path


BOUNDS = {"base_us": (1e-2, 5000.0), "step_us": (1e-3, 500.0), "chan_GBps": (1e-3, 500.0), "fill": (1e-3, 16.0),
          "host_us": (1e-2, 5000.0), "spill": (1e-3, 2.0), "warp_us": (1e-4, 5.0), "warm": (0.3, 3.0),
          "link_GBps": (1.0, 5000.0),
          "link_exp": (0.5, 16.0)}
LINK_NAMES = ("link_GBps", "link_exp")  # fitted values that are not per path
FITTED = ("base_us", "step_us", "chan_GBps", "fill", "warp_us")


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


def _lm(residual, u0, lo, hi, iters=80):
    """Bounded Levenberg-Marquardt: minimise |residual(u)|^2 over lo <= u <= hi."""
    u, lam = np.clip(u0, lo, hi), 1e-2
    r = residual(u)
    cost = r @ r
    for _ in range(iters):
        jac = np.empty((r.size, u.size))
        for j in range(u.size):
            du = np.zeros_like(u)
            du[j] = 1e-5 if u[j] + 1e-5 <= hi[j] else -1e-5
            jac[:, j] = (residual(u + du) - r) / du[j]
        g, h = jac.T @ r, jac.T @ jac
        improved = False
        while lam < 1e8:
            step = np.linalg.solve(h + lam * np.diag(np.diag(h) + 1e-12), -g)
            u_new = np.clip(u + step, lo, hi)
            r_new = residual(u_new)
            if r_new @ r_new < cost:
                improved = cost - r_new @ r_new > 1e-12 * cost
                u, r, cost, lam = u_new, r_new, r_new @ r_new, max(lam / 5, 1e-9)
                break
            lam *= 4
        if not improved:
            break
    return u, cost


def _with(params: ModelParams, key, values: dict) -> ModelParams:
    """params with ``values`` set: per-path names on path ``key``, LINK_NAMES on its link."""
    out = with_path(params, key, **{n: v for n, v in values.items() if n not in LINK_NAMES})
    if "link_GBps" in values:
        out.link_GBps = {**params.link_GBps, key[0]: values["link_GBps"]}
    if "link_exp" in values:
        out.link_exp = values["link_exp"]
    return out


def _fit_path(params: ModelParams, key, data: dict, names) -> ModelParams:
    """params with the best values of ``names`` for one (link, algo, proto), others fixed."""
    layouts = [(layout(key[1], key[2], s, cfg, params.channels), np.log(t)) for cfg, (s, t) in data.items()]
    lo, hi = (np.log([BOUNDS[n][i] for n in names]) for i in (0, 1))
    current = {**params.path(*key), "link_GBps": params.link_GBps[key[0]], "link_exp": params.link_exp or 2.0}

    def residual(u):
        trial = _with(params, key, dict(zip(names, np.exp(u))))
        return np.concatenate([np.log(predict_layout(trial, lay)) - lt for lay, lt in layouts])

    floor = min(np.exp(lt).min() for _, lt in layouts)
    link = {n: current[n] for n in LINK_NAMES}
    guesses = [current, {**link, "base_us": floor * 0.8, "step_us": 0.05, "chan_GBps": 20.0, "fill": 1.0, "spill": 0.1,
                "warp_us": 0.05, "warm": 0.9},
               {**link, "base_us": floor * 0.5, "step_us": 2.0, "chan_GBps": 5.0, "fill": 0.2, "spill": 0.3,
                "warp_us": 0.001, "warm": 1.1}]
    starts = [np.log([max(g.get(n, floor), BOUNDS[n][0]) for n in names]) for g in guesses]
    best = min((_lm(residual, u, lo, hi) for u in starts), key=lambda x: x[1])
    return _with(params, key, dict(zip(names, map(float, np.exp(best[0])))))


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
    model. ``overhead_points``: A/B measurements for ``harness_overheads`` (held fixed)."""
    train, test = split(points, holdout)
    params = start or default_params()
    if overhead_points:
        params = with_overheads(params, overhead_points)
    tr = [p for p, k in zip(points, train) if k]
    groups = _groups(tr)
    if not groups:
        raise CollsimError("no labelled (algorithm/protocol) training points to fit")
    params = replace(params, paths=dict(params.paths), link_GBps=dict(params.link_GBps), meta=dict(params.meta))
    plans = []
    for key, data in groups.items():
        graph = {c: v for c, v in data.items() if c.timing == "graph"}
        eager = {c: v for c, v in data.items() if c.timing == "eager"}
        names = _names(params, key, graph or eager) + (() if graph else ("host_us",))
        plans.append((key, graph, eager, names))
    for key, graph, eager, names in sorted(plans, key=lambda x: "link_exp" not in x[3]):
        params = _fit_path(params, key, graph or eager, names)
        if "link_exp" in names:  # the sweep sets the link terms; the path's own, its default-channel runs
            own = {c: v for c, v in (graph or eager).items() if (c.channels or params.channels) == params.channels}
            params = _fit_path(params, key, own or graph or eager, tuple(n for n in names if n not in LINK_NAMES))
        if graph and eager:
            params = _fit_path(params, key, eager, ("host_us",))
    report = holdout_report(params, [p for p, k in zip(points, test) if k])
    params.meta = {"source": "fit", "holdout": holdout, "n_train": int(train.sum()),
                   "n_test": int(test.sum()), "holdout_errors": report}
    return params, report


def holdout_report(params: ModelParams, points: list[Point]) -> dict:
    """Errors of ``params`` on labelled ``points``, per group name."""
    errors: dict = {}
    for key, data in _groups(points).items():
        for cfg, (s, t) in data.items():
            pred = predict_layout(params, layout(key[1], key[2], s, cfg, params.channels))
            name = f"{key[0]}/{key[1]}/{key[2]}/{cfg.ranks}r{cfg.nodes}n/{cfg.timing}" + config_suffix(cfg)
            errors.setdefault(name, []).extend(abs_rel_errors(pred, t))
    return {name: summary(e) for name, e in sorted(errors.items())}
