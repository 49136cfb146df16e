"""Regression tests on the committed 2 x H200 data (data/h200x2, ACCURACY.md): re-fit the model
exactly as the documented commands do and assert the held-out targets (median |err| <= 3%, p90
<= 10%) at the level reached today plus a little (so a worse model fails). Also: the committed
params.json files predict what the documented fit produces."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from collsim.fit import fit, holdout_report
from collsim.fit.compare import compare
from collsim.fit.overheads import start_costs, with_overheads
from collsim.fit.points import load_points, split
from collsim.fitted.model import predict
from collsim.fitted.params import load_params
from collsim.measure import load

D = Path(__file__).resolve().parents[1] / "data" / "h200x2"
AB = [D / "fidelity" / f for f in ("fid_graph.jsonl", "fid_graph_mix0_small.jsonl", "nt_graph.txt")]
PAIRS = [(a, p) for a in ("Ring", "Tree") for p in ("LL", "LL128", "Simple")]
# (median, p90) bounds on held-out (odd powers of two) |error|: the level reached (ACCURACY.md,
# all within the 3% / 10%) plus a little.
RUNNER = {("Ring", "LL"): (0.03, 0.06), ("Ring", "LL128"): (0.02, 0.065), ("Ring", "Simple"): (0.024, 0.05),
          ("Tree", "LL"): (0.021, 0.042), ("Tree", "LL128"): (0.013, 0.04), ("Tree", "Simple"): (0.013, 0.035)}
NCCL_TESTS = {("Ring", "LL"): (0.014, 0.042), ("Ring", "LL128"): (0.029, 0.07), ("Ring", "Simple"): (0.027, 0.047),
              ("Tree", "LL"): (0.012, 0.036), ("Tree", "LL128"): (0.018, 0.036), ("Tree", "Simple"): (0.024, 0.04)}
SWEEP = [D / "vars" / f"vars_maxch_{c}.jsonl" for c in (2, 8)]  # NCCL_MAX_NCHANNELS runs in params.json


@pytest.fixture(scope="module")
def overhead():
    return load_points(AB, "default")


def runner_files():
    return [D / "runner" / f"nvlink_{a}_{p}_{t}.jsonl" for t in ("graph", "eager") for a, p in PAIRS] + \
        [D / "runner" / f"emu2_{a}.jsonl" for a in ("Ring", "Tree")]


def _assert_same_model(committed, refitted, points, holdout="odd"):
    """What matters of a committed fit: at every measured size and configuration of ``points`` it
    predicts the time a refit predicts within 0.5%, and its held-out errors per configuration are
    the refit's within 0.2 points. (Rounding moves a well-conditioned fit's parameters by ~1e-6
    relative, its predictions by far less; a refit that changes the model moves them by more.)"""
    labelled = [p for p in points if p.algo and p.proto]
    ours, theirs = ([predict(q, p.algo, p.proto, [p.size], p.config)[0] for p in labelled]
                    for q in (committed, refitted))
    assert np.max(np.abs(np.divide(ours, theirs) - 1)) <= 0.005
    test = [p for p, k in zip(points, split(points, holdout)[1]) if k]
    mine, refit = holdout_report(committed, test), holdout_report(refitted, test)
    assert mine.keys() == refit.keys()
    for name, r in refit.items():
        for figure in ("median_abs_rel_error", "p90_abs_rel_error"):
            assert abs(mine[name][figure] - r[figure]) <= 0.002, (name, figure)


def _check(report, bounds, suffix):
    for (a, p), (med, p90) in bounds.items():
        r = report[f"nvlink/{a}/{p}/2r1n/graph/{suffix}"]
        assert r["n"] == 15
        assert r["median_abs_rel_error"] <= med and r["p90_abs_rel_error"] <= p90, (a, p, r)


@pytest.fixture(scope="module")
def runner_fit(overhead):
    """(points, params, report) of the params.json fit (ACCURACY.md "Commands")."""
    points = load_points(runner_files() + SWEEP)
    return (points, *fit(points, "odd", overhead_points=overhead))


def test_runner_graph_targets_and_committed_params(runner_fit):
    points, params, report = runner_fit
    _check(report, RUNNER, "torch-graph-mixing")
    assert params.path("nvlink", "Ring", "Simple")["warp_us"] > 0.01  # per-step barriers (nccl_model)
    # the emulated 2-node socket path: <= 10% median held out
    for name in ("net/Ring/LL", "net/Ring/Simple", "net/Tree/LL", "net/Tree/Simple"):
        r = report[f"{name}/2r2n/eager/buffdefault/ch2"]
        assert r["median_abs_rel_error"] <= 0.10, (name, r)
    committed = load_params(D / "params.json")
    assert committed.harness_us == pytest.approx(params.harness_us)  # measured, not fitted
    _assert_same_model(committed, params, points)


def test_fit_is_well_conditioned(runner_fit, overhead):
    """Measured times 1e-9 relative apart (far below any measurement's noise, like rounding in
    another BLAS) give parameters within 2e-5 relative: every direction of the parameters either
    shows in the data or is held by the fit's weak prior. The hand-written Levenberg-Marquardt
    the fit replaced moved a socket-path parameter by 148% and run 2's Ring LL base_us by 1e-5."""
    points, params, _ = runner_fit
    rng = np.random.default_rng(0)
    nudged = [replace(p, time_us=p.time_us * (1 + 1e-9 * rng.standard_normal())) for p in points]
    again, _ = fit(nudged, "odd", overhead_points=overhead)
    assert again.meta["unseen"] == params.meta["unseen"]
    for key, values in params.paths.items():
        for name, value in values.items():
            assert abs(again.path(*key)[name] - value) <= 2e-5 * value, (key, name)
    assert abs(again.link_exp / params.link_exp - 1) <= 2e-5
    assert abs(again.link_GBps["nvlink"] / params.link_GBps["nvlink"] - 1) <= 2e-5


