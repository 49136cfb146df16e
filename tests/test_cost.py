"""collsim.cost: closed forms vs textbook values and vs the event simulation (exact forms and stated bounds)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, REGISTRY, build_schedule
from collsim.cost import FORMULAS, closed_form, granularity
from collsim.errors import CollsimError
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate

A, B, G = 5e-6, 1e-11, 3e-12          # s, s/byte, s/byte: latency-bound at these sizes
AF, BF = 2e-8, 1e-10                  # a fast link: bandwidth-bound (channels hide the alphas)
AI, BI = 2e-5, 8e-11                  # inter-node link
TREES = ["double-tree", "binary-tree", "nccl-tree"]


def divisors(p):
    return [g for g in range(1, p + 1) if p % g == 0]


def params(name, p, rng, channels=1, whole=False):
    """Random parameters of ``name`` on p ranks; "hierarchical-tree" is hierarchical with inter="tree";
    ``whole``: one slice and one chunk (where a form is exact)."""
    if whole:
        kw = params(name, p, rng, channels)
        return {k: (1 if k in ("slices", "chunks") else v) for k, v in kw.items()}
    if name == "hierarchical-tree":
        return {**params("hierarchical", p, rng, channels), "inter": "tree", "chunks": int(rng.integers(1, 4))}
    kw = {"channels": channels}
    if name.startswith("hierarchical") or name == "nccl-tree":
        kw["gpus_per_node"] = int(rng.choice(divisors(p)))
    if name == "ring":
        kw["slices"] = int(rng.integers(1, 3))
        if rng.integers(2):
            kw["gpus_per_node"] = int(rng.choice(divisors(p)))     # rail rings: still exact on one switch
    if name in TREES + ["nvls"]:
        kw["chunks"] = int(rng.integers(1, 5))
    return kw


def sim_and_form(name, p, count, gamma, kw, a=A, b=B, nbytes=None, two_level=None, policy=None):
    """(simulated, closed-form) seconds; hierarchical ones on nodes x G with a NIC per GPU and their own
    inter-node link (nccl-tree only if two_level), nvls with an nvls link equal to the others; simulated
    under ``policy`` (default ``POLICY``)."""
    name = "hierarchical" if name == "hierarchical-tree" else name
    s = build_schedule(name, p, count, itemsize=4, **kw)
    nbytes = count * 4 if nbytes is None else nbytes
    two_level = name == "hierarchical" if two_level is None else two_level
    if two_level:
        g = kw["gpus_per_node"]
        topo = Topology(p // g, g, Link(a, b), Link(AI, BI), nics_per_node=g)
        form = closed_form(name, p, nbytes, a, b, gamma, alpha_inter=AI, beta_inter=BI, **kw)
    else:
        topo = Topology(1, p, Link(a, b), Link(a, b), nvls=Link(a, b) if name == "nvls" else None)
        form = closed_form(name, p, nbytes, a, b, gamma, **kw)
    return simulate(s, topo, gamma, policy=policy or POLICY).time_s, form


def count_for(name, p, kw, mult):
    return granularity("hierarchical" if name == "hierarchical-tree" else name, p, **kw) * mult


def test_textbook_values():
    n = 1 << 30
    assert closed_form("ring", 8, n, A, B) == pytest.approx(2 * 7 * A + 2 * 7 / 8 * n * B, rel=1e-15)
    assert closed_form("ring", 8, n, A, B, G) == pytest.approx(14 * A + 14 / 8 * n * B + 7 / 8 * n * G)
    assert closed_form("ring", 8, n, A, B, slices=4) == pytest.approx(14 * 4 * A + 14 / 8 * n * B)
    assert closed_form("recursive-doubling", 16, n, A, B, G) == pytest.approx(4 * (A + n * B + n * G))
    assert closed_form("halving-doubling", 16, n, A, B, G) == pytest.approx(
        2 * 4 * A + 2 * 15 / 16 * n * B + 15 / 16 * n * G)
    # non-power of two: fold in and out (two whole-buffer steps, one of them reducing)
    assert closed_form("halving-doubling", 12, n, A, B, G) == pytest.approx(
        6 * A + 2 * 7 / 8 * n * B + 7 / 8 * n * G + 2 * A + 2 * n * B + n * G)
    assert closed_form("direct", 5, n, A, B, G) == pytest.approx(4 * (A + n * B + n * G))
    h = closed_form("hierarchical", 32, n, A, B, G, gpus_per_node=8, alpha_inter=AI, beta_inter=BI)
    assert h == pytest.approx(14 * A + 14 / 8 * n * B + 7 / 8 * n * G
                              + 6 * AI + 6 / 4 * (n / 8) * BI + 3 / 4 * (n / 8) * G)
    assert closed_form("ring", 1, n, A, B) == 0.0 and closed_form("double-tree", 8, 0, A, B) == 0.0


def test_ring_with_channels_in_the_papers_terms():
    # K steps of g = m beta on one port, v = (C-1) g - a: bandwidth-bound (v > 0) the alphas but one hide,
    # T = (K+1) a + K g + K v = a + K C g; latency-bound (v <= 0) T = (K+1) a + K g + v = K (a + g) + (C-1) g
    p, c, k = 8, 16, 14
    for a, nbytes in ((1e-6, 1 << 30), (5e-6, 1 << 16)):
        g = nbytes / (p * c) * B
        v = (c - 1) * g - a
        want = (k + 1) * a + k * g + (k * v if v > 0 else v)
        assert closed_form("ring", p, nbytes, a, B, channels=c) == pytest.approx(want, rel=1e-12)
        assert simulate(build_schedule("ring", p, nbytes // 4, channels=c), Topology.uniform(p, a, B),
                        policy="schedule").time_s == pytest.approx(want, rel=1e-12)


# exact with one slice or chunk: the simulation overlaps a message's latency with the next one's bytes on the
# same channel, which the forms (every step alpha + m beta) do not; the others are upper bounds
EXACT = ["ring", "halving-doubling", "hierarchical"]
BOUNDS = ["recursive-doubling", "direct", "hierarchical-tree", "nvls"] + TREES
# the forms follow every port in schedule order; the default policy (who asks first) is tested against them below
POLICY = "schedule"


@pytest.mark.parametrize("name", EXACT)
def test_closed_form_equals_simulation_with_one_channel(name):
    rng = np.random.default_rng(len(name))
    for p in range(1, 65):
        kw = params(name, p, rng, whole=True)
        for gamma in (0.0, G):
            t, form = sim_and_form(name, p, count_for(name, p, kw, int(rng.integers(1, 4)) * 7), gamma, kw)
            assert t == pytest.approx(form, rel=1e-12, abs=1e-18), (name, p, kw, gamma)


@pytest.mark.parametrize("name", ["ring"])
@pytest.mark.parametrize("link", [(A, B), (AF, BF)])
def test_closed_form_equals_simulation_with_channels(name, link):
    rng = np.random.default_rng(7)
    ps = [1, 2, 3, 5, 8, 12, 16, 24, 32]
    for p in ps:
        for channels in (2, 3, 8, 16):
            kw = params(name, p, rng, channels, whole=True)
            for gamma in (0.0, G):
                t, form = sim_and_form(name, p, count_for(name, p, kw, 3 * 7), gamma, kw, *link)
                assert t == pytest.approx(form, rel=1e-12, abs=1e-18), (name, p, kw, gamma)


@pytest.mark.parametrize("name", EXACT + BOUNDS)
@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 24), channels=st.sampled_from([1, 2, 3, 8]), fast=st.booleans(), seed=st.integers(0, 99))
def test_stated_bounds_hold(name, p, channels, fast, seed):
    """Where a form is an upper bound (Algorithm.exact), the simulation never exceeds it; and it is no
    faster than its busiest port's bytes nor than one channel's own steps."""
    rng = np.random.default_rng(seed)
    kw = params(name, p, rng, channels)
    if name == "hierarchical":
        kw["slices"] = int(rng.integers(1, 4))
    a, b = (AF, BF) if fast else (A, B)
    count = count_for(name, p, kw, 7)
    t, form = sim_and_form(name, p, count, G, kw, a, b)
    assert t <= form * (1 + (0.03 if name == "nvls" else 1e-12))    # nvls: Algorithm.exact
    r = simulate(build_schedule("hierarchical" if name == "hierarchical-tree" else name, p, count, **kw),
                 Topology(1, p, Link(a, b), Link(a, b), nvls=Link(a, b)))
    assert r.time_s >= max(r.resource_busy_s.values(), default=0.0) * (1 - 1e-12)


@pytest.mark.parametrize("name", ["ring", "halving-doubling", "recursive-doubling", "direct", "hierarchical",
                                  "hierarchical-tree"])
@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 24), channels=st.sampled_from([1, 2, 3, 8]), fast=st.booleans(), seed=st.integers(0, 99))
def test_fair_policy_statements_hold(name, p, channels, fast, seed):
    """Algorithm.exact on the default policy "fair": never above the form with one channel and one slice (the
    channels, and hierarchical's slices, share every port and pay their latencies together); on one channel as
    under "schedule" (hierarchical: with one slice and inter ring); where the form is exact under "schedule"
    with slices 1, C channels never below it."""
    rng = np.random.default_rng(seed)
    kw = params(name, p, rng, channels)
    if name.startswith("hierarchical"):
        kw["slices"] = int(rng.integers(1, 4))
    a, b = (AF, BF) if fast else (A, B)
    count = count_for(name, p, kw, 7)
    fair, form = sim_and_form(name, p, count, G, kw, a, b, policy="fair")
    one = {**kw, "channels": 1, **({"slices": 1} if "slices" in kw else {})}
    assert fair <= sim_and_form(name, p, count, G, one, a, b)[1] * (1 + 1e-12)
    if channels == 1 and (not name.startswith("hierarchical") or (name == "hierarchical" and kw["slices"] == 1)):
        assert fair == pytest.approx(sim_and_form(name, p, count, G, kw, a, b)[0], rel=1e-12, abs=1e-18)
    if name in EXACT and kw.get("slices", 1) == 1:
        assert fair >= form * (1 - 1e-12)


def test_tree_forms_bound_nothing_under_fair_sharing():
    """Algorithm.exact of the trees: under "schedule" an upper bound; under "fair" the double tree of 8 MiB on 15
    ranks is above its form with one chunk (its reduce and broadcast share ports) and below it with 8."""
    uni = Topology.uniform(15, A, B)
    above = []
    for k in (1, 8):
        s = build_schedule("double-tree", 15, (8 << 20) // 4, chunks=k)
        form = closed_form("double-tree", 15, 8 << 20, A, B, chunks=k)
        assert simulate(s, uni, policy="schedule").time_s <= form
        above.append(simulate(s, uni).time_s > form)
    assert above == [True, False]


@pytest.mark.parametrize("name", EXACT + BOUNDS)
@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 40), count=st.integers(0, 5000), seed=st.integers(0, 99), whole=st.booleans())
def test_other_counts_padded_form_is_an_upper_bound(name, p, count, seed, whole):
    kw = params(name, p, np.random.default_rng(seed), whole=whole)
    gr = count_for(name, p, kw, 1)
    padded = -(-count // gr) * gr
    t, form = sim_and_form(name, p, count, G, kw, nbytes=padded * 4)
    assert t <= form * (1 + (0.03 if name == "nvls" else 1e-12))
    if name in EXACT and whole and count % gr == 0:
        assert t == pytest.approx(form, rel=1e-12, abs=1e-18)


def test_hierarchical_nccl_on_two_link_classes_is_bounded_by_its_step_sum():
    rng = np.random.default_rng(3)
    for p in list(range(1, 20)) + [32, 33, 64]:
        kw = params("nccl-tree", p, rng, int(rng.choice([1, 2, 4])))
        count = count_for("nccl-tree", p, kw, 5)
        for gamma in (0.0, G):
            t, form = sim_and_form("nccl-tree", p, count, gamma, kw, two_level=True)
            assert 0.3 * form <= t <= form * (1 + 1e-12), (p, kw)


def test_two_rank_binary_tree_pipeline():
    # P = 2, 4 chunks: rank 1 reduces them into rank 0 back to back, which sends each back once it has arrived
    t, form = sim_and_form("binary-tree", 2, 4 * 100, G, {"chunks": 4})
    m = 100 * 4
    assert form == pytest.approx(4 * (A + m * B + m * G) + 4 * (A + m * B), rel=1e-12)
    # each chunk goes back as soon as it is reduced, behind the reduce of the next: the last chunk's reduce and
    # copy end the run, two latencies, not eight
    assert t == pytest.approx(4 * m * (B + G) + A + m * B + A, rel=1e-12)


def test_vectorized_over_sizes_equals_scalar_calls():
    sizes = np.unique(np.r_[0, 8 * 2 ** np.arange(0, 34), 12345]).astype(np.int64)
    for name, algo in ALGORITHMS.items():
        if algo.closed_form is None:
            continue
        kw = {"gpus_per_node": 4} if "gpus_per_node" in algo.needs else {}
        vec = closed_form(name, 16, sizes, A, B, G, channels=2, **kw)
        one = [closed_form(name, 16, int(n), A, B, G, channels=2, **kw) for n in sizes]
        assert isinstance(one[0], float) and vec.shape == sizes.shape
        assert np.allclose(vec, one, rtol=1e-14, atol=0)
        assert np.all(np.diff(vec[1:]) > 0)                  # more bytes take longer
    # default chunks follow the size exactly as build_schedule chooses them
    s = build_schedule("double-tree", 8, 1 << 22, itemsize=1)
    t = simulate(s, Topology.uniform(8, A, B)).time_s
    assert 0.5 < t / closed_form("double-tree", 8, 1 << 22, A, B) <= 1 + 1e-12


def test_formulas_documented_for_every_algorithm():
    assert set(FORMULAS) == set(ALGORITHMS)
    assert closed_form.__doc__ and "beta" in closed_form.__doc__
    assert all(REGISTRY[n].formula and REGISTRY[n].exact for n in ALGORITHMS)
    with pytest.raises(CollsimError, match="nvlstree has no closed form"):
        closed_form("nvlstree", 16, 100, A, B, gpus_per_node=8)


@pytest.mark.parametrize("args, kw, words", [
    (("nope", 4, 100, A, B), {}, "unknown algorithm"),
    (("ring", 0, 100, A, B), {}, "ranks must be >= 1"),
    (("ring", 4, -1, A, B), {}, "nbytes"),
    (("ring", 4, 100, -A, B), {}, "alpha"),
    (("ring", 4, 100, A, math.nan), {}, "beta"),
    (("ring", 4, 100, A, B), {"alpha_inter": 1e-5}, "alpha_inter"),
    (("ring", 4, 100, A, B), {"alpha_nvls": 1e-5}, "alpha_nvls"),
    (("ring", 4, 100, A, B), {"channels": 0}, "channels must be >= 1"),
    (("hierarchical", 6, 100, A, B), {"gpus_per_node": 4}, "does not divide"),
])
def test_bad_input(args, kw, words):
    with pytest.raises(CollsimError) as e:
        closed_form(*args, **kw)
    assert words in str(e.value)


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=15, deadline=None)
@given(p=st.integers(1, 300), mult=st.integers(1, 3), seed=st.integers(0, 99))
def test_equality_for_random_rank_counts_up_to_300(name, p, mult, seed):
    kw = params(name, p, np.random.default_rng(seed), whole=True)
    t, form = sim_and_form(name, p, count_for(name, p, kw, mult), G, kw)
    assert t == pytest.approx(form, rel=1e-12, abs=1e-18)


@pytest.mark.parametrize("preset,nodes", [("ib-400g", 2), ("ib-400g", 4), ("ib-100g", 4), ("eth-100g", 4)])
def test_rail_ring_approximates_the_simulated_rail_rings(preset, nodes):
    """``rail_ring`` against the event simulation of NCCL's rail rings on 2G channels: within 20% from
    64 KiB to 1 GiB (the bandwidth bound from 256 MiB: the NVLink port or the node's NICs)."""
    from collsim.algorithms import build_schedule
    from collsim.cost import rail_ring
    from collsim.machine.presets import get_preset
    from collsim.simulate import simulate

    topo = get_preset(preset, nodes=nodes)
    g, P = topo.gpus_per_node, topo.ranks
    for size in (1 << 16, 1 << 20, 1 << 24, 1 << 28, 1 << 30):
        sim = simulate(build_schedule("ring", P, size // 4, channels=2 * g, gpus_per_node=g), topo).time_s
        sim -= topo.call_us * 1e-6
        model = rail_ring(P, size, g, topo.nics_per_node, topo.intra.alpha, topo.intra.beta,
                          topo.inter.alpha, topo.inter.beta)
        assert model == pytest.approx(sim, rel=0.2), (size, model, sim)
    one = rail_ring(8, 1 << 20, 8, 8, 2e-6, 1e-11, 9e-6, 1e-10)         # one node: the plain ring
    assert one == pytest.approx(closed_form("ring", 8, 1 << 20, 2e-6, 1e-11, channels=16))
    with pytest.raises(CollsimError):
        rail_ring(12, 1 << 20, 8, 8, 2e-6, 1e-11, 9e-6, 1e-10)
