"""collsim.algorithms.collnet: CollNetDirect and CollNetChain through the network's switch (SHARP)."""
import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.algorithms.collnet import heads_of, scatter_order
from collsim.core.checker import check
from collsim.core.schedule import Schedule
from collsim.machine import load_cluster
from collsim.machine.linkview import to_topology
from collsim.simulate import simulate

NAMES = ("collnet-direct", "collnet-chain", "nvls-sharp")


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ranks, g, nics", [(32, 8, None), (16, 8, 2), (12, 4, 3), (6, 3, 2), (5, 1, None),
                                            (7, 7, 1)])
def test_every_shape_is_an_allreduce_through_the_network(name, ranks, g, nics):
    kw = {} if name == "nvls-sharp" else {"nics_per_node": nics}
    for count in (0, 1, ranks - 1, 3 * ranks + 5):
        s = build_schedule(name, ranks, count, gpus_per_node=g, channels=3, chunks=2, **kw)
        r = check(s)
        assert r.ok, (name, ranks, g, count, r.error)
        assert s.network == 1 and s.network_endpoint == ranks + s.switches
        net = (s.src == s.network_endpoint) | (s.dst == s.network_endpoint)
        assert count == 0 or net.any()


def test_direct_moves_what_nccl_moves():
    # per GPU (S bytes, G = H = 8): (G-1)/G S scattered and (G-1)/G S broadcast over NVLink, S/G each way to the
    # network (all_reduce.h:273-364@v2.28.9)
    p, g, count = 32, 8, 8 * 8 * 2 * 3
    s = build_schedule("collnet-direct", p, count, gpus_per_node=g, channels=2, chunks=3)
    r = check(s)
    S = count * 4
    net = s.network_endpoint
    assert r.ok and np.all(r.bytes_sent == 2 * (g - 1) * S // g + S // g)
    assert all(r.link_bytes[(gpu, net)] == S // g and r.link_bytes[(net, gpu)] == S // g for gpu in range(p))


def test_scatter_never_sends_two_gpus_to_one_head_at_once():
    # NCCL shifts each GPU's scatter by its index (connect.cc:231@v2.28.9): the j-th send of every GPU of a node
    # goes to a different head
    for g in (8, 6, 2):
        place = scatter_order(g, heads_of(g, g))
        for j in range(g - 1):
            assert sorted(np.flatnonzero(place[gpu] == j)[0] for gpu in range(g)) == list(range(g))
    s = build_schedule("collnet-direct", 16, 16 * 64, gpus_per_node=8)
    first = s.step_slice(0)
    src, dst = s.src[first], s.dst[first]
    for k in range(7):                                          # the k-th send of each GPU of node 0
        kth = [int(dst[src == gpu][k]) for gpu in range(8)]
        assert sorted(kth) == list(range(8))


def test_a_sum_taken_from_the_network_before_every_node_reduced_is_caught():
    # two nodes of one GPU: node 0 reduces into the network (endpoint 2), both take the sum out one step too early
    steps = [[(0, 2, 0, 4, "reduce")], [(2, 0, 0, 4, "copy"), (2, 1, 0, 4, "copy"), (1, 2, 0, 4, "reduce")]]
    r = check(Schedule.from_steps(2, 4, steps, network=1))
    assert not r.ok and r.step == 1 and "copy of a partial sum lacking rank(s) 1" in r.error
    good = [[(0, 2, 0, 4, "reduce"), (1, 2, 0, 4, "reduce")], [(2, 0, 0, 4, "copy"), (2, 1, 0, 4, "copy")]]
    assert check(Schedule.from_steps(2, 4, good, network=1)).ok
    # an NVSwitch's copy may carry a node's partial sum (NVLSTree); the network's may not
    nvls = [[(0, 2, 0, 4, "reduce")], [(2, 0, 0, 4, "copy")]]
    assert "lacking" not in (check(Schedule.from_steps(2, 4, nvls, switches=1)).error or "")


def test_direct_busiest_nic_carries_half_the_rings_bytes():
    # 4 nodes of 8 H100, a NIC per GPU: the ring's NICs carry 2 (P-1)/P x S/G, CollNetDirect's S/G (the switches
    # reduce: each node sends its sum once), so P / (2 (P-1)) = 0.516 of the ring's, per NIC and per node
    topo = to_topology(load_cluster("h100-sharp", 4))
    p, count = 32, 32 * 8 * 64
    ring = simulate(build_schedule("ring", p, count, gpus_per_node=8, nics_per_node=8, channels=8), topo)
    direct = simulate(build_schedule("collnet-direct", p, count, gpus_per_node=8, nics_per_node=8, channels=2), topo)
    nics = lambda r: {k: v for k, v in r.resource_bytes.items() if ".nic" in k and k.endswith(".out")}  # noqa: E731
    ratio = max(nics(direct).values()) / max(nics(ring).values())
    assert ratio == pytest.approx(p / (2 * (p - 1)), rel=0.01)
    per_node = lambda r: sum(v for k, v in nics(r).items() if k.startswith("node0."))                 # noqa: E731
    assert per_node(direct) / per_node(ring) == pytest.approx(p / (2 * (p - 1)), rel=0.01)