def test_nccl_tests_graph_targets(overhead):
    files = [D / "nccl-tests" / f"graph_{a}_{p}.log" for a, p in PAIRS]
    _, report = fit(load_points(files), "odd", overhead_points=overhead)
    _check(report, NCCL_TESTS, "nccl-tests-graph")


def test_cross_harness_and_nccl_model():
    """Runner-fitted params predict nccl-tests (all points, none fitted): the bandwidth-bound
    pairs within 7% median, Tree LL 7.5%, Ring LL 11%; NCCL's own model (the probe's printed
    table) is worse overall."""
    params = load_params(D / "params.json")
    points = load_points([D / "nccl-tests" / f"graph_{a}_{p}.log" for a, p in PAIRS])
    probe = load_points([D / "runner" / "nvlink_default_eager.jsonl"])[0].meta["nccl_probe"]
    for p in points:
        p.meta = {**p.meta, "nccl_probe": probe}
    res = compare(params, points, "all")
    by = {c["config"].split("/2r1n")[0]: c for c in res["configs"]}
    assert all(c["nccl_table"] == "printed" for c in res["configs"])
    for pair in ("Ring/LL128", "Ring/Simple", "Tree/LL128", "Tree/Simple"):
        assert by[pair]["model"]["median_abs_rel_error"] <= 0.07, pair
    # 7.4% since the fit finds the lower-cost Tree LL solution (ACCURACY.md "Fit method"); 6.4% before
    assert by["Tree/LL"]["model"]["median_abs_rel_error"] <= 0.075
    assert by["Ring/LL"]["model"]["median_abs_rel_error"] <= 0.11
    assert res["model"]["median_abs_rel_error"] <= 0.042
    assert res["nccl"]["median_abs_rel_error"] > 3 * res["model"]["median_abs_rel_error"]


