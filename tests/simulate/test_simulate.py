"""Tests of collsim.simulate: hand-made schedules with hand-computed times, and agreement with
collsim.simulate.reference (the shared semantics written as a plain loop)."""
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.core.compose import ScheduleBuilder
from collsim.core.schedule import COPY, REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Link, Topology
from collsim.simulate import contention, engine, simulate, simulate_times
from collsim.simulate.reference import simulate_reference as reference

A, B = 1e-6, 1e-9          # alpha 1 us, beta 1 ns/byte (1 GB/s)


def uni(P, a=A, b=B):
    return Topology.uniform(P, a, b)


def sched(P, count, steps, itemsize=1):
    return Schedule.from_steps(P, count, steps, itemsize=itemsize)


def test_single_transfer_time_and_stats():
    r = simulate(sched(2, 100, [[(0, 1, 0, 100, "copy")]], itemsize=4), uni(2))
    assert r.time_s == pytest.approx(A + 400 * B, rel=1e-15)
    assert r.resource_bytes["gpu0.send"] == 400 and r.resource_bytes["gpu1.recv"] == 400
    assert r.resource_bytes["gpu1.send"] == 0
    assert r.resource_busy_s["gpu0.send"] == pytest.approx(400 * B)     # a port is held for the bytes only
    assert r.link_bytes == {(0, 1): 400}
    d = r.to_dict(transfers=True)
    assert d["time_s"] == r.time_s and d["links"] == [[0, 1, 400]] and len(d["start_s"]) == 1
    assert [x["name"] for x in d["resources"]] == ["gpu0.send", "gpu1.recv"]
    assert d["resources"][0]["busy"] == pytest.approx(400 * B / (A + 400 * B))


def test_data_flow_lets_pipelined_steps_overlap():
    # 0 -> 1 -> 2 forwarding two halves: the second hop of half 0 needs only half 0.
    s = sched(3, 100, [[(0, 1, 0, 50, "copy")], [(0, 1, 50, 50, "copy"), (1, 2, 0, 50, "copy")],
                       [(1, 2, 50, 50, "copy")]])
    r = simulate(s, uni(3))
    t = A + 50 * B
    np.testing.assert_allclose(r.start, [0, t, t, 2 * t])
    assert r.time_s == pytest.approx(3 * t)
    # an independent later step on other ranks starts at once (no step barrier)
    s2 = sched(4, 10, [[(0, 1, 0, 10, "copy")], [(0, 1, 0, 10, "copy")], [(2, 3, 0, 10, "copy")]])
    assert simulate(s2, uni(4)).start[2] == 0.0


def test_fifo_slot_and_port_contention_in_schedule_order():
    # rank 0 sends three messages in one step on one channel: its send slot serves them in order
    s = sched(4, 30, [[(0, 1, 0, 10, "copy"), (0, 2, 10, 10, "copy"), (0, 3, 20, 10, "copy")]])
    r = simulate(s, uni(4))
    t = A + 10 * B
    np.testing.assert_allclose(r.start, [0, t, 2 * t])
    assert r.resource_busy_s["gpu0.send"] == pytest.approx(3 * 10 * B)
    # on three channels only the port is shared, for the bytes: latency overlaps
    s = sched(4, 30, [[(0, 1, 0, 10, "copy", 0), (0, 2, 10, 10, "copy", 1), (0, 3, 20, 10, "copy", 2)]])
    np.testing.assert_allclose(simulate(s, uni(4)).start, [0, 10 * B, 20 * B])
    assert simulate(s, uni(4)).time_s == pytest.approx(A + 30 * B)
    # two senders into one receiver: the receive port serializes them, full duplex otherwise
    s = sched(3, 10, [[(0, 2, 0, 10, "reduce"), (1, 2, 0, 10, "reduce"), (2, 0, 0, 10, "reduce")]])
    np.testing.assert_allclose(simulate(s, uni(3)).start, [0, t, 0])


