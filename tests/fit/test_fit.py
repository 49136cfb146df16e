"""Fitting recovers known parameters; bounds hold; hold-out never leaks; params files."""
import json
import os

import numpy as np
import pytest

from collsim.errors import CollsimError
from collsim.fit import BOUNDS, FITTED, fit
from collsim.fit.overheads import harness_overheads, start_costs, with_overheads
from collsim.fit.points import Point, load_points, split
from collsim.fitted.layout import Config
from collsim.fitted.model import predict
from collsim.fitted.params import default_params, load_params, save_params, with_path

SIZES = 2 ** np.arange(3, 33)
TRUE = {("nvlink", "Ring", "Simple"): dict(base_us=12.0, step_us=1.5, chan_GBps=14.8, fill=1.5, host_us=40.0),
        ("nvlink", "Tree", "LL"): dict(base_us=9.0, step_us=0.3, chan_GBps=6.0, fill=0.5, host_us=25.0)}


def truth():
    p = default_params()
    for key, vals in TRUE.items():
        p = with_path(p, key, **vals)
    return p


def synthetic(noise=0.02, seed=1, timings=("graph", "eager")):
    rng, p, pts = np.random.default_rng(seed), truth(), []
    for _, algo, proto in TRUE:
        for timing in timings:
            cfg = Config(2, timing=timing)
            t = predict(p, algo, proto, SIZES, cfg) * np.exp(rng.normal(0, noise, SIZES.size))
            pts += [Point(int(s), float(x), algo, proto, cfg, 0, {}) for s, x in zip(SIZES, t)]
    return pts


def test_recovers_parameters_and_host():
    params, report = fit(synthetic(), "odd")
    for key, vals in TRUE.items():
        got = params.path(*key)
        assert got["base_us"] == pytest.approx(vals["base_us"], rel=0.1)
        assert got["chan_GBps"] == pytest.approx(vals["chan_GBps"], rel=0.05)
        assert got["host_us"] == pytest.approx(vals["host_us"], rel=0.05)
    assert all(r["median_abs_rel_error"] < 0.03 for r in report.values())
    assert params.meta["n_test"] == sum(r["n"] for r in report.values())


def test_bounds_respected():
    # Times no model point can reach inside the bounds: parameters end on the bounds, not beyond.
    pts = [Point(int(s), 1e7, "Ring", "LL", Config(2), 0, {}) for s in SIZES]
    params, _ = fit(pts, "odd")
    got = params.path("nvlink", "Ring", "LL")
    for name in FITTED:
        lo, hi = BOUNDS[name]
        assert lo * (1 - 1e-9) <= got[name] <= hi * (1 + 1e-9)  # slack: exp(log(bound)) rounds
    assert got["base_us"] == pytest.approx(BOUNDS["base_us"][1], rel=1e-3)


def test_holdout_never_leaks():
    pts = synthetic(noise=0.0, timings=("graph",))
    train, test = split(pts, "odd")
    assert not (train & test).any() and (train | test).all()
    assert all(round(np.log2(p.size)) % 2 == 0 for p, k in zip(pts, train) if k)
    # Corrupting every test point's time must not change the fitted parameters.
    corrupted = [Point(p.size, p.time_us * (100.0 if k else 1.0), p.algo, p.proto, p.config, p.run, {})
                 for p, k in zip(pts, test)]
    a, rep_a = fit(pts, "odd")
    b, rep_b = fit(corrupted, "odd")
    assert a.paths == b.paths
    assert all(r["median_abs_rel_error"] > 0.9 for r in rep_b.values())  # predicts 1/100 of them
    even, odd = split(pts, "even")
    assert (even == test).all()


def test_timing_and_run_splits():
    pts = synthetic(noise=0.01)
    train, test = split(pts, "timing")
    assert all(p.config.timing == "eager" for p, k in zip(pts, train) if k)
    params, report = fit(pts, "timing")
    assert set(k.rsplit("/", 1)[1] for k in report) == {"graph"}
    with pytest.raises(CollsimError, match="two measurement files"):
        split(pts, "run")
    with pytest.raises(CollsimError, match="unknown hold-out"):
        split(pts, "random")