def test_channel_sweep_fit_predicts_held_out_channel_counts():
    """params.json is fitted with the NCCL_MAX_NCHANNELS=2 and 8 sweeps, which set the shared link
    cap and its sharpness (ACCURACY.md); the 16- and 32-channel runs, not fitted, come out within 5%
    of the measured slowdown/gain at 1 GiB (the hard min of 24 x chan_GBps and 478.8 GB/s gave 1.49
    and 0.76)."""
    params = load_params(D / "params.json")
    assert 0.5 < params.link_exp < 16 and params.link_GBps["nvlink"] < 478.8
    from collsim.fitted.model import predict
    ref = load_points([D / "vars" / "vars_buffsize_4M.jsonl"])
    for stem in ("vars_maxch_16", "vars_minch_32"):
        pts = load_points([D / "vars" / f"{stem}.jsonl"])
        big = [p for p in pts if p.size == 2 ** 30][0]
        base = [p for p in ref if p.size == 2 ** 30][0]
        measured = big.time_us / base.time_us
        predicted = predict(params, "Ring", "Simple", [2 ** 30], big.config)[0] / \
            predict(params, "Ring", "Simple", [2 ** 30], base.config)[0]
        assert abs(predicted / measured - 1) <= 0.05, (stem, measured, predicted)


def _run_files(run, kind):
    pattern = {"runner": "runner/nvlink_*_graph.jsonl", "nccl-tests": "nccl-tests/graph_*.jsonl"}[kind]
    return sorted((D / run).glob(pattern))


ROTATE_AB = sorted((D / "run5" / "rotate").glob("rot_*.jsonl"))  # runner one slice vs --rotate


def _ab(run, *more):
    """The harness A/B: NCCL's default choice, runner sweep (100 calls) vs nccl-tests sweep (400
    calls), same run (ACCURACY.md "Runs 2-6"), and ``more`` files of that run (other call counts)."""
    return load_points([D / run / "runner" / "nvlink_default_graph.jsonl",
                        D / run / "nccl-tests" / "graph_default.jsonl",
                        *(D / run / f for f in more)])


def _by_pair(res):
    return {c["config"].split("/2r1n")[0]: c["model"] for c in res["configs"]}


def test_fixed_runner_run2_fit_and_committed_params():
    """Runs 2-6 (ACCURACY.md): the fixed runner's graph sweeps of run 2 and the L2-reuse A/B of
    run5/rotate, fitted on even sizes, meet the targets held out on run 2 (another machine than
    run 1); the A/B gives each path's warm factor as measured there (Ring LL and Tree LL128
    faster with the buffer in L2, Tree LL slower, Simple within 10%); run2/params.json predicts
    what that fit predicts."""
    runner = [f for f in _run_files("run2", "runner") if "default" not in f.name]
    n400 = [f"fidelity/runner_n400_r{i}.jsonl" for i in (1, 2, 3)]
    points = load_points(runner + ROTATE_AB)
    params, _ = fit(points, "odd", overhead_points=_ab("run2", *n400))
    report = compare(params, load_points(runner), "odd")
    for c in report["configs"]:
        r = c["model"]
        assert r["n"] == 15 and r["median_abs_rel_error"] <= 0.03 and r["p90_abs_rel_error"] <= 0.06, c
    warm = {(a, p): params.path("nvlink", a, p)["warm"] for a, p in PAIRS}
    assert warm["Ring", "LL"] < 0.85 and warm["Tree", "LL128"] < 0.95 and warm["Tree", "LL"] > 1.05
    assert abs(warm["Ring", "Simple"] - 1) < 0.1 and abs(warm["Tree", "Simple"] - 1) < 0.1
    # the runner's clock before run 6 (-n 100 vs 400): 10-30 us per measurement; nccl-tests'
    # per-call overhead then holds its own clock's share at 400 calls (~75 us / 400, run6/start)
    assert 10 <= params.start_us["runner-barrier"] <= 30
    assert 0.1 <= params.harness_us["nccl-tests-graph-mix0-mpi"] <= 0.3
    committed = load_params(D / "run2" / "params.json")
    assert committed.harness_us == pytest.approx(params.harness_us)  # measured, not fitted
    assert committed.start_us == pytest.approx(params.start_us)
    _assert_same_model(committed, params, points)


