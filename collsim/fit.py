"""Fit ``collsim.nccl_model`` parameters to measurements, with held-out error.

Inputs: runner JSON Lines (``collsim.measurements.load``) or nccl-tests output
(``collsim.nccl_tests.import_nccl_tests``, labelled ``ALGO/PROTO``). Records whose algorithm or
protocol is NCCL's own choice (null) are not fitted (``compare`` still predicts them).

A record's configuration (``nccl_model.Config``) comes from the record and its file's meta:
``ranks`` (or meta ``world_size``), meta ``nodes``, NCCL_BUFFSIZE and NCCL_MIN/MAX_NCHANNELS from
meta ``env``, ``timing``; the intra-node link class is "pci" when NCCL_P2P_DISABLE=1 (traffic
through host memory) else "nvlink". Nodes > 1 fits the "net" link class.

Method: per (link class, algorithm, protocol), least squares on log(predicted / measured) over
the training points of every configuration sharing those parameters, by a bounded
Levenberg-Marquardt in log-parameter space (numpy only), from a few starting points.
Fitted: base_us, step_us, chan_GBps, fill (``BOUNDS``); hop_us stays at its prior (NCCL's
per-hop constant), since with a fixed rank count only base + hops x hop_us is observable. Then
host_us (eager launch interval) is fitted on the eager training points, the others fixed (with
eager points only, all five together).

Hold-out (``split``): "odd" fits even powers of two and tests odd ones (by round(log2 size)),
"even" the reverse, "timing" fits eager timing and tests graph timing, "run" fits the first
file and tests the others. Errors are reported on the test points only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from collsim.errors import CollsimError
from collsim.nccl_model import (ALGOS, LINK_CLASSES, PARAM_NAMES, Config, ModelParams, canonical_pair,
                                default_params, layout, predict_layout)
from collsim.nccl_tuning import PROTOS

BOUNDS = {"base_us": (1e-2, 5000.0), "step_us": (1e-3, 500.0), "chan_GBps": (1e-3, 500.0), "fill": (1e-3, 16.0),
          "host_us": (1e-2, 5000.0)}
FITTED = ("base_us", "step_us", "chan_GBps", "fill")
SPLITS = ("odd", "even", "timing", "run")
FORMAT = "collsim.nccl_model.params"


@dataclass
class Point:
    """One measured AllReduce: size (bytes), time_us, algo/proto (None: NCCL's choice),
    its Config, the index of the file it came from, and the file's meta."""
    size: int
    time_us: float
    algo: str | None
    proto: str | None
    config: Config
    run: int
    meta: dict


def _config(rec: dict, meta: dict) -> Config:
    env = meta.get("env") or {}
    ranks = rec.get("ranks") or meta.get("world_size")
    if not ranks:
        raise CollsimError("a record has no rank count (record 'ranks' or meta 'world_size')")
    try:
        buff = int(env["NCCL_BUFFSIZE"]) if env.get("NCCL_BUFFSIZE") else None
        chans = [int(env[k]) for k in ("NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS") if env.get(k)]
    except ValueError:
        raise CollsimError("NCCL_BUFFSIZE / NCCL_*_NCHANNELS in the meta env must be integers") from None
    return Config(int(ranks), int(meta.get("nodes") or 1),
                  "pci" if str(env.get("NCCL_P2P_DISABLE", "0")) == "1" else "nvlink",
                  buff, chans[0] if chans else None, rec.get("timing") or meta.get("timing") or "graph")


def label_from_name(path) -> str:
    """nccl-tests log label from its file name: ``graph_Ring_LL.log`` -> "Ring/LL",
    ``eager_default.log`` -> "default"."""
    from pathlib import Path
    tokens = Path(path).stem.split("_")
    if tokens[-1].lower() == "default":
        return "default"
    try:
        return "/".join(canonical_pair(*tokens[-2:]))
    except (CollsimError, TypeError):
        raise CollsimError(f"{path}: cannot tell algorithm/protocol from the name; pass --label ALGO/PROTO") from None


def load_points(paths, label: str | None = None, inplace: bool = True) -> list[Point]:
    """Points from measurement files (``.jsonl``: runner records; other files: nccl-tests
    output, labelled ``label`` such as "Ring/LL", else from the file name). Keeps in-place
    records (what torch's all_reduce does) or, with ``inplace=False``, out-of-place ones;
    records that do not say are kept either way."""
    from collsim.measurements import load
    from collsim.nccl_tests import import_nccl_tests
    points = []
    for run, path in enumerate(paths):
        jsonl = str(path).endswith(".jsonl")
        m = load(path) if jsonl else import_nccl_tests(path, label=label or label_from_name(path))
        for rec in m.records:
            if rec.get("time_us") is None or not rec["time_us"] > 0 or rec["size"] < 1:
                continue
            if rec.get("inplace") is not None and bool(rec["inplace"]) != inplace:
                continue
            algo, proto = rec.get("algo"), rec.get("proto")
            if algo and proto:
                algo, proto = canonical_pair(algo, proto)
            points.append(Point(rec["size"], float(rec["time_us"]), algo or None, proto or None,
                                _config(rec, m.meta), run, m.meta))
    if not points:
        raise CollsimError("no usable measurement records in " + ", ".join(map(str, paths)))
    return points


def split(points: list[Point], mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Boolean (train, test) masks over ``points``; disjoint by construction."""
    if mode not in SPLITS:
        raise CollsimError(f"unknown hold-out {mode!r}; expected one of {', '.join(SPLITS)}")
    if mode in ("odd", "even"):
        even = np.array([round(np.log2(p.size)) % 2 == 0 for p in points])
        train = even if mode == "odd" else ~even
    elif mode == "timing":
        train = np.array([p.config.timing == "eager" for p in points])
        if not train.any() or train.all():
            raise CollsimError("hold-out 'timing' needs both eager and graph measurements")
    else:
        train = np.array([p.run == 0 for p in points])
        if train.all():
            raise CollsimError("hold-out 'run' needs at least two measurement files")
    return train, ~train


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


def _fit_path(params: ModelParams, key, data: dict, names) -> dict:
    """Best values of ``names`` for one (link, algo, proto), the other parameters fixed."""
    layouts = [(layout(key[1], key[2], s, cfg, params.channels), np.log(t)) for cfg, (s, t) in data.items()]
    lo, hi = (np.log([BOUNDS[n][i] for n in names]) for i in (0, 1))
    base = params.path(*key)

    def residual(u):
        trial = ModelParams({**params.paths, key: {**base, **dict(zip(names, np.exp(u)))}}, params.link_GBps,
                            params.channels)
        return np.concatenate([np.log(predict_layout(trial, lay)) - lt for lay, lt in layouts])

    floor = min(np.exp(lt).min() for _, lt in layouts)
    guesses = [{n: base[n] for n in names}, {"base_us": floor * 0.8, "step_us": 0.05, "chan_GBps": 20.0, "fill": 1.0},
               {"base_us": floor * 0.5, "step_us": 2.0, "chan_GBps": 5.0, "fill": 0.2}]
    starts = [np.log([max(g.get(n, floor), 1e-3) for n in names]) for g in guesses]
    best = min((_lm(residual, u, lo, hi) for u in starts), key=lambda x: x[1])
    return dict(zip(names, map(float, np.exp(best[0]))))


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


def fit(points: list[Point], holdout: str = "odd", start: ModelParams | None = None) -> tuple[ModelParams, dict]:
    """Fit on the training points of ``holdout``; return (params, report). The report holds,
    per "link/algo/proto/ranks/nodes/timing" group, held-out errors of the fitted model."""
    train, test = split(points, holdout)
    params = start or default_params()
    tr = [p for p, k in zip(points, train) if k]
    groups = _groups(tr)
    if not groups:
        raise CollsimError("no labelled (algorithm/protocol) training points to fit")
    paths = dict(params.paths)
    for key, data in groups.items():
        graph = {c: v for c, v in data.items() if c.timing == "graph"}
        eager = {c: v for c, v in data.items() if c.timing == "eager"}
        names = FITTED if graph else FITTED + ("host_us",)
        paths[key] = {**params.path(*key), **_fit_path(params, key, graph or eager, names)}
        if graph and eager:
            trial = ModelParams(paths, params.link_GBps, params.channels)
            paths[key].update(_fit_path(trial, key, eager, ("host_us",)))
    params = ModelParams(paths, dict(params.link_GBps), params.channels, dict(params.meta))
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
            name = f"{key[0]}/{key[1]}/{key[2]}/{cfg.ranks}r{cfg.nodes}n/{cfg.timing}"
            if cfg.buffsize or cfg.channels:
                name += f"/buff{cfg.buffsize or 'default'}/ch{cfg.channels or 'default'}"
            errors.setdefault(name, []).extend(abs_rel_errors(pred, t))
    return {name: summary(e) for name, e in sorted(errors.items())}


def params_to_dict(params: ModelParams) -> dict:
    return {"format": FORMAT, "version": 1,
            "units": "us for *_us, GB/s (1e9 B/s) for *_GBps, fill in slice times per pipeline depth level",
            "channels": params.channels, "link_GBps": params.link_GBps,
            "paths": [{"link": k[0], "algo": k[1], "proto": k[2], **v} for k, v in sorted(params.paths.items())],
            "meta": params.meta}


def save_params(params: ModelParams, path) -> None:
    """Write the parameters as JSON (format ``collsim.nccl_model.params`` version 1)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(params_to_dict(params), f, indent=1)
        f.write("\n")


def params_from_dict(d: dict, where: str = "parameters") -> ModelParams:
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise CollsimError(f"{where}: not a collsim parameters file (format must be {FORMAT!r})")
    try:
        links = {str(k): float(v) for k, v in d["link_GBps"].items()}
        paths = {}
        for e in d["paths"]:
            key = (e["link"], *canonical_pair(e["algo"], e["proto"]))
            if key[0] not in LINK_CLASSES:
                raise CollsimError(f"{where}: unknown link class {key[0]!r}")
            paths[key] = {n: float(e[n]) for n in PARAM_NAMES}
        params = ModelParams(paths, links, int(d["channels"]), d.get("meta") or {})
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise CollsimError(f"{where}: malformed parameters ({type(e).__name__}: {e})") from None
    bad = [f"{k}.{n}" for k, v in paths.items() for n, x in v.items() if not np.isfinite(x) or x < 0]
    if bad or any(v <= 0 for v in links.values()) or params.channels < 1:
        raise CollsimError(f"{where}: negative or non-finite values ({', '.join(bad[:3]) or 'link_GBps/channels'})")
    missing = [f"{lk}/{a}/{p}" for lk in LINK_CLASSES for a in ALGOS for p in PROTOS if (lk, a, p) not in paths]
    if missing or set(links) != set(LINK_CLASSES):
        raise CollsimError(f"{where}: missing entries ({', '.join(missing[:3]) or 'link_GBps'})")
    return params


def load_params(path) -> ModelParams:
    """Read a parameters file written by ``save_params``; bad files raise a one-line CollsimError."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except json.JSONDecodeError as e:
        raise CollsimError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    return params_from_dict(d, str(path))
