"""collsim.machine.linkview: the simulator's links for every kind of machine (PCIe with and without
peer-to-peer, EFA with grouped NICs, NVLink domains across hosts, a fabric below line rate)."""
import pytest

from collsim.machine import load_cluster, to_topology
from collsim.machine.cluster import Cluster
from collsim.machine.hardware import PCIE_RING_EFFICIENCY, SHM_RING_EFFICIENCY
from collsim.machine.linkview import ALPHA_US
from collsim.machine.networks import NETS
from collsim.machine.presets import CLUSTERS


def test_pcie_with_and_without_peer_to_peer():
    p2p, shm = to_topology(load_cluster("l40s-box")), to_topology(load_cluster("rtx4090-box"))
    assert p2p.intra.bandwidth_GBps == pytest.approx(32 * PCIE_RING_EFFICIENCY)
    assert shm.intra.bandwidth_GBps == pytest.approx(32 * SHM_RING_EFFICIENCY)
    assert shm.intra.bandwidth_GBps < p2p.intra.bandwidth_GBps
    assert "host memory (SHM)" in shm.source and "peer-to-peer" in p2p.source and p2p.nvls is None
    assert to_topology(Cluster("L4", 4, pcie_gen=3)).intra.bandwidth_GBps == pytest.approx(16 * PCIE_RING_EFFICIENCY)


def test_efa_nics_grouped_per_gpu_and_the_fabric_efficiency():
    p5 = to_topology(load_cluster("p5"))
    assert p5.nics_per_node == 8 and p5.inter.bandwidth_GBps == pytest.approx(4 * 12.5 * NETS["efa"].efficiency)
    assert "32 NICs grouped into 8" in p5.source and p5.inter.latency_us == pytest.approx(ALPHA_US["efa"])
    p4d = to_topology(load_cluster("p4d"))
    assert p4d.nics_per_node == 4 and p4d.inter.bandwidth_GBps == pytest.approx(12.5 * NETS["efa"].efficiency)
    slow = to_topology(Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400, fabric_efficiency=0.5))
    fast = to_topology(load_cluster("dgx-h100"))
    assert slow.inter.bandwidth_GBps == pytest.approx(fast.inter.bandwidth_GBps / 2) and "fabric 0.5" in slow.source


def test_an_nvlink_domain_is_one_node_of_the_simulation():
    rack = to_topology(load_cluster("gb200-nvl72"))
    assert (rack.nodes, rack.gpus_per_node, rack.call_us) == (1, 72, 60.0)   # 18 hosts: the multi-node call cost
    assert "One NVLink domain of 72 GPUs (18 hosts)" in rack.source and rack.nvls is not None
    two = to_topology(load_cluster("gb200-nvl72", nodes=36))
    assert (two.nodes, two.gpus_per_node, two.nics_per_node) == (2, 72, 72)


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_preset_has_a_topology_whose_source_cites_it(name):
    t = to_topology(CLUSTERS[name])
    assert t.ranks == CLUSTERS[name].ranks and CLUSTERS[name].source in t.source and "[" in t.source
