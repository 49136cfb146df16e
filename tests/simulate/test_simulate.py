"""Tests of collsim.simulate: hand-made schedules with hand-computed times, and agreement with
collsim.simulate.reference (the semantics written as a plain loop) to the last bit."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.core.compose import ScheduleBuilder
from collsim.core.schedule import COPY, REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.fabric import Tier
from collsim.machine.protocols import PathCosts, ProtocolCosts
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate, simulate_times
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
    assert r.end[0] == pytest.approx(400 * B) and r.arrive[0] == pytest.approx(A + 400 * B)   # latency after
    d = r.to_dict(transfers=True)
    assert d["time_s"] == r.time_s and d["links"] == [[0, 1, 400]] and len(d["start_s"]) == 1
    assert [x["name"] for x in d["resources"]] == ["gpu0.send", "gpu1.recv"]
    assert d["resources"][0]["busy"] == pytest.approx(400 * B / (A + 400 * B))
    assert r.busiest()["name"] == "gpu0.send"


def test_latency_delays_the_arrival_and_holds_nothing():
    # 0 -> 1 -> 2 forwarding two halves: the second half leaves rank 0 as soon as the first has left
    s = sched(3, 100, [[(0, 1, 0, 50, "copy")], [(0, 1, 50, 50, "copy"), (1, 2, 0, 50, "copy")],
                       [(1, 2, 50, 50, "copy")]])
    r = simulate(s, uni(3))
    w = 50 * B
    np.testing.assert_allclose(r.start, [0, w, w + A, 2 * w + A])
    assert r.time_s == pytest.approx(3 * w + 2 * A)          # two hops of latency, not three
    # an independent later step on other ranks starts at once (no step barrier)
    s2 = sched(4, 10, [[(0, 1, 0, 10, "copy")], [(0, 1, 0, 10, "copy")], [(2, 3, 0, 10, "copy")]])
    assert simulate(s2, uni(4)).start[2] == 0.0


def test_a_ring_pays_its_latency_per_hop_on_the_critical_path_only():
    # 4 nodes x 8 GPUs, one rail ring: the network latency is paid on the hops that cross nodes, not on every
    # step of the rank that sends across (the old rule held the channel for alpha: 2(P-1) network alphas)
    from collsim.algorithms import build_schedule
    intra, inter = Link(1e-6, 1e-12), Link(10e-6, 1e-12)
    topo = Topology(4, 8, intra, inter, 8)
    s = build_schedule("ring", 32, 32 * 16, gpus_per_node=8)
    t = simulate(s, topo).time_s
    assert t < 2 * 31 * 1e-6 + 2 * 4 * 10e-6 + 1e-6 < 2 * 31 * 10e-6


def test_engine_runs_one_transfer_at_a_time_ports_are_shared_by_channels():
    # rank 0 sends three messages in one step on one channel: its engine runs them in order
    s = sched(4, 30, [[(0, 1, 0, 10, "copy"), (0, 2, 10, 10, "copy"), (0, 3, 20, 10, "copy")]])
    w = 10 * B
    for policy in ("fair", "schedule"):
        r = simulate(s, uni(4), policy=policy)
        np.testing.assert_allclose(r.start, [0, w, 2 * w])
        assert r.resource_busy_s["gpu0.send"] == pytest.approx(3 * w) and r.time_s == pytest.approx(3 * w + A)
    # on three channels the port is shared: fairly, all three at a third of it, or one after another
    s = sched(4, 30, [[(0, 1, 0, 10, "copy", 0), (0, 2, 10, 10, "copy", 1), (0, 3, 20, 10, "copy", 2)]])
    fair, ordered = simulate(s, uni(4)), simulate(s, uni(4), policy="schedule")
    np.testing.assert_allclose(fair.start, [0, 0, 0])
    np.testing.assert_allclose(fair.end, [3 * w] * 3)               # channels that send together finish together
    np.testing.assert_allclose(ordered.start, [0, w, 2 * w])
    np.testing.assert_allclose(ordered.end, [w, 2 * w, 3 * w])
    assert fair.time_s == pytest.approx(ordered.time_s) == pytest.approx(3 * w + A)
    # two senders into one receiver share its receive port, full duplex otherwise
    s = sched(3, 10, [[(0, 2, 0, 10, "reduce"), (1, 2, 0, 10, "reduce"), (2, 0, 0, 10, "reduce")]])
    np.testing.assert_allclose(simulate(s, uni(3)).end, [2 * w, 2 * w, w])


def test_each_port_is_shared_on_its_own():
    # 1 -> 2 and 0 -> 2 share 2's receive port, 0 -> 2 and 0 -> 1 share 0's send port
    s = sched(3, 30, [[(1, 2, 0, 10, "copy", 0), (0, 2, 10, 10, "copy", 1), (0, 1, 20, 10, "copy", 2)]])
    w = 10 * B
    np.testing.assert_allclose(simulate(s, uni(3)).end, [2 * w] * 3)
    r = simulate(s, uni(3), policy="schedule")                  # one at a time, each port in schedule order
    np.testing.assert_allclose(r.start, [0, w, w])
    np.testing.assert_allclose(r.end, [w, 2 * w, 2 * w])


def test_the_channel_cap_leaves_the_rest_of_a_port_to_others():
    # a channel alone moves a quarter of the port's rate: two of them take half the port, each at its cap
    slow = ProtocolCosts("Simple", 1.0, 0, PathCosts(A, 0.0, 4 * B), PathCosts(A, 0.0, 4 * B))
    topo = Topology(1, 3, Link(A, B), Link(A, B), protocols=(slow,))
    s = sched(3, 20, [[(0, 1, 0, 10, "copy", 0), (0, 2, 10, 10, "copy", 1)]])
    r = simulate(s, topo, protocol="Simple")
    np.testing.assert_allclose(r.end, [40 * B, 40 * B])       # not 2 x 10 B at half the port: 4 x 10 B each


def test_schedule_policy_serves_in_schedule_order():
    # channel 1's transfer is in an earlier step but ready late; channel 0's later-step transfer is ready at once
    s = sched(3, 20, [[(1, 0, 0, 10, "copy", 1)], [(0, 2, 0, 10, "copy", 1)], [(0, 2, 10, 10, "copy", 0)]])
    w = 10 * B
    np.testing.assert_allclose(simulate(s, uni(3)).start, [0, w + A, 0])
    np.testing.assert_allclose(simulate(s, uni(3), policy="schedule").start, [0, w + A, 2 * w + A])
    with pytest.raises(CollsimError, match="contention policy"):
        simulate(s, uni(3), policy="ready")


def test_protocol_costs_overhead_channel_rate_efficiency_and_window():
    lat, oh, cap = 2e-6, 5e-7, 4e-9                       # a channel alone moves 250 MB/s < the link's 1 GB/s
    ll = ProtocolCosts("LL", 0.5, 2, PathCosts(lat, oh, cap), PathCosts(lat, oh, cap))
    topo = Topology(1, 2, Link(A, B), Link(A, B), protocols=(ll,))
    s = sched(2, 30, [[(0, 1, 0, 10, "copy")], [(0, 1, 10, 10, "copy")], [(0, 1, 20, 10, "copy")]])
    r = simulate(s, topo, protocol="LL")
    wire = 20                                              # 10 payload bytes on LL: 20 on the wire
    step = wire * cap + oh                                 # the channel's rate, then the step's fixed cost
    np.testing.assert_allclose(r.end[:2], [step, 2 * step])
    np.testing.assert_allclose(r.arrive[0], wire * cap + lat)   # the overhead overlaps the latency
    assert r.resource_busy_s["gpu0.send"] == pytest.approx(3 * wire * B)
    # window 2: the third waits for the first to arrive
    assert r.end[2] == pytest.approx(max(2 * step, wire * cap + lat) + step)
    with pytest.raises(CollsimError, match="no costs for protocol 'LL128'"):
        simulate(s, topo, protocol="LL128")


def test_lanes_let_a_tree_reduce_and_broadcast_at_once():
    # two lanes of one channel are two engines: rank 0's copy on lane 1 does not wait for its reduce on lane 0
    wait = Schedule.from_steps(3, 30, [[(0, 1, 0, 10, "reduce", 0, 0), (0, 2, 10, 10, "copy", 0, 0)]], itemsize=1)
    w = 10 * B
    slow = Link(A, B)
    topo = Topology(1, 3, slow, slow, links_per_pair=1)          # pair links: no shared send port
    np.testing.assert_allclose(simulate(wait, topo).start, [0, w])
    apart = Schedule.from_steps(3, 30, [[(0, 1, 0, 10, "reduce", 0, 0), (0, 2, 10, 10, "copy", 0, 1)]], itemsize=1)
    np.testing.assert_allclose(simulate(apart, topo).start, [0, 0])
    assert apart.to_dict()["steps"][0][1]["lane"] == 1 and "lane" not in apart.to_dict()["steps"][0][0]
    assert np.array_equal(Schedule.from_dict(apart.to_dict()).lane, [0, 1])


def test_lanes_of_a_channel_share_its_rate_and_the_receiver_pays_the_last_step():
    # one channel moves 10 bytes per 10 B seconds by itself: its reduce-up and broadcast-down lanes share that
    # rate (NCCL's tree splits one block's warps), two channels do not; fill delays the data's use, and the
    # receiver's step cost ends the run after the last arrival
    cap = 4 * B
    proto = ProtocolCosts("LL", 1.0, 0, PathCosts(A, 1e-7, cap, 0.0, 0.5), PathCosts(A), None)
    topo = Topology(1, 3, Link(0.0, B), Link(0.0, B), links_per_pair=1, protocols=(proto,))
    one = Schedule.from_steps(3, 20, [[(0, 1, 0, 10, "reduce", 0, 0), (0, 2, 10, 10, "copy", 0, 1)]], itemsize=1)
    two = Schedule.from_steps(3, 20, [[(0, 1, 0, 10, "reduce", 0, 0), (0, 2, 10, 10, "copy", 1, 1)]], itemsize=1)
    r1, r2 = simulate(one, topo, protocol="LL"), simulate(two, topo, protocol="LL")
    alone = 10 * cap
    np.testing.assert_allclose(r2.arrive, [alone + A + 0.5 * alone] * 2)
    np.testing.assert_allclose(r1.arrive, [2 * alone + A + 0.5 * alone] * 2)
    assert r1.time_s == pytest.approx(2 * alone + A + 0.5 * alone + 1e-7)


def test_a_transfer_of_pipelined_steps_fills_its_last_step_only():
    # fill_bytes 4: a 10-byte transfer stands for steps of 4 bytes; the receiver takes in the last one after
    # the sender is done (NCCL's p2p send: one step of its chunk at a time), a 2-byte one all of its bytes
    cap = 4 * B
    proto = ProtocolCosts("LL", 1.0, 0, PathCosts(A, 0.0, cap, 0.0, 0.5, fill_bytes=4), PathCosts(A), None)
    topo = Topology(1, 3, Link(0.0, B), Link(0.0, B), links_per_pair=1, protocols=(proto,))
    s = Schedule.from_steps(3, 12, [[(0, 1, 0, 10, "copy", 0, 0), (0, 2, 10, 2, "copy", 1, 0)]], itemsize=1)
    r = simulate(s, topo, protocol="LL")
    np.testing.assert_allclose(r.arrive, [10 * cap + A + 0.5 * 4 * cap, 2 * cap + A + 0.5 * 2 * cap])
    with pytest.raises(CollsimError, match="fill_bytes"):
        PathCosts(A, fill_bytes=-1.0)


def test_shared_nic_contention_depends_on_nics_per_node():
    # 2 nodes x 4 GPUs: every GPU of node 0 sends to its peer on node 1 at once
    steps = [[(g, 4 + g, 0, 1000, "copy") for g in range(4)]]
    s = sched(8, 1000, steps)
    intra, inter = Link(1e-7, 1e-10), Link(5e-6, 1e-9)
    w = 1000 * 1e-9                                            # a NIC is held for the bytes only
    one = simulate(s, Topology(2, 4, intra, inter, nics_per_node=1))
    assert one.time_s == pytest.approx(4 * w + 5e-6)
    np.testing.assert_allclose(one.end, [4 * w] * 4)
    assert one.resource_bytes["node0.nic0.out"] == 4000 and one.resource_bytes["node1.nic0.in"] == 4000
    assert "gpu0.send" not in {x["name"] for x in one.resource_table()}   # NIC traffic skips NVLink ports
    two = simulate(s, Topology(2, 4, intra, inter, nics_per_node=2))
    np.testing.assert_allclose(two.end, [2 * w] * 4)           # GPU g uses NIC g x 2 // 4
    four = simulate(s, Topology(2, 4, intra, inter, nics_per_node=4))
    assert four.time_s == pytest.approx(w + 5e-6)
    # intra-node transfers take no NIC and use the intra link
    r = simulate(sched(8, 10, [[(0, 1, 0, 10, "copy"), (2, 3, 0, 10, "copy")]]), Topology(2, 4, intra, inter))
    assert r.time_s == pytest.approx(1e-7 + 10 * 1e-10)


def test_the_proxy_posts_every_network_transfer_of_its_gpu():
    # 2 nodes x 1 GPU, four channels at once: each network send needs 1 us of each side's proxy
    proxy = ProtocolCosts("LL", 1.0, 0, PathCosts(A), PathCosts(A, proxy=1e-6))
    topo = Topology(2, 1, Link(A, B), Link(A, B), protocols=(proxy,))
    s = sched(2, 40, [[(0, 1, 10 * c, 10, "copy", c) for c in range(4)]])
    r = simulate(s, topo, protocol="LL")
    np.testing.assert_allclose(r.end, [4e-6] * 4)              # the shared proxy, not the 40 ns of bytes, binds
    assert simulate(s, topo).time_s == pytest.approx(4 * 10 * B + A)   # without the protocol: no proxy


def test_gamma_costs_reduces_only():
    s = sched(2, 100, [[(0, 1, 0, 100, "reduce")], [(1, 0, 0, 100, "copy")]], itemsize=4)
    g = 3e-10
    r = simulate(s, uni(2), gamma=g)
    np.testing.assert_allclose(r.duration, [400 * (B + g), 400 * B])   # the engine adds after the bytes
    with pytest.raises(CollsimError, match="gamma"):
        simulate(s, uni(2), gamma=-1.0)


def test_zero_count_and_empty_schedules():
    b = ScheduleBuilder(4, 0)
    b.add_step([0, 1], [1, 2], 0, 0, REDUCE)
    r = simulate(b.build(), uni(4))
    assert r.time_s == 0.0 and len(r.start) == 0
    assert simulate_times([b.build()], uni(4)).tolist() == [0.0]
    # an explicit zero-length transfer costs latency and reads nothing
    s = Schedule(2, 4, 1, [0, 0], [1, 1], [0, 0], [4, 0], [COPY, COPY], [0, 1, 2])
    np.testing.assert_allclose(simulate(s, uni(2)).start, [0, 4 * B])


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
    assert np.array_equal(a.start, b.start) and np.array_equal(a.arrive, b.arrive)


def test_too_few_gpus_and_bad_ranges():
    s = sched(4, 10, [[(0, 3, 0, 10, "copy")]])
    with pytest.raises(CollsimError, match="4 ranks"):
        simulate(s, uni(2))
    bad = Schedule(2, 4, 1, [0], [1], [2], [4], [COPY], [0, 1])
    with pytest.raises(CollsimError, match="outside its buffer"):
        simulate(bad, uni(2))


def test_the_networks_switch_is_reached_over_each_gpus_nic_and_adds_sharps_latency():
    # GPU 1 (node 0) and GPU 2 (node 1) reduce into the network's switch (endpoint 4), then GPU 0 takes the sum
    from dataclasses import replace

    from collsim.simulate.resources import INTER
    topo = Topology(2, 2, Link(1e-6, 1e-10), Link(4e-6, 1e-9), 2, sharp_us=3.0)
    s = Schedule.from_steps(4, 1000, [[(1, 4, 0, 1000), (2, 4, 0, 1000)], [(4, 0, 0, 1000, "copy")]], itemsize=1,
                            network=1)
    r = simulate(s, topo)
    assert list(r.routes.link) == [INTER] * 3
    assert {k: v for k, v in r.resource_bytes.items() if v} == {"node0.nic1.out": 1000, "node1.nic0.out": 1000,
                                                                 "node0.nic0.in": 1000}
    # each reduce: its NIC's 1 us, 4 us of latency, 3 us of SHARP (side by side: the switch has no port or proxy
    # of its own); the copy: 1 us on GPU 0's NIC in, 4 us
    np.testing.assert_allclose(r.arrive, [8e-6, 8e-6, 13e-6], rtol=1e-12)
    np.testing.assert_array_equal(r.arrive, reference(s, topo)[2])
    with pytest.raises(CollsimError, match="need switches that reduce") as e:
        simulate(s, replace(topo, sharp_us=None))
    assert "\n" not in str(e.value)


@st.composite
def random_case(draw):
    nodes, gpn = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    nics = draw(st.integers(1, gpn))
    board = draw(st.sampled_from(["switch", "nvls", "direct"]))
    net = draw(st.booleans())                   # the network's reducing switch (SHARP): endpoint P + switches
    P = nodes * gpn
    switches = nodes if board == "nvls" else 0
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
            elif net and draw(st.booleans()):                # a GPU of any node and the network's switch
                if draw(st.booleans()):
                    dst = P + switches
                else:
                    src = P + switches
            off = draw(st.integers(0, count - 1))
            ln = draw(st.integers(1, count - off))
            step.append((src, dst, off, ln, draw(st.sampled_from(["reduce", "copy"])),
                         draw(st.integers(0, channels - 1)), draw(st.integers(0, 2))))
        steps.append(step)
    protos = ()
    if draw(st.booleans()):                    # an NCCL-like protocol: overheads, channel caps, a window
        costs = [PathCosts(draw(st.sampled_from([0.0, 1e-6, 2e-6])), draw(st.sampled_from([0.0, 3e-7])),
                           draw(st.sampled_from([0.0, 2e-9, 8e-9])), draw(st.sampled_from([0.0, 5e-7])),
                           draw(st.sampled_from([0.0, 0.5])))
                 for _ in range(3)]
        protos = (ProtocolCosts("LL", draw(st.sampled_from([0.5, 1.0])), draw(st.integers(0, 3)), *costs),)
    fabric = []
    if nodes > 1 and draw(st.booleans()):      # switches above the NICs: leaf groups, rails, a pod tier
        leaf = draw(st.integers(1, 2))
        fabric.append(Tier(leaf, draw(st.sampled_from([p for p in (1, 2, 4) if nics % p == 0])),
                           draw(st.sampled_from([1.0, 2.0, 8.0])), "leaf"))
        if draw(st.booleans()):
            fabric.append(Tier(2 * leaf, 1, fabric[0].oversubscription * 2, "pod"))
    topo = Topology(nodes, gpn, Link(draw(st.sampled_from([0.0, 1e-6])), 1e-9), Link(3e-6, 4e-9), nics,
                    nvls=Link(5e-7, 2e-9) if board == "nvls" else None, links_per_pair=2 * (board == "direct"),
                    protocols=protos, sharp_us=draw(st.sampled_from([0.0, 2.0])) if net else None,
                    fabric=tuple(fabric),
                    slow_nics=tuple((n, draw(st.sampled_from([1.5, 4.0]))) for n in range(nodes * nics)
                                    if nodes > 1 and draw(st.integers(0, 3)) == 0))     # degraded NICs
    s = Schedule.from_steps(P, count, steps, itemsize=draw(st.sampled_from([1, 4])), switches=switches,
                            network=int(net))
    return s, topo, "LL" if protos else None


@settings(max_examples=200, deadline=None)
@given(random_case(), st.sampled_from([0.0, 2e-10]), st.sampled_from(["fair", "schedule"]))
def test_matches_reference_on_random_schedules(case, gamma, policy):
    # schedule order: the same operations, to the last bit; fair shares: the engine's virtual clock, to 1e-9
    s, topo, protocol = case
    r = simulate(s, topo, gamma, protocol=protocol, policy=policy)
    start, end, arrive = reference(s, topo, gamma, protocol, policy)
    if policy == "schedule":
        assert np.array_equal(r.start, start) and np.array_equal(r.end, end) and np.array_equal(r.arrive, arrive)
    else:
        for got, want in ((r.start, start), (r.end, end), (r.arrive, arrive)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-18)


@pytest.mark.parametrize("name", ["ring", "double-tree", "halving-doubling", "recursive-doubling", "direct"])
def test_algorithms_match_reference(name):
    from collsim.algorithms import build_schedule
    s = build_schedule(name, 6, 60, channels=2)
    topo = Topology(2, 3, Link(1e-6, 1e-10), Link(4e-6, 1e-9), 1)
    for policy in ("fair", "schedule"):
        r = simulate(s, topo, 1e-11, policy=policy)
        np.testing.assert_allclose(r.arrive, reference(s, topo, 1e-11, policy=policy)[2], rtol=1e-9)


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
    np.testing.assert_allclose(r.end[:2], [40 * 2e-9] * 2)
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
