"""collsim.simulate.symmetry: channels that repeat each other, as they are or from the next GPU, simulated once
give the kept transfers the times of the whole simulation."""
from dataclasses import replace

import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.machine import load_cluster
from collsim.machine.fabric import Fabric
from collsim.predict import nccl_context
from collsim.predict.costs import nccl_topology, with_window
from collsim.predict.schedules import nccl_run
from collsim.simulate import simulate
from collsim.simulate.symmetry import (
    channel_classes,
    collapse_channels,
    fabric_binds,
    permute_channels,
    stand_for,
    without_fabric,
)


def nccl_case(spec, nodes, algo, proto, nbytes, loops=3, whole=True):
    """NCCL's schedule, machine and protocol; ``whole``: every channel built (NVLS builds two that stand for all)."""
    ctx = nccl_context(load_cluster(spec, nodes), algo, proto)
    d = ctx.decisions([nbytes])[0]
    run = nccl_run(ctx.cluster, algo, proto, nbytes, d.channels, 4 << 20, loops, alike=not whole)
    topo = with_window(nccl_topology(ctx.cluster, ctx.params, algo, proto, run.threads, 1.0, run.channels), run.window)
    return (run.schedule, topo, f"{algo}/{proto}") + ((run.weight,) if not whole else ())


@pytest.mark.parametrize("case, built", [(("ib-400g", 4, "NVLSTree", "Simple", 1 << 26), 2),
                                         (("h100-nvlink", 1, "NVLS", "Simple", 1 << 26), 2),
                                         (("ib-400g", 4, "Ring", "Simple", 1 << 28), 8),
                                         (("h100-nvlink", 1, "Ring", "Simple", 1 << 26), 1)])
def test_alike_channels_are_built_once_and_stand_for_all(case, built):
    """NVLS channel c runs tree c mod 2, a ring channel the order of c mod G (across nodes; one order on one node):
    NCCL's run builds those channels, each on a machine standing for the rest."""
    s, topo, proto = nccl_case(*case)
    few, topo, proto, weight = nccl_case(*case, whole=False)
    assert few.n_channels == built and weight * built == s.n_channels
    assert (simulate(few, stand_for(topo, weight), protocol=proto, progress=False).time_s
            == pytest.approx(simulate(s, topo, protocol=proto, progress=False).time_s, rel=1e-9))


@pytest.mark.parametrize("case", [("h100-nvlink", 1, "Ring", "Simple", 1 << 26),
                                  ("ib-400g", 4, "NVLSTree", "Simple", 1 << 26),
                                  ("ib-400g", 4, "Ring", "LL128", 1 << 24),
                                  ("h100-nvlink", 1, "NVLS", "Simple", 1 << 26)])
def test_collapsed_channels_keep_the_whole_simulations_time(case):
    s, topo, proto = nccl_case(*case)
    full = simulate(s, topo, protocol=proto, progress=False)
    small, slow, g = collapse_channels(s, topo)
    assert g > 1 and small.n_channels == s.n_channels // g
    assert simulate(small, slow, protocol=proto, progress=False).time_s == pytest.approx(full.time_s, rel=1e-9)


@pytest.mark.parametrize("case", [("ib-400g", 4, "Tree", "LL128", 1 << 22), ("ib-400g", 2, "Tree", "Simple", 1 << 26),
                                  ("h100-nvlink", 1, "Tree", "LL128", 1 << 24),
                                  ("ib-100g", 4, "Tree", "Simple", 1 << 24)])
def test_rotated_channels_keep_the_whole_simulations_time(case):
    s, topo, proto = nccl_case(*case)
    full = simulate(s, topo, protocol=proto, progress=False)
    s1, t1, g = collapse_channels(s, topo)
    small, slow, k = permute_channels(s1, t1)
    assert small.n_channels * k * g == s.n_channels and k % 8 == 0
    r = simulate(small, slow, protocol=proto, progress=False, merged=True)
    assert r.time_s == pytest.approx(full.time_s, rel=1e-9)
    assert r.busiest()["busy"] == pytest.approx(full.busiest()["busy"], rel=1e-4)   # parts differ by an element


def test_channels_that_differ_are_simulated_whole():
    topo = nccl_case("h100-nvlink", 1, "Ring", "Simple", 1 << 20)[1]
    assert collapse_channels(build_schedule("ring", 8, 2400, channels=3), topo)[2] == 3
    assert channel_classes(build_schedule("ring", 8, 1000, channels=3)) == [[0], [1], [2]]   # chunks 41 and 42
    assert collapse_channels(build_schedule("ring", 8, 1000, channels=3), topo)[2] == 1
    assert permute_channels(build_schedule("ring", 8, 1000), topo) is None          # one channel: nothing to rotate
    odd = build_schedule("nccl-tree", 16, 4096, gpus_per_node=8, channels=3)       # 3 heads of 8: shifts not covered
    assert permute_channels(odd, nccl_case("ib-400g", 2, "Tree", "Simple", 1 << 20)[1]) is None


@pytest.mark.parametrize("case", [("ib-400g", 2, "Ring", "Simple", 1 << 26), ("ib-400g", 4, "Ring", "LL128", 1 << 24),
                                  ("ib-100g", 4, "Ring", "Simple", 1 << 25)])