def test_shared_nic_contention_depends_on_nics_per_node():
    # 2 nodes x 4 GPUs: every GPU of node 0 sends to its peer on node 1 at once
    steps = [[(g, 4 + g, 0, 1000, "copy") for g in range(4)]]
    s = sched(8, 1000, steps)
    intra, inter = Link(1e-7, 1e-10), Link(5e-6, 1e-9)
    w = 1000 * 1e-9                                            # a NIC is held for the bytes only
    t = 5e-6 + w
    one = simulate(s, Topology(2, 4, intra, inter, nics_per_node=1))
    assert one.time_s == pytest.approx(3 * w + t)
    np.testing.assert_allclose(one.start, [0, w, 2 * w, 3 * w])
    assert one.resource_bytes["node0.nic0.out"] == 4000 and one.resource_bytes["node1.nic0.in"] == 4000
    assert "gpu0.send" not in {x["name"] for x in one.resource_table()}   # NIC traffic skips NVLink ports
    two = simulate(s, Topology(2, 4, intra, inter, nics_per_node=2))
    np.testing.assert_allclose(two.start, [0, w, 0, w])       # GPU g uses NIC g x 2 // 4
    four = simulate(s, Topology(2, 4, intra, inter, nics_per_node=4))
    assert four.time_s == pytest.approx(t)
    # intra-node transfers take no NIC and use the intra link
    r = simulate(sched(8, 10, [[(0, 1, 0, 10, "copy"), (2, 3, 0, 10, "copy")]]), Topology(2, 4, intra, inter))
    assert r.time_s == pytest.approx(1e-7 + 10 * 1e-10)


def test_gamma_costs_reduces_only():
    s = sched(2, 100, [[(0, 1, 0, 100, "reduce")], [(1, 0, 0, 100, "copy")]], itemsize=4)
    g = 3e-10
    r = simulate(s, uni(2), gamma=g)
    np.testing.assert_allclose(r.duration, [A + 400 * (B + g), A + 400 * B])
    with pytest.raises(CollsimError, match="gamma"):
        simulate(s, uni(2), gamma=-1.0)


def test_zero_count_and_empty_schedules():
    b = ScheduleBuilder(4, 0)
    b.add_step([0, 1], [1, 2], 0, 0, REDUCE)
    r = simulate(b.build(), uni(4))
    assert r.time_s == 0.0 and len(r.start) == 0
    assert simulate_times([b.build()], uni(4)).tolist() == [0.0]
    # an explicit zero-length transfer costs alpha and reads nothing
    s = Schedule(2, 4, 1, [0, 0], [1, 1], [0, 0], [4, 0], [COPY, COPY], [0, 1, 2])
    np.testing.assert_allclose(simulate(s, uni(2)).start, [0, A + 4 * B])


def test_ring_on_uniform_topology_matches_formula():
    from collsim.algorithms import build_schedule
    for P, count in ((2, 64), (5, 1000), (16, 4096), (64, 1 << 16)):
        s = build_schedule("ring", P, count, itemsize=4)
        n = count * 4
        r = simulate(s, uni(P, 5e-6, 1e-11))
        assert r.time_s == pytest.approx(2 * (P - 1) * (5e-6 + n / P * 1e-11), rel=1e-12)
        busy = r.resource_busy_s
        assert busy["gpu0.send"] == pytest.approx(2 * (P - 1) * n / P * 1e-11, rel=1e-12)   # bytes x beta


def test_deterministic():
    from collsim.algorithms import build_schedule
    s = build_schedule("ring", 12, 1001, itemsize=4, slices=2)
    topo = Topology(3, 4, Link(1e-6, 1e-11), Link(5e-6, 1e-10), 1)
    a, b = simulate(s, topo, gamma=1e-12), simulate(s, topo, gamma=1e-12)
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)


def test_too_few_gpus_and_bad_ranges():
    s = sched(4, 10, [[(0, 3, 0, 10, "copy")]])
    with pytest.raises(CollsimError, match="4 ranks"):
        simulate(s, uni(2))
    bad = Schedule(2, 4, 1, [0], [1], [2], [4], [COPY], [0, 1])
    with pytest.raises(CollsimError, match="outside its buffer"):
        simulate(bad, uni(2))


def test_long_in_step_chain():
    # one sender, many receivers in one step: one chain, solved by one cumulative max
    m = 64
    s = sched(m + 1, m, [[(0, k + 1, k, 1, "copy") for k in range(m)]])
    r = simulate(s, uni(m + 1))
    np.testing.assert_allclose(r.start, np.arange(m) * (A + B))


