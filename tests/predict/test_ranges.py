"""The 80% range on every prediction (collsim.predict.ranges) and how it is measured (collsim.fit.coverage)."""
import math

import pytest

from collsim.fit.coverage import leave_one_out
from collsim.machine import load_cluster
from collsim.predict import predict_nccl
from collsim.predict.ranges import (
    KINDS,
    bandwidth_share,
    busbw_range,
    kernel_only,
    packaged_widths,
    time_range,
    widths_from,
)


def test_every_row_carries_a_range_around_its_time_wider_where_the_inputs_are_less_sure():
    sure = predict_nccl(load_cluster("h100-nvlink"), [8, 1 << 20, 1 << 30], timing="graph")   # -G -g 8: measured
    unsure = predict_nccl(load_cluster("p4d", 2), [8, 1 << 20, 1 << 30])
    for result in (sure, unsure):
        for r in result["rows"]:
            assert r["low_us"] < r["time_us"] < r["high_us"]
        assert result["rows"][0]["bandwidth_share"] == 0.0 and result["rows"][-1]["bandwidth_share"] > 0.9
    assert sure["range"] == {"latency": "log", "bandwidth": "log"}
    assert unsure["range"]["bandwidth"] == "datasheet"
    width = [r["high_us"] / r["low_us"] for r in (sure["rows"][-1], unsure["rows"][-1])]
    assert width[0] < width[1]


def test_packaged_widths_never_make_a_less_sure_kind_narrower():
    w = packaged_widths()
    for regime in ("latency", "bandwidth"):
        values = [w[regime][k] for k in KINDS[1:]]          # a log, a datasheet, an assumption
        assert values == sorted(values) and min(w[regime].values()) > 0


def test_widths_are_the_80th_percentile_of_measured_error_per_regime_and_kind():
    rows = [{"log": f"L{i % 3}", "error": e, "share": 0.9, "kinds": {"latency": "log", "bandwidth": "log"}}
            for i, e in enumerate([0.01, -0.02, 0.03, 0.04, -0.05, 0.06, 0.07, 0.08, -0.09, 0.10])]
    w = widths_from(rows)
    assert w["bandwidth"]["log"] == pytest.approx(0.082)
    assert w["bandwidth"]["machine"] == w["bandwidth"]["log"]                 # unmeasured: the next kind's
    assert w["bandwidth"]["assumed"] == w["bandwidth"]["log"]                 # never narrower than a surer one
    assert w["latency"]["log"] == 1.0                                          # no row at all: e-fold


def test_leave_one_out_judges_each_log_with_the_others_widths():
    rows = [{"log": log, "error": e, "share": 1.0, "kinds": {"latency": "log", "bandwidth": "log"},
             "fitted": False} for log, e in (("a", 0.01), ("a", 0.02), ("b", 0.02), ("b", 0.01), ("c", 0.5))]
    res = leave_one_out(rows)
    assert res["logs"]["c"]["inside"] == 0                       # the others never saw an error that large
    assert res["logs"]["a"]["inside"] == 2
    assert res["all"]["n"] == 5


def test_the_range_reads_as_busbw_and_the_share_is_bounded():
    low, high = time_range(100.0, 0.5, {"latency": "log", "bandwidth": "assumed"},
                           {"latency": {"log": 0.1}, "bandwidth": {"assumed": 0.3}})
    assert (low, high) == (pytest.approx(100 * math.exp(-0.2)), pytest.approx(100 * math.exp(0.2)))
    lo, hi = busbw_range({"bytes": 1000, "low_us": low, "high_us": high}, 1.0)   # 2 ranks: 2(n-1)/n = 1
    assert lo < 1000 / 1e3 / 100 < hi
    assert bandwidth_share(10.0, 20.0) == 0.0 and bandwidth_share(0.0, 1.0) == 0.0


def test_p2p_collectives_are_as_sure_as_an_assumption():
    """No calibration log runs NCCL's p2p sends: an AlltoAll on a node whose ring is calibrated (L01) is as sure
    as an assumption, its range as wide as that kind's; an AllGather there keeps the ring's log."""
    h100 = load_cluster("h100-nvlink")
    a2a, ag = (predict_nccl(h100, [1 << 30], coll=c) for c in ("alltoall", "all_gather"))
    assert a2a["range"]["bandwidth"] == "assumed" and "p2p" in a2a["inputs"]["schedule"]["source"]
    assert ag["range"]["bandwidth"] == "log" and "schedule" not in ag["inputs"]
    width = [math.log(d["rows"][0]["high_us"] / d["rows"][0]["time_us"]) for d in (a2a, ag)]
    assert width[0] > 2 * width[1]


def test_kernel_only_rows_drop_the_harness_time_and_scale_the_range():
    """A measurement of the kernel alone (NCCL Inspector) is judged against the predicted kernel: 8 H100, 8 KiB,
    where nccl-tests' launch is a large part of the time."""
    row = predict_nccl(load_cluster("h100-nvlink"), [8192])["rows"][0]
    k = kernel_only(row)
    assert k["time_us"] == row["kernel_us"] < row["time_us"]
    ratio = row["time_us"] / row["kernel_us"]
    assert k["busbw_GBps"] == pytest.approx(row["busbw_GBps"] * ratio)
    assert (k["low_us"], k["high_us"]) == pytest.approx((row["low_us"] / ratio, row["high_us"] / ratio))