def test_params_roundtrip_and_errors(tmp_path):
    params, _ = fit(synthetic(timings=("graph",)), "odd")
    params.start_us = {"runner-barrier": 14.0}
    path = tmp_path / "p.json"
    save_params(params, path)
    back = load_params(path)
    assert back.paths == params.paths and back.channels == params.channels and back.start_us == {"runner-barrier": 14.0}
    d = json.loads(path.read_text())
    assert d["format"] == "collsim.nccl_model.params" and d["meta"]["holdout"] == "odd"
    for mutate, msg in [(lambda d: d.update(format="x"), "not a collsim parameters"),
                        (lambda d: d["paths"].pop(), "missing entries"),
                        (lambda d: d["paths"][0].update(chan_GBps=-1), r"paths\[0\]: chan_GBps must be >= 0.001"),
                        (lambda d: d["paths"][0].update(chan_GBps=0), r"chan_GBps must be >= 0.001, got 0"),
                        (lambda d: d.update(channels=10**9), "'channels' must be <= 64"),
                        (lambda d: d.update(channels=0), "'channels' must be >= 1"),
                        (lambda d: d.update(channels="24"), "'channels' must be an integer"),
                        (lambda d: d["link_GBps"].update(nvlink=float("inf")), "link_GBps.nvlink must be a finite"),
                        (lambda d: d["start_us"].update({"runner-barrier": -1}), "start_us.runner-barrier"),
                        (lambda d: d["paths"][0].pop("fill"), r"paths\[0\]: missing fill"),
                        (lambda d: d["paths"].append(7), r"paths\[\d+\] must be an object")]:
        bad = json.loads(path.read_text())
        mutate(bad)
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(CollsimError, match=msg):
            load_params(tmp_path / "bad.json")
    (tmp_path / "junk.json").write_text("{")
    with pytest.raises(CollsimError, match="not valid JSON"):
        load_params(tmp_path / "junk.json")


def test_load_points_from_runner_jsonl(tmp_path):
    meta = {"type": "meta", "world_size": 2, "nodes": 1, "timing": "graph",
            "env": {"NCCL_BUFFSIZE": "1048576", "NCCL_MAX_NCHANNELS": "8"}}
    recs = [{"type": "result", "size": 1024, "count": 256, "dtype": "float32", "time_us": 10.0,
             "algbw_GBps": 0.1, "busbw_GBps": 0.1, "wrong": 0, "algo": "ring", "proto": "ll",
             "timing": "graph", "ranks": 2},
            {"type": "result", "size": 2048, "count": 512, "dtype": "float32", "time_us": 11.0,
             "algbw_GBps": 0.1, "busbw_GBps": 0.1, "wrong": 0, "algo": None, "proto": None,
             "timing": "graph", "ranks": 2}]
    f = tmp_path / "m.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in [meta] + recs) + "\n")
    pts = load_points([f])
    assert [(p.algo, p.proto) for p in pts] == [("Ring", "LL"), (None, None)]
    assert pts[0].config == Config(2, nodes=1, intra="nvlink", buffsize=1048576, channels=8, timing="graph",
                                   harness="torch-graph-mixing", slices=1, buffer_bytes=2048,
                                   clock="runner-barrier")
    with pytest.raises(CollsimError, match="no labelled"):
        fit(pts[1:] * 4, "odd")


def test_harness_overheads_median_over_bare_repeats_and_with_overheads():
    bare, mixed = Config(2, timing="graph"), Config(2, timing="graph", harness="nccl-tests-graph-mix0-mpi")
    pts = [Point(s, t, None, None, bare, r, {}) for r, ts in enumerate(([5.0, 5.2], [5.4, 5.6], [9.0, 5.3]))
           for s, t in zip((8, 16), ts)]
    pts += [Point(8, 5.4, None, None, mixed, 3, {}), Point(16, 5.8, None, None, mixed, 3, {}),
            Point(1 << 20, 99.0, None, None, mixed, 3, {})]  # above 64 KiB: not an A/B size
    # bare medians 5.4 (8 B: 5.0, 5.4, 9.0) and 5.3 (16 B); differences 0.0 and 0.5 -> median 0.25
    assert harness_overheads(pts) == pytest.approx({"nccl-tests-graph-mix0-mpi": 0.25})
    assert with_overheads(default_params(), pts).harness_us["nccl-tests-graph-mix0-mpi"] == pytest.approx(0.25)
    with pytest.raises(CollsimError, match="need graph points of a harness and of the bare runner"):
        harness_overheads([p for p in pts if p.config.harness == "bare"])