@st.composite
def random_case(draw):
    nodes, gpn = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    nics = draw(st.integers(1, gpn))
    board = draw(st.sampled_from(["switch", "nvls", "direct"]))
    P = nodes * gpn
    count = draw(st.integers(1, 12))
    channels = draw(st.integers(1, 3))
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        step = []
        for _ in range(draw(st.integers(0, 5))):
            src, dst = draw(st.integers(0, P - 1)), draw(st.integers(0, P - 1))
            if board == "nvls" and draw(st.booleans()):       # a GPU and its node's switch (endpoint P + node)
                if draw(st.booleans()):
                    dst = P + src // gpn
                else:
                    src = P + dst // gpn
            off = draw(st.integers(0, count - 1))
            ln = draw(st.integers(1, count - off))
            step.append((src, dst, off, ln, draw(st.sampled_from(["reduce", "copy"])),
                         draw(st.integers(0, channels - 1))))
        steps.append(step)
    topo = Topology(nodes, gpn, Link(draw(st.sampled_from([0.0, 1e-6])), 1e-9), Link(3e-6, 4e-9), nics,
                    nvls=Link(5e-7, 2e-9) if board == "nvls" else None, links_per_pair=2 * (board == "direct"))
    s = Schedule.from_steps(P, count, steps, itemsize=draw(st.sampled_from([1, 4])),
                            switches=nodes if board == "nvls" else 0)
    return s, topo


@settings(max_examples=150, deadline=None)
@given(random_case(), st.sampled_from([0.0, 2e-10]))
def test_matches_reference_on_random_schedules(case, gamma):
    s, topo = case
    r = simulate(s, topo, gamma)
    start, end = reference(s, topo, gamma)
    np.testing.assert_allclose(r.start, start, rtol=1e-12, atol=0)
    np.testing.assert_allclose(r.end, end, rtol=1e-12, atol=0)
    with mock.patch.object(contention, "ONE_KIND_CUMMAX", False):      # every contended step level by level
        assert np.array_equal(simulate(s, topo, gamma).start, start)
        with mock.patch.object(contention, "LEVEL_WIDTH", 10**9):      # ... or one loop in schedule order
            assert np.array_equal(simulate(s, topo, gamma).start, start)
    with mock.patch.object(engine, "TREE_SPAN_FACTOR", 0):          # force the segment trees
        tree = simulate(s, topo, gamma)
    assert np.array_equal(tree.start, r.start) and np.array_equal(tree.end, r.end)


@st.composite
def crowded_step(draw):
    # a few long steps on shared NICs, ports and slots: several resource kinds chain within a step
    nodes, gpn = draw(st.integers(2, 3)), draw(st.integers(2, 4))
    P, count = nodes * gpn, draw(st.integers(1, 6))
    channels = draw(st.integers(1, 4))
    steps = [[(draw(st.integers(0, P - 1)), draw(st.integers(0, P - 1)), 0, draw(st.integers(1, count)),
               draw(st.sampled_from(["reduce", "copy"])), draw(st.integers(0, channels - 1)))
              for _ in range(draw(st.integers(10, 40)))]
             for _ in range(draw(st.integers(1, 3)))]
    topo = Topology(nodes, gpn, Link(1e-6, draw(st.sampled_from([1e-9, 3e-9]))), Link(3e-6, 4e-9),
                    draw(st.integers(1, 2)))
    return Schedule.from_steps(P, count, steps, itemsize=4), topo


@settings(max_examples=60, deadline=None)
@given(crowded_step())
def test_crowded_steps_match_reference(case):
    s, topo = case
    start, end = reference(s, topo)
    np.testing.assert_allclose(simulate(s, topo).start, start, rtol=1e-12, atol=0)
    with mock.patch.object(contention, "ONE_KIND_CUMMAX", False):
        assert np.array_equal(simulate(s, topo).end, end)