def test_rail_rings_of_every_search_channel_are_one_channel_permuted(case):
    """A rail ring's search channel s is channel 0 with every node's GPUs rotated (even s) or reflected (odd s)."""
    s, topo, proto = nccl_case(*case)
    full = simulate(s, topo, protocol=proto, progress=False)
    s1, t1, g = collapse_channels(s, topo)
    small, slow, k = permute_channels(s1, t1)
    assert small.n_channels == 1 and k * g == s.n_channels
    assert simulate(small, slow, protocol=proto, progress=False, merged=True).time_s == full.time_s


@pytest.mark.parametrize("nodes, channels, slices, loops", [(8, 1, 1, 1), (8, 16, 2, 3), (64, 2, 2, 1), (6, 3, 1, 2)])
def test_a_ring_quotient_of_two_nodes_gives_the_whole_rings_times(nodes, channels, slices, loops):
    """Shifting every rank two nodes on maps NCCL's rail rings onto themselves: two nodes running the whole ring's
    steps (``ring_quotient``) give every kept transfer the time it has in the whole ring, to the last bit."""
    from collsim.algorithms.ring import ring, ring_quotient
    from collsim.machine import to_topology
    p = 8 * nodes
    count = p * channels * slices * loops * 48
    whole = ring(p, count, 4, slices=slices, channels=channels, gpus_per_node=8, loops=loops)
    quotient = ring_quotient(p, count, 4, slices=slices, channels=channels, gpus_per_node=8, loops=loops)
    assert quotient.ranks == 16 and quotient.n_transfers * nodes == whole.n_transfers * 2
    a = simulate(whole, to_topology(load_cluster("ib-400g", nodes)), progress=False)
    b = simulate(quotient, to_topology(load_cluster("ib-400g", 2)), progress=False)
    assert b.time_s == a.time_s
    kept = np.isin(whole.src, np.arange(16))                      # the first two nodes' sends, in schedule order
    np.testing.assert_array_equal(b.arrive, a.arrive[kept])


def fabric_case(fabric, nodes, algo, proto, nbytes, loops=3):
    """``nccl_case`` on ib-400g of ``nodes`` nodes with ``fabric`` above the NICs."""
    ctx = nccl_context(replace(load_cluster("ib-400g", nodes), fabric=fabric), algo, proto)
    d = ctx.decisions([nbytes])[0]
    run = nccl_run(ctx.cluster, algo, proto, nbytes, d.channels, 4 << 20, loops, alike=False)
    topo = with_window(nccl_topology(ctx.cluster, ctx.params, algo, proto, run.threads, 1.0, run.channels), run.window)
    return run.schedule, topo, f"{algo}/{proto}"


@pytest.mark.parametrize("fabric", [Fabric(2, False, 4.0), Fabric(2, True, 4.0), Fabric(1, True, 3.0),
                                    Fabric(2, True, 2.0, 4, 2.0)])
@pytest.mark.parametrize("algo, proto, nbytes", [("Tree", "Simple", 1 << 26), ("Tree", "LL128", 1 << 22),
                                                 ("Ring", "Simple", 1 << 25)])
def test_channels_simulated_once_keep_their_times_on_an_oversubscribed_fabric(fabric, algo, proto, nbytes):
    """An uplink's time is its NICs' scaled: channels collapsed, or permuted on every node (rails onto rails, one
    plane onto itself), keep the whole simulation's times to the last bit, the fabric binding or not."""
    s, topo, proto = fabric_case(fabric, 6, algo, proto, nbytes)
    assert topo.fabric and fabric_binds(s.src, s.dst, s.src * s.n_channels + s.channel, topo)
    full = simulate(s, topo, protocol=proto, progress=False)
    s1, t1, g = collapse_channels(s, topo)
    small, slow, k = permute_channels(s1, t1)
    r = simulate(small, slow, protocol=proto, progress=False, merged=True)
    assert r.time_s == full.time_s and small.n_channels * k * g == s.n_channels
    assert r.busiest()["busy"] == pytest.approx(full.busiest()["busy"], rel=1e-4)


def test_rail_rings_whose_hops_stay_within_leaves_barely_notice_the_spine():
    """NCCL's rail rings on 8 nodes, rail-optimised leaves of 4 nodes 2:1: each rail's uplink carries the two
    channels of its rail that leave the group and moves two NICs' rate, so no hop is slower than its NIC
    (fabric_binds: None) and the times are those without the fabric, to the rounding of ties; leaves of one
    node (top of rack, 8:1) put every hop of the ring through one NIC's rate."""
    s, spine, proto = fabric_case(Fabric(4, True, 2.0), 8, "Ring", "Simple", 1 << 28)
    _, tor, _ = fabric_case(Fabric(1, False, 8.0), 8, "Ring", "Simple", 1 << 28)
    engines = s.src * s.n_channels + s.channel
    assert fabric_binds(s.src, s.dst, engines, spine) is None
    assert "leaf0.up: 16 transfers at once, 1x a NIC's rate" == fabric_binds(s.src, s.dst, engines, tor)
    plain = simulate(s, without_fabric(spine), protocol=proto, progress=False)
    assert simulate(s, spine, protocol=proto, progress=False).time_s == pytest.approx(plain.time_s, rel=1e-12)
    assert simulate(s, tor, protocol=proto, progress=False).time_s > 3 * plain.time_s
