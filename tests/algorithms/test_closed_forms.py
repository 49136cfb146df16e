"""The other collectives' closed forms (ring AllGather/ReduceScatter, Broadcast/Reduce chains, PAT,
AlltoAll, SendRecv) vs the event simulation under policy "schedule" on a uniform topology: equal
where the record's ``exact`` says so, the stated upper bound otherwise (rel 1e-9)."""
import numpy as np
import pytest

from collsim.algorithms import BY_COLLECTIVE, build_schedule
from collsim.cost import closed_form, granularity
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate

A, B, G = 5e-6, 1e-11, 3e-12          # latency-bound at these sizes
AF, BF = 2e-8, 1e-10                  # bandwidth-bound
OTHERS = [(c, n) for c in BY_COLLECTIVE if c != "all_reduce" for n in BY_COLLECTIVE[c]]
RANKS = [1, 2, 3, 5, 8, 12, 13, 16, 31]


def sim_and_form(coll, name, p, mult, kw, a, b):
    count = granularity(name, p, coll, **kw) * mult
    s = build_schedule(name, p, count, itemsize=4, collective=coll, **kw)
    sim = simulate(s, Topology(1, p, Link(a, b), Link(a, b)), G, policy="schedule").time_s
    return sim, closed_form(name, p, count * 4, a, b, G, coll, **kw)


def kwargs(coll, name, channels, k):
    """slices (ring halves) or chunks (the others) k."""
    return {"channels": channels, ("slices" if name == "ring" and "slices" in
                                   BY_COLLECTIVE[coll][name].params else "chunks"): k}


def exact(coll, name, p, kw):
    """Where the record's ``exact`` statement says the form equals the simulation."""
    if name == "ring" and coll in ("all_gather", "reduce_scatter"):
        return kw["slices"] == 1
    if coll == "reduce":
        return kw["channels"] == 1
    if name == "pat":
        return p <= 2 and kw["chunks"] == 1 and (coll == "all_gather" or kw["channels"] == 1)
    return True


@pytest.mark.parametrize("coll, name", OTHERS)
@pytest.mark.parametrize("link", [(A, B), (AF, BF)], ids=["slow", "fast"])
def test_form_equals_the_simulation_where_exact_and_bounds_it_elsewhere(coll, name, link):
    for p in RANKS:
        for channels in (1, 2, 3):
            for k in (1, 2, 3):
                kw = kwargs(coll, name, channels, k)
                sim, form = sim_and_form(coll, name, p, 1 + p % 3, kw, *link)
                if exact(coll, name, p, kw):
                    assert form == pytest.approx(sim, rel=1e-9, abs=1e-18), (p, kw)
                else:
                    assert sim <= form * (1 + 1e-9), (p, kw)


@pytest.mark.parametrize("coll", ["all_gather", "reduce_scatter"])
def test_ring_halves_on_rail_rings_are_exact_too(coll):
    for p, g in ((8, 2), (12, 4), (16, 8)):
        sim, form = sim_and_form(coll, "ring", p, 2, {"channels": 3, "gpus_per_node": g}, AF, BF)
        assert form == pytest.approx(sim, rel=1e-9)


def test_textbook_values():
    n, p = 1 << 24, 16
    assert closed_form("ring", p, n, A, B, collective="all_gather") == pytest.approx(
        15 * A + 15 / 16 * n * B, rel=1e-12)
    assert closed_form("ring", p, n, A, B, G, "reduce_scatter") == pytest.approx(
        15 * A + 15 / 16 * n * (B + G), rel=1e-12)
    assert closed_form("ring", p, n, A, B, collective="broadcast", chunks=4) == pytest.approx(
        15 * A + (4 + 14) * n / 4 * B, rel=1e-12)
    assert closed_form("pat", p, n, A, B, collective="all_gather", chunks=1) == pytest.approx(
        4 * A + 15 / 16 * n * B, rel=1e-12)
    assert closed_form("p2p", p, n, A, B, collective="alltoall") == pytest.approx(
        A + 15 / 16 * n * B, rel=1e-12)
    assert closed_form("p2p", p, n, A, B, collective="sendrecv") == pytest.approx(A + n * B, rel=1e-12)
    # AllReduce callers unchanged: the default collective
    assert closed_form("ring", p, n, A, B) == pytest.approx(30 * A + 30 / 16 * n * B, rel=1e-12)


@pytest.mark.parametrize("coll, name", OTHERS)
def test_every_form_answers_at_the_rank_bound_over_many_sizes(coll, name):
    sizes = np.array([0, 1 << 10, 1 << 22, 1 << 34], dtype=np.float64)
    t = closed_form(name, 1 << 20, sizes, A, B, G, coll, channels=4)
    assert t[0] == 0 and np.isfinite(t).all() and (np.diff(t) > 0).all()
    assert BY_COLLECTIVE[coll][name].formula and BY_COLLECTIVE[coll][name].exact
