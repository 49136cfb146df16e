"""collsim.diagnose.judged: a run judged against the algorithm that ran (--algo, NCCL_ALGO, NCCL's per-call
lines; unknown: Ring and Tree forced beside NCCL's choice), and calibration logs marked in-sample."""
import pytest

from collsim.diagnose import diagnose, diagnose_text
from collsim.diagnose.report import text
from collsim.errors import CollsimError
from collsim.measure.bundled import data_path
from tests.diagnose.cases import DATA

NCCL_837 = DATA / "nccl-837"


def _837(algo=None):
    return diagnose([NCCL_837 / "command.txt"], str(NCCL_837 / "cluster.yaml"), [(1 << 30, 53.95)], algo)


def test_unknown_algorithm_shows_ring_and_tree_beside_nccls_choice():
    report = _837()
    (large,) = report["bands"]
    assert report["algorithm"] == {"ran": None, "where": "", "per_size": False}
    assert set(large["forced"]) == {"Ring", "Tree"}
    ring, tree = large["forced"]["Ring"], large["forced"]["Tree"]
    assert ring["expected_busbw_GBps"] == pytest.approx(large["expected_busbw_GBps"])   # NCCL 2.18 picks Ring
    assert tree["expected_busbw_GBps"] > 1.5 * ring["expected_busbw_GBps"] and tree["verdict"] == "below"
    lines = text(report)
    assert any(line.startswith("algorithm that ran: not in the files") for line in lines)
    assert sum(" forced  " in line for line in lines) == 2


def test_a_tree_run_is_judged_against_tree():
    report = _837("tree")
    (large,) = report["bands"]
    assert report["algorithm"]["ran"] == "Tree" and "forced" not in large
    assert report["verdict"] == "below_expected" and 0.5 < large["ratio"] < 0.7
    assert large["nccl_busbw_GBps"] < 53.95 < large["expected_busbw_GBps"]   # NCCL's model below, collsim's above
    with pytest.raises(CollsimError, match="algorithm 'Ringg'"):
        _837("Ringg")


def test_nccl_algo_in_the_files_and_calibration_logs_in_sample():
    report = diagnose([data_path("public", "L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl")])
    assert report["algorithm"]["ran"] == "Ring" and report["algorithm"]["where"].endswith(":1")
    assert report["in_sample"] == ["data/public/L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl"]
    assert any(line.startswith("in-sample: this run is data/public/L15") for line in text(report))
    held_out = diagnose([data_path("h200x2", "nccl-tests", "eager_default.log")])
    assert held_out["in_sample"] == [] and not any("in-sample" in line for line in text(held_out))


def test_nccls_per_call_lines_name_the_algorithm_per_size():
    ranks = [f"#  Rank  {r} Group  0 Pid 1 on h device  {r} [0x1] NVIDIA H100 80GB HBM3" for r in range(8)]
    rows = [f"{n:>12} {n // 4:>12} float sum -1 {t:>8} 1 1 0 {t:>8} 1 1 0"
            for n, t in ((1 << 20, 20.0), (1 << 30, 5000.0))]
    tuning = ["h:1:1 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..1}",
              "h:1:1 [0] NCCL INFO AllReduce: 1073741824 Bytes -> Algo TREE proto SIMPLE channel{Lo..Hi}={0..1}"]
    header = "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 1024(factor) warmup iters: 5"
    report = diagnose_text({"run.log": "\n".join([header, *ranks, *rows, *tuning])})
    assert report["algorithm"] == {"ran": "Tree", "where": "run.log:12", "per_size": True}
    assert {p["bytes"]: p["algo"] for p in report["points"]} == {1 << 20: "Ring", 1 << 30: "Tree"}