def test_start_costs_from_two_call_counts_and_overheads_net_of_them():
    """t = NCCL's time + harness per call + F / calls: start_costs recovers each clock's F from
    two call counts, and harness_overheads compares the harnesses net of those shares."""
    nccl = {8: 5.0, 16: 5.1, 1024: 5.5}
    runner = {n: Config(2, clock="runner-barrier", calls=n) for n in (100, 400)}
    tests = {n: Config(2, harness="nccl-tests-graph-mix0-mpi", clock="nccl-tests-mpi", calls=n) for n in (400, 2000)}
    pts = [Point(s, t + 20.0 / n, None, None, c, 0, {}) for n, c in runner.items() for s, t in nccl.items()]
    pts += [Point(s, t + 0.05 + 75.0 / n, None, None, c, 1, {}) for n, c in tests.items() for s, t in nccl.items()]
    assert start_costs(pts) == pytest.approx({"nccl-tests-mpi": 75.0, "runner-barrier": 20.0})
    p = with_overheads(default_params(), pts)
    assert p.start_us == pytest.approx({"nccl-tests-mpi": 75.0, "runner-barrier": 20.0})
    assert p.harness_us["nccl-tests-graph-mix0-mpi"] == pytest.approx(0.05)
    assert p.harness_time(tests[400]) == pytest.approx(0.05 + 75.0 / 400)
    assert p.harness_time(Config(2, clock="runner-gated", calls=100)) == 0.0  # a clock not measured
    # one call count per clock: nothing to tell F from; the overhead then holds the clock's share
    one = [q for q in pts if q.config in (runner[100], tests[400])]
    assert start_costs(one) == {}
    assert harness_overheads(one) == pytest.approx({"nccl-tests-graph-mix0-mpi": 0.05 + 75.0 / 400 - 20.0 / 100})


def test_warm_is_fitted_only_from_an_ab_of_the_same_sizes():
    """warm (L2 reuse of the user buffer) needs sizes >= 2 MiB measured both in L2 and not (the
    runner with and without --rotate); a one-slice sweep alone leaves it at 1."""
    p = with_path(truth(), ("nvlink", "Ring", "LL"), warm=0.75)
    one_slice = Config(2, slices=1, buffer_bytes=1 << 26)
    rotated = Config(2, slices=20, buffer_bytes=1 << 26)
    rng, pts = np.random.default_rng(3), []
    for cfg in (one_slice, rotated):
        t = predict(p, "Ring", "LL", SIZES[SIZES <= 1 << 26], cfg) * np.exp(rng.normal(0, 0.005, 24))
        pts += [Point(int(s), float(x), "Ring", "LL", cfg, 0, {}) for s, x in zip(SIZES, t)]
    fitted, _ = fit(pts, "odd")
    assert fitted.path("nvlink", "Ring", "LL")["warm"] == pytest.approx(0.75, abs=0.03)
    alone, _ = fit([q for q in pts if q.config == one_slice], "odd")
    assert alone.path("nvlink", "Ring", "LL")["warm"] == 1.0


@pytest.mark.skipif(not os.environ.get("OPENBLAS_CORETYPE"),
                    reason="OPENBLAS_CORETYPE not set (scripts/test.sh sets it)")
def test_blas_kernel_is_the_one_asked_for():
    """scripts/test.sh re-runs the fit tests with OPENBLAS_CORETYPE set: numpy's and scipy's
    OpenBLAS must then run that kernel, not the CPU's own, or the second run proves nothing."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [i for i in threadpoolctl.threadpool_info() if i["internal_api"] == "openblas"]
    assert blas and all(i["architecture"].lower() == os.environ["OPENBLAS_CORETYPE"].lower() for i in blas), blas


def test_parameters_the_data_cannot_see_stay_at_their_priors_and_are_listed():
    """Eager calls all at the host's launch floor show host_us only: the GPU terms of the path
    stay at their priors (not wherever a start point left them) and params.meta["unseen"] says
    so; a path whose data shows every term lists none."""
    prior = default_params().path("nvlink", "Ring", "LL")
    floor = [Point(int(s), 50.0, "Ring", "LL", Config(2, timing="eager"), 0, {}) for s in SIZES[SIZES <= 1 << 16]]
    params, _ = fit(floor + [p for p in synthetic(timings=("graph",)) if p.algo == "Tree"], "odd")
    got = params.path("nvlink", "Ring", "LL")
    assert got["host_us"] == pytest.approx(50.0, rel=0.01)
    for name in ("base_us", "step_us", "chan_GBps", "fill"):
        assert got[name] == pytest.approx(prior[name], rel=1e-3), name
    assert set(params.meta["unseen"]["nvlink/Ring/LL"]) >= {"base_us", "step_us", "chan_GBps", "fill"}
    assert "nvlink/Tree/LL" not in params.meta["unseen"]
