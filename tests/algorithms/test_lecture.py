"""collsim.algorithms.lecture: the lecture's pseudo-code as it behaves, and where the checker says it goes wrong."""
import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.algorithms.lecture import lecture_ring, lecture_tree
from collsim.core.checker import check
from collsim.core.schedule import Schedule


def run(s, x):
    """Execute a schedule on per-rank data x (ranks x count) with the step semantics."""
    buf = x.copy()
    for step in s.steps:
        reads = [buf[t.src, t.offset:t.offset + t.count].copy() for t in step]
        for t, data in zip(step, reads):
            if t.op == "copy":
                buf[t.dst, t.offset:t.offset + t.count] = data
            else:
                buf[t.dst, t.offset:t.offset + t.count] += data
    return buf


@pytest.mark.parametrize("p", [3, 4, 5, 8, 13])
def test_ring_counts_contributions_twice_after_two_steps(p):
    s = lecture_ring(p, 5)
    r = check(s)
    assert not r.ok and r.step == 1 and "counts the contribution" in r.error and "twice" in r.error
    x = np.random.default_rng(p).integers(0, 1000, size=(p, 5))
    two = Schedule.from_steps(p, 5, s.steps[:2])
    got = run(two, x)
    for rank in range(p):     # after two steps rank r holds x_r + 2 x_{r+1} + x_{r+2}
        assert np.array_equal(got[rank], x[rank] + 2 * x[(rank + 1) % p] + x[(rank + 2) % p])
    # whole buffer every step: 2(P-1) x S bytes per rank, not 2(P-1)/P x S
    assert np.all(r.bytes_sent == 2 * (p - 1) * 5 * 4)


@pytest.mark.parametrize("p", [1, 2])
def test_ring_is_right_for_one_or_two_ranks(p):
    assert check(lecture_ring(p, 7)).ok


@pytest.mark.parametrize("p", [3, 4, 6, 7, 16])
def test_tree_is_wrong_unless_two_ranks(p):
    s = lecture_tree(p, 4)
    r = check(s)
    assert not r.ok and r.step == 1 and "copy of a partial sum" in r.error
    x = np.random.default_rng(p).integers(0, 1000, size=(p, 4))
    got = run(s, x)
    assert np.array_equal(got[0], x[0] + x[p // 2])          # rank 0 ends with x_0 + x_{P/2} only
    assert s.n_steps == p                                    # P - 1 sequential sends from the root
    assert r.bytes_sent[0] == p * 4 * 4                      # root sends the buffer P times


def test_tree_is_right_for_two_ranks():
    assert check(lecture_tree(2, 9)).ok and check(lecture_tree(1, 9)).ok


@pytest.mark.parametrize("ranks,g", [(2, 1), (4, 4), (6, 2), (8, 4), (12, 4), (32, 8)])
def test_lecture_hierarchical_is_an_allreduce(ranks, g):
    s = build_schedule("lecture-hierarchical", ranks, 50, gpus_per_node=g)
    assert check(s).ok


def test_lecture_hierarchical_puts_every_inter_node_byte_on_one_nic_per_node():
    """On 4 nodes x 8 GPUs with a NIC per GPU: the lecture's version loads GPU 0's NIC with G times what
    the hierarchical schedule puts on each of the 8 NICs (2(n-1)/n S against 2(n-1)/n S/G)."""
    from collsim.machine.presets import get_preset
    from collsim.simulate import simulate

    ib, S = get_preset("ib-400g"), 1 << 26
    busy = {}
    for name in ("lecture-hierarchical", "hierarchical"):
        res = simulate(build_schedule(name, 32, S // 4, gpus_per_node=8), ib)
        nic = {k: v for k, v in res.resource_busy_s.items() if ".nic" in k}
        busy[name] = (max(nic.values()), sum(v > 0 for v in nic.values()))
    assert busy["lecture-hierarchical"][0] == pytest.approx(8 * busy["hierarchical"][0], rel=1e-6)
    assert busy["lecture-hierarchical"][1] == 8 and busy["hierarchical"][1] == 64     # NIC directions in use
