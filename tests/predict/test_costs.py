"""collsim.predict.costs: what NCCL's transfers cost on a described cluster."""
import pytest

from collsim.fitted.rescale import cluster_params
from collsim.machine import load_cluster
from collsim.predict.costs import PROXY_US, channel_GBps, nccl_topology


def test_channels_share_a_port_and_one_alone_moves_its_own_rate():
    p = cluster_params(load_cluster("h100-nvlink"))
    alone = channel_GBps(p, "nvlink", "Ring", "Simple", 1)
    many = channel_GBps(p, "nvlink", "Ring", "Simple", 24)
    assert alone == pytest.approx(p.path("nvlink", "Ring", "Simple")["chan_GBps"], rel=0.05)
    assert 24 * many <= p.link_GBps["nvlink"] and many < alone


def test_protocol_costs_per_link_class():
    c = load_cluster("ib-400g", 2)
    p = cluster_params(c)
    simple = nccl_topology(c, p, "Ring", "Simple", 512, channels=16).costs("Ring/Simple")
    ll = nccl_topology(c, p, "Ring", "LL", 512, channels=16).costs("Ring/LL")
    assert simple.efficiency == 1.0 and ll.efficiency == 0.5
    assert simple.inter.proxy == pytest.approx(PROXY_US * 1e-6) and simple.intra.proxy == 0
    assert simple.inter.latency > simple.intra.latency and ll.intra.latency < simple.intra.latency
    assert simple.intra.fill > 0 and ll.intra.fill == 0               # LL flags every line: no slice to fill
    rail = nccl_topology(c, p, "Ring", "Simple", 512, channels=16).costs("Ring/Simple").intra.channel_beta
    tree = nccl_topology(c, p, "Tree", "Simple", 512, channels=16).costs("Tree/Simple").intra.channel_beta
    assert rail < tree        # a rail ring's NVLink port carries 14 of the 16 channels, a tree chain all of them


def test_nccls_tree_ceiling_by_hand():
    from dataclasses import replace

    from collsim.nccl.search import search
    from collsim.predict.costs import tree_ceiling_GBps
    c = load_cluster("b200-nvlink")
    one, two, four = (search(replace(c, nodes=n).nccl_view(), {}) for n in (1, 2, 4))
    assert four.tree.channels == 8 and tree_ceiling_GBps(four, "Simple") == pytest.approx(8 * 24.0)
    assert tree_ceiling_GBps(two, "Simple") == float("inf")       # one network peer a tree (see the docstring)
    assert tree_ceiling_GBps(four, "LL128") == pytest.approx(8 * 20.0)          # perChMaxTreeLL128Bw
    assert tree_ceiling_GBps(four, "LL") == float("inf") and tree_ceiling_GBps(one, "Simple") == float("inf")
