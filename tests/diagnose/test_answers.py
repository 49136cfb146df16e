"""collsim.diagnose.answers: the five answers, each on a public thread whose maintainer's answer is known."""
import pytest

import collsim.cli as cli
from collsim.diagnose import diagnose
from collsim.diagnose.answers import answer, versions
from collsim.machine import Cluster
from tests.diagnose.cases import DATA


def test_expected_range_and_shares_on_l15():
    """NVIDIA/nccl-tests#309/#319 (AddyLaddy: ~48 GB/s per 400G NIC, up to ~396 GB/s with Ring on 8 NICs)."""
    report = diagnose([DATA / "nccl-tests-309-L15" / "L15.jsonl"])
    (large,) = [e for e in answer(report)["expected"] if e["band"] == "large"]
    lo, hi = large["range_GBps"]
    assert lo <= large["measured_busbw_GBps"] <= hi and large["line_rate_GBps"] == pytest.approx(400.0)
    assert large["pct_of_achievable"] == pytest.approx(100 * report["ratio"], rel=0.2)
    assert 85 < large["pct_of_line_rate"] < 100   # the maintainer's ~396 of 400: 99%


def test_why_below_names_the_maintainers_cause():
    """NVIDIA/nccl#489 (sjeaugey: without GPU Direct RDMA NIC-GPU transfers go through the CPU)."""
    report = diagnose([DATA / "nccl-489" / f for f in ("ibstatus.txt", "post.txt")])
    assert answer(report)["why_below"]["causes"][0] == "gdr_disabled"


def test_nccl_choice_against_the_simulated_best_on_two_nodes():
    """NVIDIA/nccl#837 (sjeaugey: on 2 nodes Tree puts more traffic on NVLink and beats the network bound):
    NCCL 2.18+'s choice at 1 GiB on that machine is Ring; the simulated best is Tree, faster."""
    spec = str(DATA / "nccl-837" / "cluster.yaml")
    a = answer(diagnose([], spec, [(1 << 30, 53.95)]), spec)
    (c,) = a["nccl_choice"]
    assert c["nccl"].startswith("Ring/") and c["best"].startswith("Tree/") and c["gain"] > 1.2
    assert a["expected"][0]["pct_of_line_rate"] > 100   # 53.95 GB/s over 2 x 200 Gb/s


def test_versions_on_the_2_25_ring_thread():
    """NVIDIA/nccl#1876 (2 x 4 A100, four ports; Ring with 2.25 on one port, ~34 GB/s back with NCCL_PXN_DISABLE=1
    on 2.27): collsim's ported tuning of 2.22 and 2.25 picks the same algorithm and time at every size there, so
    the answer points away from NCCL's tuning table (to the NIC path the thread found)."""
    c = Cluster.from_dict({"gpu": "A100", "gpus_per_node": 4, "nodes": 2, "intra": "nvlink", "nics_per_node": 4,
                           "nic_Gbps": 100, "net": "ib"})
    v = versions(c, [1 << k for k in range(20, 34, 2)], ("2.22", "2.25"))
    assert v["versions"] == ["2.22", "2.25"] and v["sizes"] == 7 and v["changes"] == []


def test_cli_prints_the_five_answers_and_refuses_bad_versions(capsys):
    spec = str(DATA / "nccl-837" / "cluster.yaml")
    assert cli.main(["diagnose", "--cluster", spec, "--measured", "1G=53.95", "--nccl", "2.22,2.25"]) == 0
    out = capsys.readouterr().out
    for head in ("1. what busbw", "2. why below", "3. why did NCCL pick", "4. NCCL 2.22 against 2.25",
                 "5. how do I model it", "collsim simulate --cluster"):
        assert head in out
    assert cli.main(["diagnose", "--cluster", spec, "--measured", "1G=5", "--nccl", "2.22"]) == 2
    assert cli.main(["diagnose", "--cluster", spec, "--measured", "1G=5", "--nccl", "2.22,9.9"]) == 2
    assert "collsim: error: --nccl" in capsys.readouterr().err


def test_a_log_of_another_collective_is_diagnosed_as_that_collective():
    """A public all_gather log (data/public P07, held out): the run is compared with predict-nccl's AllGather
    (its busbw factor, (n-1)/n), NCCL's choice is weighed against AllGather's algorithms only (no Tree), and
    the commands that model it say --coll all_gather."""
    from collsim.predict import predict_nccl
    report = diagnose([DATA.parents[2] / "data" / "public" / "P07_h100x8_1n_all_gather_nvswitch.jsonl"])
    assert report["collective"] == "all_gather" and report["verdict"] == "as_expected"
    largest = max(report["points"], key=lambda p: p["bytes"])
    cluster = Cluster.from_dict(report["machine"]["spec"], where="test")
    (row,) = predict_nccl(cluster, [largest["bytes"]], algo="Ring", coll="all_gather")["rows"]
    assert largest["expected"] == pytest.approx(row["busbw_GBps"], rel=1e-3)
    a = answer(report)
    assert all(c["best"].split("/")[0] in ("Ring", "NVLS") for c in a["nccl_choice"])
    assert all("--coll all_gather" in line for line in a["model"][:2])
    from collsim.diagnose.report import text
    assert "collective: all_gather (predicted as it, busbw with nccl-tests' factor of it)" in text(report)