@pytest.mark.parametrize("P, count", [(12, 1000), (16, 4096), (7, 99)])
def test_segment_trees_equal_flat_table(P, count):
    # halving-doubling reads ranges of up to half the buffer: trees and the flat table give the same bits
    from collsim.algorithms import build_schedule
    s = build_schedule("halving-doubling", P, count)
    for topo in (uni(P), Topology(P // 4 or 1, 4 if P >= 4 else P, Link(1e-6, 1e-10), Link(4e-6, 1e-9), 1)):
        if topo.ranks < P:
            continue
        with mock.patch.object(engine, "TREE_SPAN_FACTOR", 0):
            tree = simulate(s, topo, gamma=1e-11)
        with mock.patch.object(engine, "TREE_SPAN_FACTOR", 10**9):
            flat = simulate(s, topo, gamma=1e-11)
        assert np.array_equal(tree.start, flat.start) and np.array_equal(tree.end, flat.end)


def test_simulate_times_batches_equal_single_runs():
    from collsim.algorithms import build_schedule
    topo = Topology(2, 4, Link(1e-6, 1e-11), Link(5e-6, 1e-10), 1)
    counts = [0, 3, 8, 1000, 4096, 4097, 1 << 16]
    for name in ("ring", "double-tree", "halving-doubling"):
        scheds = [build_schedule(name, 8, c) for c in counts]
        want = [simulate(s, topo, gamma=1e-12).time_s for s in scheds]
        for factor in (engine.TREE_SPAN_FACTOR, 0):                    # 0: batched through segment trees
            with mock.patch.object(engine, "TREE_SPAN_FACTOR", factor):
                got = simulate_times(iter(scheds), topo, gamma=1e-12)
            np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("order", ["shift-major", "rank-major"])
@pytest.mark.parametrize("nodes", [1, 4])
def test_all_to_all_step_matches_reference(order, nodes):
    # one step where every rank sends to every other: long FIFO chains on every port. On one
    # node, shift-major order cuts into conflict-free runs; the other cases need the exact loop.
    P = 20
    pairs = [(i, (i + k) % P) for k in range(1, P) for i in range(P)]
    if order == "rank-major":
        pairs.sort()
    s = sched(P, P, [[(i, j, j, 1, "reduce") for i, j in pairs]], itemsize=4)
    topo = Topology(nodes, P // nodes, Link(1e-6, 1e-10), Link(4e-6, 1e-9), 2)
    r = simulate(s, topo, gamma=1e-11)
    start, _ = reference(s, topo, gamma=1e-11)
    np.testing.assert_allclose(r.start, start, rtol=1e-12, atol=0)


def test_switch_transfers_use_the_nvls_link_and_only_the_gpu_side():
    # 2 GPUs reduce into their switch (endpoint 2) on two channels, the switch sends the sum back
    nv = Link(5e-7, 2e-9)
    topo = Topology(1, 2, Link(A, B), Link(A, B), nvls=nv)
    s = Schedule.from_steps(2, 10, [[(0, 2, 0, 10, "reduce", 0), (1, 2, 0, 10, "reduce", 1)],
                                    [(2, 0, 0, 10, "copy", 0), (2, 1, 0, 10, "copy", 1)]], itemsize=4,
                            switches=1)
    r = simulate(s, topo)
    t = 5e-7 + 40 * 2e-9
    np.testing.assert_allclose(r.start, [0, 0, t, t])            # no switch-side resource is shared
    assert r.time_s == pytest.approx(2 * t)
    assert r.resource_busy_s["gpu0.send"] == pytest.approx(80e-9) and r.resource_bytes["gpu1.recv"] == 40
    with pytest.raises(CollsimError, match="need NVLink SHARP"):
        simulate(s, Topology(1, 2, Link(A, B), Link(A, B)))
    across = Schedule.from_steps(4, 1, [[(0, 5, 0, 1, "reduce")]], switches=2)      # GPU 0 -> node 1's switch
    with pytest.raises(CollsimError, match="another node"):
        simulate(across, Topology(2, 2, Link(A, B), Link(A, B), nvls=nv))


def test_direct_pair_links_replace_ports():
    # a board without NVSwitch: 0 -> 1 and 0 -> 2 in one step use two pair links, not one port
    topo = Topology(1, 3, Link(A, B), Link(A, B), links_per_pair=4)
    s = sched(3, 20, [[(0, 1, 0, 10, "copy", 0), (0, 2, 10, 10, "copy", 1), (1, 2, 0, 10, "copy", 2)]])
    r = simulate(s, topo)
    np.testing.assert_allclose(r.start, [0, 0, 0])
    assert {x["name"] for x in r.resource_table()} == {"gpu0-gpu1", "gpu0-gpu2", "gpu1-gpu2"}


def test_call_cost_is_added_to_every_nonempty_collective():
    s = sched(2, 100, [[(0, 1, 0, 100, "copy")]])
    topo = Topology(1, 2, Link(A, B), Link(A, B), call_us=8.4)
    assert simulate(s, topo).time_s == pytest.approx(8.4e-6 + A + 100 * B)
    assert simulate_times([s, sched(2, 0, [])], topo).tolist() == [simulate(s, topo).time_s, 0.0]
