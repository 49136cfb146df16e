"""collsim.cost: closed forms vs textbook values and vs the event simulation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, build_schedule
from collsim.cost import FORMULAS, closed_form, granularity
from collsim.errors import CollsimError
from collsim.simulate import simulate
from collsim.simulate.topology import Link, Topology

A, B, G = 5e-6, 1e-11, 3e-12          # s, s/byte, s/byte
AI, BI = 2e-5, 8e-11                  # inter-node link
TREES = ["tree", "binary-tree", "hierarchical-nccl"]
EXACT = ["ring", "recursive-doubling", "halving-doubling", "direct", "hierarchical",
         "hierarchical-tree"] + TREES


def params(name, p, rng):
    if name == "hierarchical-tree":
        return {**params("hierarchical", p, rng), "inter": "tree", "chunks": int(rng.integers(1, 4))}
    kw = {}
    if name.startswith("hierarchical"):
        kw["gpus_per_node"] = int(rng.choice([g for g in range(1, p + 1) if p % g == 0]))
    if name in ("ring", "hierarchical"):
        kw["slices"] = int(rng.integers(1, 3))
    if name in TREES:
        kw["chunks"] = int(rng.integers(1, 5))
    return kw


def sim_and_form(name, p, count, gamma, kw, itemsize=4, nbytes=None, two_level=None):
    """(simulated, closed-form) seconds; hierarchical ones on nodes x G with their own inter-node
    link (hierarchical-nccl only if two_level, else on the uniform topology)."""
    name = "hierarchical" if name == "hierarchical-tree" else name
    s = build_schedule(name, p, count, itemsize=itemsize, **kw)
    nbytes = count * itemsize if nbytes is None else nbytes
    if two_level is None:
        two_level = name == "hierarchical"
    if two_level:
        g = kw["gpus_per_node"]
        topo = Topology(p // g, g, Link(A, B), Link(AI, BI), nics_per_node=g)
        form = closed_form(name, p, nbytes, A, B, gamma, alpha_inter=AI, beta_inter=BI, **kw)
    else:
        form = closed_form(name, p, nbytes, A, B, gamma, **kw)
        topo = Topology.uniform(p, A, B)
    return simulate(s, topo, gamma).time_s, form


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
    assert closed_form("ring", 1, n, A, B) == 0.0 and closed_form("tree", 8, 0, A, B) == 0.0


@pytest.mark.parametrize("name", EXACT)
def test_closed_form_equals_simulation_on_uniform_topologies(name):
    rng = np.random.default_rng(len(name))
    for p in range(1, 65):
        kw = params(name, p, rng)
        for gamma in (0.0, G):
            algo = "hierarchical" if name == "hierarchical-tree" else name
            count = granularity(algo, p, **kw) * int(rng.integers(1, 4)) * 7
            t, form = sim_and_form(name, p, count, gamma, kw)
            assert t == pytest.approx(form, rel=1e-12, abs=1e-18), (name, p, kw, gamma)


@pytest.mark.parametrize("name", EXACT)
@settings(max_examples=25, deadline=None)
@given(p=st.integers(1, 40), count=st.integers(0, 5000), seed=st.integers(0, 99))
def test_other_counts_padded_form_is_an_upper_bound(name, p, count, seed):
    kw = params(name, p, np.random.default_rng(seed))
    gr = granularity("hierarchical" if name == "hierarchical-tree" else name, p, **kw)
    padded = -(-count // gr) * gr
    t, form = sim_and_form(name, p, count, G, kw, nbytes=padded * 4)
    assert t <= form * (1 + 1e-12)
    if name in ("direct", "recursive-doubling") or count % gr == 0:
        assert t == pytest.approx(form, rel=1e-12, abs=1e-18)


def test_hierarchical_nccl_on_two_link_classes_is_bounded_by_its_step_sum():
    rng = np.random.default_rng(3)
    for p in list(range(1, 20)) + [32, 33, 64]:
        kw = params("hierarchical-nccl", p, rng)
        count = granularity("hierarchical-nccl", p, **kw) * 5
        for gamma in (0.0, G):
            t, form = sim_and_form("hierarchical-nccl", p, count, gamma, kw, two_level=True)
            assert 0.5 * form <= t <= form * (1 + 1e-12), (p, kw)


def test_two_rank_binary_tree_pipeline():
    # P = 2, C chunks: C reduce steps (rank 1 -> 0), then C broadcast steps (0 -> 1)
    t, form = sim_and_form("binary-tree", 2, 4 * 100, G, {"chunks": 4})
    m = 100 * 4
    assert form == pytest.approx(4 * (A + m * B + m * G) + 4 * (A + m * B), rel=1e-12)
    assert t == pytest.approx(form, rel=1e-12)


def test_vectorized_over_sizes_equals_scalar_calls():
    sizes = np.unique(np.r_[0, 8 * 2 ** np.arange(0, 34), 12345]).astype(np.int64)
    for name in ALGORITHMS:
        kw = {"gpus_per_node": 4} if name.startswith("hierarchical") else {}
        vec = closed_form(name, 16, sizes, A, B, G, **kw)
        one = [closed_form(name, 16, int(n), A, B, G, **kw) for n in sizes]
        assert isinstance(one[0], float) and vec.shape == sizes.shape
        assert np.allclose(vec, one, rtol=1e-14, atol=0)
        assert np.all(np.diff(vec[1:]) > 0)                  # more bytes take longer
    # default chunks follow the size exactly as build_schedule chooses them
    s = build_schedule("tree", 8, 1 << 22, itemsize=1)
    t = simulate(s, Topology.uniform(8, A, B)).time_s
    assert t == pytest.approx(closed_form("tree", 8, 1 << 22, A, B), rel=1e-12)


def test_formulas_documented_for_every_algorithm():
    assert set(FORMULAS) == set(ALGORITHMS)
    assert closed_form.__doc__ and "beta" in closed_form.__doc__


@pytest.mark.parametrize("args, kw, words", [
    (("nope", 4, 100, A, B), {}, "unknown algorithm"),
    (("ring", 0, 100, A, B), {}, "ranks must be >= 1"),
    (("ring", 4, -1, A, B), {}, "nbytes"),
    (("ring", 4, 100, -A, B), {}, "alpha"),
    (("ring", 4, 100, A, math.nan), {}, "beta"),
    (("ring", 4, 100, A, B), {"alpha_inter": 1e-5}, "alpha_inter"),
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
    if name == "direct":
        p = 1 + p % 64
    kw = params(name, p, np.random.default_rng(seed))
    count = granularity("hierarchical" if name == "hierarchical-tree" else name, p, **kw) * mult
    t, form = sim_and_form(name, p, count, G, kw)
    assert t == pytest.approx(form, rel=1e-12, abs=1e-18)
