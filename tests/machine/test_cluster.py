"""collsim.machine.cluster and hardware: cluster descriptions, their defaults, errors and topologies."""
import json
from dataclasses import replace

import pytest

from collsim.errors import CollsimError
from collsim.machine import Cluster, load_cluster, to_topology
from collsim.machine.hardware import NETS
from collsim.machine.presets import CLUSTERS, PRESETS

SPEC = {"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "intra": "nvswitch", "nics_per_node": 8, "nic_Gbps": 400,
        "net": "ib", "nccl": "2.26", "notes": {"rack": "r12"}}


def test_defaults_and_notes():
    c = Cluster.from_dict(SPEC)
    assert (c.ranks, c.nvlink_GBps, c.nvls, c.nccl, c.cpu) == (16, 450.0, True, "2.26", "intel")
    assert c.notes == {"rack": "r12"} and c.to_dict()["notes"] == {"rack": "r12"} and c.extra == {}
    assert (c.p2p, c.pcie_gen, c.pcie_GBps, c.nvlink_domain, c.sharp, c.fabric_efficiency) == \
        (True, 5, 64.0, 8, False, 1.0)
    assert c.nic_GBps == 50 and c.nic_of_local(3) == 3
    assert Cluster("A100", 8).nvls is False and Cluster("H100", 8, intra="pcie").nvls is False
    assert Cluster.from_dict({**SPEC, "nccl": 2.2}).nccl == "2.20"          # YAML reads 2.20 as a number
    assert Cluster.from_dict({**SPEC, "gpu": "h200"}).gpu == "H200"
    assert Cluster.from_dict({**SPEC, "nccl": "2.26.2-1"}).nccl == "2.26"
    half = Cluster("H100", 8, 2, nics_per_node=4, nic_Gbps=400)
    assert [half.nic_of_local(g) for g in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize("gpu, intra, net, name", [
    ("h100", "NVSwitch", "IB", "H100"),
    ("NVIDIA H100 80GB HBM3", "nvswitch", "RoCE", "H100"),   # nvidia-smi's and nccl-tests' device names
    ("NVIDIA A100-SXM4-80GB", "nvswitch", "ib", "A100"),
    ("H200 SXM", "nvswitch", "TCP", "H200"),
])
def test_names_in_any_case_and_device_names(gpu, intra, net, name):
    c = Cluster.from_dict({**SPEC, "gpu": gpu, "intra": intra, "net": net})
    assert (c.gpu, c.intra, c.net) == (name, intra.lower(), net.lower())
    assert Cluster(gpu=gpu, gpus_per_node=8).gpu == name


@pytest.mark.parametrize("asked, followed", [("2.12.12", "2.18"), ("2.31.1-1", "2.30"), ("2.9", "2.18")])
def test_an_nccl_version_not_ported_follows_the_closest_and_says_so(asked, followed):
    c = Cluster.from_dict({**SPEC, "nccl": asked})
    short = ".".join(asked.split("-")[0].split(".")[:2])
    assert c.nccl == followed and c.to_dict()["nccl_asked"] == short
    assert f"NCCL {followed} (asked {short}: the closest ported)" in c.describe()
    assert "nccl_asked" not in Cluster.from_dict(SPEC).to_dict()


@pytest.mark.parametrize("change, message", [
    ({"gpu": "P100"}, "gpu 'P100' is not known"),            # Pascal: before Volta
    ({"gpu": "GB300"}, "gpu 'GB300' is not known"),                 # not B200
    ({"gpu": "H100 or H200"}, "gpu 'H100 OR H200' is not known"),   # two names: no guess
    ({"nodes": 0}, "nodes must be >= 1"),
    ({"gpus_per_node": "8"}, "gpus_per_node must be an integer"),
    ({"gpu": "A100", "nvls": True}, "A100 has no NVLink SHARP"),
    ({"intra": "pcie", "nvls": True}, "intra is pcie"),
    ({"nics_per_node": 9}, r"nics_per_node \(9\) exceeds gpus_per_node \(8\)"),
    ({"nic_Gbps": -400}, "nic_Gbps must be >= 0.1"),
    ({"nvlink_GBps": -1}, "nvlink_GBps must be >= 0.1"),
    ({"nvlink_GBps": float("nan")}, "nvlink_GBps must be a finite number"),
    ({"intra": "infiniband"}, "intra 'infiniband' is not one of"),
    ({"net": "ethernet"}, "net 'ethernet' is not one of"),
    ({"nccl": "3.0"}, "nccl '3.0' is not one of"),
    ({"nvls": "yes"}, "nvls must be true or false"),
])
def test_bad_specs_are_one_line_errors(change, message):
    with pytest.raises(CollsimError, match=message) as e:
        Cluster.from_dict({**SPEC, **change}, where="c.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("c.yaml: ")


def test_multi_node_needs_nics():
    with pytest.raises(CollsimError, match="nics_per_node is needed when nodes > 1"):
        Cluster("H100", 8, 2)
    with pytest.raises(CollsimError, match="nics_per_node must be >= 1 when nodes > 1"):
        Cluster("H100", 8).with_nodes(2)


def test_load_presets_and_files(tmp_path):
    assert load_cluster("h100-nvlink", nodes=4).ranks == 32
    f = tmp_path / "mine.json"
    f.write_text(json.dumps(SPEC))
    c = load_cluster(f)
    assert c.name == "mine" and c.nodes == 2
    y = tmp_path / "mine.yaml"
    y.write_text("gpu: H100\ngpus_per_node: 8\nnodes: 2\nnics_per_node: 8\nnic_Gbps: 400\nnccl: 2.26\n")
    assert load_cluster(y).nccl == "2.26"
    for bad, message in (("nope", "not a preset"), (tmp_path / "missing.yaml", "no such file")):
        with pytest.raises(CollsimError, match=message):
            load_cluster(bad)


def test_topologies_follow_the_tables():
    for name, c in CLUSTERS.items():
        t, c = PRESETS[name], CLUSTERS[name].nccl_view()       # the simulator runs the machine NCCL sees
        assert (t.nodes, t.gpus_per_node, t.name) == (c.nodes, c.gpus_per_node, name) and c.gpu in t.source
        pair = c.gpu_info.nvlinks // (c.gpus_per_node - 1) * c.gpu_info.link_GBps if c.intra == "nvlink" else None
        assert t.intra.bandwidth_GBps == pytest.approx((pair or c.intra_GBps) * c.intra_efficiency)
        assert t.links_per_pair == (c.gpu_info.nvlinks // (c.gpus_per_node - 1) if pair else 0)
        assert (t.nvls is not None) == c.nvls and t.call_us == (25.0 if CLUSTERS[name].nodes == 1 else 60.0)
        if c.nvls:
            assert t.nvls.bandwidth_GBps == pytest.approx(t.intra.bandwidth_GBps * c.gpu_info.nvls_efficiency)
    ib = to_topology(load_cluster("ib-400g", nodes=2))
    assert ib.inter.bandwidth_GBps == pytest.approx(50 * NETS["ib"].efficiency) and ib.nics_per_node == 8
    assert PRESETS["h100-nvlink"].intra.bandwidth_GBps == pytest.approx(368.09, rel=1e-3)   # L01's plateau
    assert PRESETS["a100x4-nvlink"].links_per_pair == 4 and PRESETS["h100-nvlink"].nvls.bandwidth_GBps == \
        pytest.approx(368.09 * 0.85, rel=1e-3)
    mine = to_topology(Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400, call_us=8.4))
    assert mine.call_us == 8.4 and Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400).with_nodes(1).per_call_us == 25
    with pytest.raises(CollsimError, match="call_us"):
        Cluster("H100", 8, call_us=-1)


# Every description issue 25 asks for, as a user would write it.
DESCRIPTIONS = {
    "dgx-a100": {"gpu": "A100", "gpus_per_node": 8, "nodes": 4, "nics_per_node": 8, "nic_Gbps": 200},
    "a100-pcie": {"gpu": "NVIDIA A100-PCIE-40GB", "gpus_per_node": 8},
    "a100-pcie-bridge": {"gpu": "A100-PCIE", "gpus_per_node": 2, "intra": "nvlink"},
    "a800": {"gpu": "A800", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 4, "nic_Gbps": 200, "net": "roce"},
    "h800": {"gpu": "H800", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 400},
    "h20": {"gpu": "H20", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 4, "nic_Gbps": 400, "net": "roce"},
    "h100-pcie": {"gpu": "H100-PCIE", "gpus_per_node": 4, "pcie_gen": 5},
    "h100-nvl": {"gpu": "H100 NVL", "gpus_per_node": 2, "intra": "nvlink"},
    "h200": {"gpu": "H200", "gpus_per_node": 8},
    "b200": {"gpu": "B200", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 400},
    "gb200-nvl72": {"gpu": "GB200", "gpus_per_node": 4, "nodes": 18, "nvlink_domain": 72, "nics_per_node": 4,
                    "nic_Gbps": 400},
    "gh200": {"gpu": "GH200", "gpus_per_node": 1, "nodes": 4, "nics_per_node": 1, "nic_Gbps": 400},
    "l40s": {"gpu": "L40S", "gpus_per_node": 8},
    "l4": {"gpu": "L4", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 1, "nic_Gbps": 100, "net": "tcp"},
    "a10": {"gpu": "A10", "gpus_per_node": 4},
    "rtx3090": {"gpu": "RTX3090", "gpus_per_node": 2, "intra": "nvlink"},
    "rtx4090": {"gpu": "NVIDIA GeForce RTX 4090", "gpus_per_node": 8, "p2p": False},
    "rtx4080-gen3": {"gpu": "RTX4080", "gpus_per_node": 2, "pcie_gen": 3},
    "p4d": {"gpu": "A100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 4, "nic_Gbps": 100, "net": "efa"},
    "p5": {"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 32, "nic_Gbps": 100, "net": "efa"},
    "a3-mega": {"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 200, "net": "tcpx"},
    "sharp": {"gpu": "H100", "gpus_per_node": 8, "nodes": 4, "nics_per_node": 8, "nic_Gbps": 400, "sharp": True},
    "slow-fabric": {"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 400,
                    "fabric_efficiency": 0.6, "notes": "spine at 2:1"},
}


@pytest.mark.parametrize("name", DESCRIPTIONS)
def test_every_description_is_accepted_and_round_trips(name, tmp_path):
    import yaml
    c = Cluster.from_dict(DESCRIPTIONS[name], where=name)
    again = tmp_path / f"{name}.yaml"
    again.write_text(yaml.safe_dump(c.to_dict()))
    assert load_cluster(again) == replace(c, name=name)          # a file without a name is named after itself
    assert to_topology(c).ranks == c.ranks and "\n" not in c.describe()


@pytest.mark.parametrize("typo, closest", [("nvsl", "nvls"), ("gpus_per_nodes", "gpus_per_node"),
                                           ("nic_gbps", "nic_Gbps"), ("fabric_eff", "fabric_efficiency"),
                                           ("shap", "sharp"), ("p2P", "p2p")])
def test_unknown_keys_are_refused_naming_the_closest_known_one(typo, closest, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(f"gpu: H100\ngpus_per_node: 8\n{typo}: false\n")
    with pytest.raises(CollsimError) as e:
        load_cluster(f)
    assert f"unknown key {typo!r} (did you mean {closest!r}?" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(CollsimError, match="known: name, source, notes, gpu"):
        Cluster.from_dict({"gpu": "H100", "gpus_per_node": 8, "zzzz": 1})


def test_nccl_view_one_node_per_nvlink_domain_and_grouped_efa_nics():
    rack = load_cluster("gb200-nvl72")
    v = rack.nccl_view()
    assert (v.nodes, v.gpus_per_node, v.nics_per_node, v.nvlink_domain) == (1, 72, 72, 72)
    two = rack.with_nodes(36).nccl_view()
    assert (two.nodes, two.gpus_per_node, two.ranks) == (2, 72, 144)
    p5 = load_cluster("p5").nccl_view()
    assert (p5.nics_per_node, p5.nic_Gbps) == (8, 400.0)        # 4 x 100 Gb/s EFA NICs per GPU, one device
    assert load_cluster("p4d").nccl_view() == load_cluster("p4d")  # 4 NICs for 8 GPUs: nothing to group
    assert "SHARP" in load_cluster("h100-sharp").describe()
    assert "fabric efficiency 0.6" in Cluster.from_dict(DESCRIPTIONS["slow-fabric"]).describe()
    assert "PCIe Gen4 without P2P (SHM)" in load_cluster("rtx4090-box").describe()


def test_degraded_nics_are_described_checked_and_seen_as_nccl_sees_the_nics(tmp_path):
    import yaml
    c = Cluster.from_dict({**SPEC, "degraded_nics": [{"node": 1, "nic": 2, "nic_Gbps": 200}]})
    assert c.degraded_nics == ((1, 2, 200.0),) and "node1.nic2 at 200 Gb/s" in c.describe()
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(c.to_dict()))
    assert load_cluster(f).degraded_nics == c.degraded_nics and "degraded_nics" not in Cluster.from_dict(SPEC).to_dict()
    t = to_topology(c)
    assert t.slow_nics == ((10, 2.0),) and "node1.nic2 at 200 Gb/s (degraded)" in t.source
    for bad, message in (([{"node": 2, "nic": 0, "nic_Gbps": 100}], "degraded_nics node must be <= 1"),
                         ([{"node": 0, "nic": 8, "nic_Gbps": 100}], "degraded_nics nic must be <= 7"),
                         ([{"node": 0, "nic": 0, "nic_Gbps": 800}], "faster than nic_Gbps"),
                         ([[0, 0, 100], [0, 0, 200]], "listed twice"), ([{"node": 0}], "each entry is"),
                         ({"node": 0}, "must be a list")):
        with pytest.raises(CollsimError, match=message):
            Cluster.from_dict({**SPEC, "degraded_nics": bad})
    with pytest.raises(CollsimError, match="degraded_nics node must be <= 0"):
        c.with_nodes(1)
    p5 = Cluster.from_dict({**DESCRIPTIONS["p5"], "degraded_nics": [[1, 5, 50], [1, 6, 0.1]]}).nccl_view()
    assert p5.degraded_nics == ((1, 1, 250.1),)                  # NICs 4-7 are GPU 1's device: 2 x 100 + 50 + 0.1
    rack = Cluster.from_dict({**DESCRIPTIONS["gb200-nvl72"], "nodes": 36, "degraded_nics": [[19, 3, 100]]})
    assert rack.nccl_view().degraded_nics == ((1, 7, 100.0),)    # host 19 = domain 1's second host: NIC 4 + 3
