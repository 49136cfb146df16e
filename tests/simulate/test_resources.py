"""collsim.simulate.resources: routes over the fabric above the NICs (leaf groups, rails, pods), and what an
oversubscribed spine does to the traffic that crosses it."""
from dataclasses import replace

import numpy as np
import pytest

from collsim.core.schedule import Schedule
from collsim.machine import load_cluster, to_topology
from collsim.machine.fabric import Fabric, Tier
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate
from collsim.simulate.reference import simulate_reference
from collsim.simulate.resources import fabric_names, route


def test_transfers_cross_the_uplinks_of_the_switches_they_leave_and_enter():
    # 8 nodes x 2 GPUs, a NIC per GPU; rail-optimised leaves of 2 nodes 2:1, pods of 4 nodes 4:1
    topo = Topology(8, 2, Link(0, 1e-9), Link(0, 1e-9), 2, fabric=(Tier(2, 2, 2.0, "leaf"), Tier(4, 1, 4.0, "pod")))
    names = fabric_names(topo)
    assert names[:4] == ["leaf0.rail0.up", "leaf0.rail0.down", "leaf0.rail1.up", "leaf0.rail1.down"]
    assert names[-2:] == ["pod1.up", "pod1.down"] and len(names) == 4 * 2 * 2 + 2 * 2
    src, dst = np.array([0, 0, 0, 0, 1]), np.array([1, 2, 3, 4, 8])
    r = route(src, dst, np.zeros(5, int), 16, topo)
    spare = r.fabric_size - 1
    got = [[names[col[i]] if col[i] != spare else "-" for col in r.fabric] for i in range(5)]
    assert got == [["-"] * 4,                                                   # inside a node: no NIC at all
                   ["-"] * 4,                                                   # node 0 -> 1 on rail 0: one leaf
                   ["leaf0.rail0.up", "leaf0.rail1.down", "-", "-"],            # rail 0 -> rail 1: via the spine
                   ["leaf0.rail0.up", "leaf1.rail0.down", "-", "-"],            # another leaf group of the pod
                   ["leaf0.rail1.up", "leaf2.rail0.down", "pod0.up", "pod1.down"]]   # another pod
    assert route(src, dst, np.zeros(5, int), 16, replace(topo, fabric=())).fabric == ()


def _between_leaf_groups(nbytes: int) -> Schedule:
    """Every GPU of nodes 0-1 sends ``nbytes`` to the GPU of its rail on nodes 2-3."""
    steps = [[(r, r + 16, 0, nbytes // 4, "copy", 0, 0) for r in range(16)]]
    return Schedule.from_steps(32, nbytes // 4, steps)


@pytest.mark.parametrize("rail", [True, False])
def test_a_2_to_1_spine_halves_what_crosses_it(rail):
    """Leaf groups of 2 nodes x 8 NICs; 16 flows at a NIC's rate each cross from one group to the other: the 2:1
    uplinks move 8 NICs' rate, so the bytes take twice as long; traffic inside a group does not notice."""
    c = load_cluster("ib-400g", 4)
    blocking, spine = (to_topology(replace(c, fabric=Fabric(2, rail, o))) for o in (1.0, 2.0))
    assert blocking.fabric == () and spine.fabric[0].planes == (8 if rail else 1)
    s = _between_leaf_groups(64 << 20)
    alpha = spine.inter.alpha
    full, half = (simulate(s, t).arrive.max() - alpha for t in (blocking, spine))
    assert half == pytest.approx(2 * full, rel=1e-12)
    assert simulate(s, spine).busiest()["name"].startswith(("leaf0.rail0.up" if rail else "leaf0.up", "leaf1"))
    inside = Schedule.from_steps(32, 1 << 24, [[(r, r + 8, 0, 1 << 24, "copy") for r in range(8)]])  # node 0 -> 1
    assert simulate(inside, spine).time_s == simulate(inside, blocking).time_s
    small = _between_leaf_groups(4096)                  # the reference loop walks every element
    np.testing.assert_allclose(simulate(small, spine).arrive, simulate_reference(small, spine)[2], rtol=1e-12)


def test_a_degraded_nic_holds_its_transfers_longer_and_only_its_own():
    topo = Topology(2, 2, Link(0, 1e-9), Link(0, 1e-9), 2, slow_nics=((3, 2.0),))     # node1.nic1 at half rate
    s = Schedule.from_steps(4, 1000, [[(0, 2, 0, 1000, "copy"), (1, 3, 0, 1000, "copy")]])
    r = simulate(s, topo)
    np.testing.assert_allclose(r.arrive, [4e-6, 8e-6], rtol=1e-12)
    assert r.busiest()["name"] == "node1.nic1.in"
    np.testing.assert_allclose(r.arrive, simulate_reference(s, topo)[2], rtol=1e-12)
    with pytest.raises(Exception, match="slow NIC must be <= 3"):
        Topology(2, 2, Link(0, 1e-9), Link(0, 1e-9), 2, slow_nics=((4, 2.0),))