@pytest.mark.parametrize("other", ["run4", "run5", "run6"])
def test_other_harness_other_machine_as_good_as_own_sweeps(other):
    """run2/params.json predicts run 2's nccl-tests and another lease's runner and nccl-tests
    (run 4; run 5, a later session; run 6, a later session again with the runner's gated clocks,
    whose fixed cost per measurement the params' runner-barrier clock does not carry; none
    fitted): within 2.5% median overall (p90 6.5%), and
    the other harness there as well as the runner there overall, within 0.9 points per pair;
    NCCL's own model is at least 10x worse."""
    params = load_params(D / "run2" / "params.json")
    same_run = compare(params, load_points(_run_files("run2", "nccl-tests")), "all")
    runner = compare(params, load_points(_run_files(other, "runner")), "all")
    nt = compare(with_overheads(params, _ab(other)), load_points(_run_files(other, "nccl-tests")), "all")
    assert nt["unknown_harness"] == [] and same_run["unknown_harness"] == []
    for res in (same_run, runner, nt):
        assert res["model"]["median_abs_rel_error"] <= 0.025 and res["model"]["p90_abs_rel_error"] <= 0.065
        assert res["nccl"]["median_abs_rel_error"] > 10 * res["model"]["median_abs_rel_error"]
    assert nt["model"]["median_abs_rel_error"] <= runner["model"]["median_abs_rel_error"] + 0.002
    own, harness = _by_pair(runner), _by_pair(nt)
    for pair in own:
        assert abs(harness[pair]["median_abs_rel_error"] - own[pair]["median_abs_rel_error"]) <= 0.009, pair


def test_run6_clocks_start_costs_and_rank_agreement():
    """run6/start (one lease, 8 B-64 KiB, NCCL's choice, each harness at two call counts): the
    runner's gated clocks cost a few us per measurement, the earlier clocks 5-30 us, nccl-tests'
    host timer 60-90 us; the gated runner's ranks agree within 0.5% at every size of every run 6
    sweep (0.02 us up to 64 KiB), where run 5's ranks were up to 69% apart (Ring LL, 256 B)."""
    files = sorted((D / "run6" / "start").glob("*.jsonl")) + [D / "run6" / "nccl-tests" / "graph_default.jsonl"]
    start = start_costs(load_points(files, "default"))
    assert start["runner-gated"] <= 4 and 5 <= start["runner-barrier"] <= 30 and 60 <= start["nccl-tests-mpi"] <= 90
    def spread(f):
        return max(r["time_us"] / r["time_us_min"] - 1 for r in load(f).records)
    assert all(load(f).meta["clock_start"] == "gated" and spread(f) <= 0.005 for f in _run_files("run6", "runner"))
    assert max(spread(f) for f in _run_files("run5", "runner")) > 0.5


def test_rotated_runner_sweeps_are_predicted_cold_like_nccl_tests():
    """run5/rotate_sweeps (runner --rotate, a lease nothing was fitted on): run2/params.json
    reads the moving buffer as cold (no warm term) and predicts it within 2% median, Ring LL
    within 1.5% (a sweep that reused one slice shows Ring LL up to a fifth faster at 2-16 MiB)."""
    params = load_params(D / "run2" / "params.json")
    pts = load_points(sorted((D / "run5" / "rotate_sweeps").glob("*.jsonl")))
    assert {p.config.slices for p in pts} == {20}
    res = compare(params, pts, "all")
    assert res["model"]["median_abs_rel_error"] <= 0.02 and res["model"]["p90_abs_rel_error"] <= 0.06
    assert _by_pair(res)["Ring/LL"]["median_abs_rel_error"] <= 0.015


def test_run1_params_on_run2_carry_run1s_graph_mixing_estimate():
    """ACCURACY.md "Why run 1's parameters transfer worse": run 1's fit removed graph mixing as one
    measured 5.32 us, but the cost differs by kernel, so its LL floors are off on run 2's bare
    runner: 3.4% median overall, Ring LL and Tree LL 6-7%, worse than run 2's own fit there."""
    res = compare(load_params(D / "params.json"), load_points(_run_files("run2", "runner")), "all")
    pairs = _by_pair(res)
    assert 0.025 < res["model"]["median_abs_rel_error"] <= 0.04
    assert pairs["Ring/LL"]["median_abs_rel_error"] > 0.06 and pairs["Tree/LL"]["median_abs_rel_error"] > 0.06
