"""collsim.diagnose.expected: the cluster a run is compared with, from --cluster or the files (saying what was
assumed), and predict-nccl's busbw for the measured sizes beside NCCL's own model's."""
from collsim.diagnose.evidence import gather
from collsim.diagnose.expected import CHOSEN, NIC_GBPS, expect, machine_for
from collsim.diagnose.sources import Run, read_source
from collsim.predict import predict_nccl
from tests.diagnose.cases import DATA

SYN = DATA / "synthetic"


def evidence(name):
    folder = SYN / name
    return gather([read_source(p) for p in sorted(folder.iterdir()) if p.name != "case.json"])


def test_the_machine_from_the_files_says_what_it_saw_and_assumed():
    ev = evidence("nic_link_rate")
    m = machine_for(ev, ev.runs[0])
    c = m.cluster
    assert (c.gpu, c.nodes, c.gpus_per_node, c.nics_per_node, c.nic_Gbps, c.net) == ("H100", 2, 8, 8, 400.0, "ib")
    assert any(s.startswith("8 active IB port(s)") for s in m.seen) and any("400 Gb/s ports" in s for s in m.seen)
    assert m.assumed == ["NVSwitch between the GPUs of a node (an SXM part)"]
    ev = evidence("gdr_disabled")   # no ibstatus: the NIC rate is the GPU generation's and says so
    m = machine_for(ev, ev.runs[0])
    assert m.cluster.nic_Gbps == NIC_GBPS["H100"] and "400 Gb/s NICs (no ibstatus)" in m.assumed


def test_pcie_gpus_unknown_gpus_and_a_given_cluster():
    ev = evidence("iommu")
    assert machine_for(ev, ev.runs[0]).cluster.intra == "pcie"
    ev = evidence("slow_or_bad_node")   # a pair table names no GPU
    assert "no GPU name" in machine_for(ev, Run("x")).why_not
    ev = evidence("measurement_error")   # two single-node runs: the cluster resized to what ran
    m = machine_for(ev, ev.runs[0], spec="ib-400g")
    assert (m.cluster.nodes, m.cluster.gpus_per_node) == (1, 8) and m.seen[0] == "--cluster ib-400g"


def test_only_the_chosen_variables_reach_the_prediction():
    ev = evidence("too_few_channels")   # NCCL_MAX_NCHANNELS=2 is a cause, not the hardware's range
    m = machine_for(ev, ev.runs[0])
    assert m.env == {} and "NCCL_MAX_NCHANNELS" not in CHOSEN
    pts = expect(m, ev.runs[0])
    assert len(pts) == len(ev.runs[0].rows) and pts[-1]["channels"] > 2


def test_expected_busbw_is_predict_nccls_and_nccls_model_is_beside():
    ev = evidence("expected_performance")
    m = machine_for(ev, ev.runs[0])
    pts = expect(m, ev.runs[0])
    sizes = [p["bytes"] for p in pts]
    rows = predict_nccl(m.cluster, sizes, gpus_per_process=8)["rows"]
    assert [p["expected"] for p in pts] == [r["busbw_GBps"] for r in rows]
    big = pts[-1]
    assert big["nccl"] == big["bytes"] / 1e3 / rows[-1]["nccl_us"] * 2 * 7 / 8
    assert abs(big["measured"] / big["expected"] - 1) < 0.02   # the synthetic run was made at the prediction
    assert expect(machine_for(evidence("slow_or_bad_node"), Run("x")), Run("x", rows=[{"bytes": 8}])) == []
