"""collsim.measure.fidelity: runner vs reference harness per size, on synthetic files and on the
committed 2 x H200 A/B runs (data/h200x2/run{2,3,4,5}/fidelity and run5/rotate, data/h200x2/README.md)."""
import json
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.measure import result_record
from collsim.measure.fidelity import fidelity

D = Path(__file__).resolve().parents[2] / "data" / "h200x2"


def _runner(path, times, inplace=True, algo=None, timing="graph", mean=True, wrong=0):
    meta = {"type": "meta", "harness": "collsim", "world_size": 2, "timing": timing}
    recs = []
    for s, t in times.items():
        extra = {"time_us_mean": t, "time_us_min": t - 1.0} if mean else {}
        recs.append({"type": "result", **result_record(s, s // 4, "float32", t + 1.0 if mean else t, 2, wrong,
                                                       inplace=inplace, algo=algo, proto=algo and "LL",
                                                       timing=timing, **extra)})
    path.write_text("\n".join(json.dumps(r) for r in [meta, *recs]) + "\n")
    return path


def test_medians_over_runs_and_ratio(tmp_path):
    a = _runner(tmp_path / "a.jsonl", {8: 5.0, 16: 6.0, 1 << 20: 50.0})
    b = _runner(tmp_path / "b.jsonl", {8: 7.0, 16: 6.0})
    c = _runner(tmp_path / "c.jsonl", {8: 5.5, 16: 7.0})
    ref = _runner(tmp_path / "ref.jsonl", {8: 5.0, 16: 5.0, 32: 9.0})
    res = fidelity([a, b, c], [ref])
    assert [r["bytes"] for r in res["sizes"]] == [8, 16]  # sizes on both sides only
    assert [r["runner_us"] for r in res["sizes"]] == [5.5, 6.0]  # median over runs of time_us_mean
    assert res["summary"]["max_ratio"] == pytest.approx(1.2) and res["sizes"][0]["runs"] == [3, 1]
    assert res["runner_statistic"] == "time_us_mean" and res["config"] == "default/default graph float32 2 ranks"
    assert fidelity([a], [ref], max_bytes=8)["summary"]["n"] == 1
    with pytest.raises(CollsimError, match="share no sizes"):
        fidelity([a], [ref], min_bytes=1 << 30)
    with pytest.raises(CollsimError, match="no out-of-place results"):
        fidelity([a], [ref], inplace=False)
    old = _runner(tmp_path / "old.jsonl", {8: 6.0}, mean=False)  # no time_us_mean: the max, said so
    assert fidelity([old], [ref])["runner_statistic"] == "time_us"


def test_configurations_must_match_and_not_mix(tmp_path):
    ring = _runner(tmp_path / "ring.jsonl", {8: 5.0}, algo="Ring")
    default = _runner(tmp_path / "d.jsonl", {8: 5.0})
    eager = _runner(tmp_path / "e.jsonl", {8: 5.0}, timing="eager")
    with pytest.raises(CollsimError, match="runner files mix configurations: Ring/LL graph"):
        fidelity([ring, default], [default])
    with pytest.raises(CollsimError,
                       match="different configurations: default/default eager .* vs default/default graph"):
        fidelity([eager], [default])
    log = D / "run4" / "diag" / "diag_nt_c1.log"  # the name does not say: NCCL's choice unless --label
    runner = D / "run4" / "diag" / "diag_runner_inplace.jsonl"
    with pytest.raises(CollsimError, match="Ring/LL graph float32 2 ranks vs default/default"):
        fidelity([runner], [log])
    assert fidelity([runner], [log], label="Ring/LL")["summary"]["n"] == 7


@pytest.mark.parametrize("bad,match", [('"x"', "a.jsonl:2: field 'time_us_mean' must be a finite number, got 'x'"),
                                       ("NaN", "a.jsonl:2: field 'time_us_mean' must be a finite number, got nan"),
                                       ("-1.0", "a.jsonl:2: field 'time_us_mean' must be >= 0, got -1"),
                                       ("0", "a.jsonl: size 8: time_us_mean 0 is not a positive")])
def test_bad_times_are_errors(tmp_path, bad, match):
    ref = _runner(tmp_path / "ref.jsonl", {8: 5.0})
    f = _runner(tmp_path / "a.jsonl", {8: 5.0})
    f.write_text(f.read_text().replace('"time_us_mean": 5.0', f'"time_us_mean": {bad}'))
    with pytest.raises(CollsimError, match=match):
        fidelity([f], [ref])
    wrong = _runner(tmp_path / "w.jsonl", {8: 5.0}, wrong=3)
    with pytest.raises(CollsimError, match="w.jsonl: size 8: 3 wrong elements"):
        fidelity([wrong], [ref])


def _ab(run, runner="runner_n400_r?.jsonl", reference="nt_mpi_mix0_G20_r?.log"):
    f = D / run / "fidelity"
    return fidelity(sorted(f.glob(runner)), sorted(f.glob(reference)))["summary"]


def test_runner_vs_two_process_nccl_tests_small_messages():
    """Issue 4's target (graph, 8 B-64 KiB, same NCCL settings, one process per GPU) on the
    committed A/B runs, as data/h200x2/README.md reports them: 400 calls per size, within 5%
    in runs 3 and 4 and 6.7% in run 2 (runner faster at 16 and 32 B); with 4000 vs 20000
    calls within 2.4%; nccl-tests' -G 20 sits above its -G 1000 at every size (its host clock
    over barrier, launches and the final poll, spread over fewer calls)."""
    assert _ab("run2")["n"] == _ab("run3")["n"] == _ab("run4")["n"] == _ab("run5")["n"] == 14
    assert _ab("run5")["max_abs_deviation"] <= 0.07
    assert _ab("run2")["max_abs_deviation"] <= 0.07
    assert _ab("run3")["max_abs_deviation"] <= 0.05 and _ab("run4")["max_abs_deviation"] <= 0.05
    assert _ab("run3", "runner_n4000_r?.jsonl", "nt_mpi_mix0_G1000_r?.log")["max_abs_deviation"] <= 0.03
    assert _ab("run3", "nt_mpi_mix0_G20_r?.log", "nt_mpi_mix0_G1000_r?.log")["min_ratio"] > 1.0


ROTATE = ["Ring_LL", "Tree_LL", "Tree_LL128", "Ring_LL128", "Ring_Simple", "Tree_Simple", "default"]


@pytest.mark.parametrize("config", ROTATE)
def test_rotating_buffers_like_nccl_tests_removes_the_mid_size_gap(config):
    """data/h200x2/README.md "run5/rotate": with nccl-tests' buffer rule (--rotate) the runner
    is within 3% of nccl-tests at every size 1-64 MiB in every configuration; reusing one
    slice (L2-warm) makes Ring LL up to 20% and Tree LL128 ~10% faster, Tree LL ~11% slower
    at 2-16 MiB, at most 3.5% at 32 MiB and 1% at 64 MiB."""
    f = D / "run5" / "rotate"
    label = None if config == "default" else config.replace("_", "/")
    runs = sorted(f.glob(f"rot_{config}_nt_r?.log"))
    for k, nt in enumerate(runs, 1):
        rotated = fidelity([f / f"rot_{config}_rotate_r{k}.jsonl"], [nt], label=label)
        assert rotated["summary"]["n"] == 7 and rotated["summary"]["max_abs_deviation"] <= 0.03, rotated["summary"]
        fixed = {r["bytes"] >> 20: r["ratio"] for r in fidelity([f / f"rot_{config}_fixed_r{k}.jsonl"], [nt],
                                                               label=label)["sizes"]}
        assert abs(fixed[32] - 1) <= 0.036 and abs(fixed[64] - 1) <= 0.011
        mid = [fixed[m] for m in (4, 8, 16)]
        if config == "Ring_LL":
            assert max(mid) < 0.9 and min(mid) < 0.85
        elif config == "Tree_LL128":
            assert max(mid) < 0.95
        elif config == "Tree_LL":
            assert min(mid) > 1.05
