"""collsim.algorithms: every algorithm is an AllReduce (proved by the checker) for any P and count."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, build_schedule, default_chunks
from collsim.algorithms.tree_pipeline import plan_trees
from collsim.algorithms.tree_shapes import btree_parents, dtree_parents
from collsim.checker import check
from collsim.errors import CollsimError

PRIMES = [2, 3, 5, 7, 11, 13, 97, 101, 1009, 7919]
COUNTS = st.one_of(st.sampled_from([0, 1]), st.sampled_from(PRIMES), st.integers(0, 300),
                   st.integers(10**5, 3 * 10**5))


def divisors(p):
    return [g for g in range(1, p + 1) if p % g == 0]


@st.composite
def case(draw, name):
    p = draw(st.integers(1, 300) if name != "direct" else st.integers(1, 64))
    kw = {}
    if name in ("ring", "hierarchical"):
        kw["slices"] = draw(st.integers(1, 3))
    if name in ("tree", "binary-tree", "hierarchical", "hierarchical-nccl"):
        kw["chunks"] = draw(st.one_of(st.none(), st.integers(1, 6)))
    if name.startswith("hierarchical"):
        kw["gpus_per_node"] = draw(st.sampled_from(divisors(p)))
    if name == "hierarchical":
        kw["inter"] = draw(st.sampled_from(["ring", "tree"]))
    return p, draw(COUNTS), kw


@pytest.mark.parametrize("name", list(ALGORITHMS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_algorithm_is_an_allreduce(name, data):
    p, count, kw = data.draw(case(name))
    s = build_schedule(name, p, count, itemsize=2, **kw)
    r = check(s, seed=count)
    assert r.ok, (name, p, count, kw, r.error)
    assert s.ranks == p and s.count == count and s.itemsize == 2 and s.name == name
    if count == 0 or p == 1:
        assert s.n_transfers == 0


@pytest.mark.parametrize("p", [1, 2, 3, 8, 13, 64])
def test_small_and_prime_cases_exhaustively(p):
    for name in ALGORITHMS:
        for count in (0, 1, p - 1, p, 2 * p + 1):
            kws = [{}]
            if name.startswith("hierarchical"):
                kws = [{"gpus_per_node": g} for g in divisors(p)]
                if name == "hierarchical":
                    kws += [dict(k, inter="tree") for k in kws]
            for kw in kws:
                r = check(build_schedule(name, p, count, **kw))
                assert r.ok, (name, p, count, kw, r.error)


def test_ring_steps_and_traffic_are_textbook():
    p, count = 8, 8 * 1000
    s = build_schedule("ring", p, count, itemsize=4, slices=2)
    r = check(s)
    assert s.n_steps == 2 * (p - 1) * 2
    assert np.all(r.bytes_sent == 2 * (p - 1) * count * 4 // p)
    assert set(r.link_bytes) == {(i, (i + 1) % p) for i in range(p)}


def test_double_tree_sends_each_rank_about_twice_the_buffer():
    p, count = 16, 16 * 64
    r = check(build_schedule("tree", p, count, itemsize=1, chunks=4))
    # leaf in one tree (sends half up), internal in the other (half up + up to 2 halves down)
    assert r.ok and r.bytes_sent.max() <= 2 * count and r.bytes_sent.min() >= count // 2
    assert r.bytes_recv.max() <= 2 * count


def test_btree_matches_nccl_illustration():
    # trees.cc: 0-8; 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13 (13's parent is 12); 2 -> 1, 3 ...
    par = btree_parents(14)
    assert par[0] == -1 and par[8] == 0 and par[4] == 8 and par[12] == 8 and par[13] == 12
    assert par[10] == 12 and par[2] == 4 and par[6] == 4 and list(par[[1, 3, 5, 7, 9, 11]]) == [2, 2, 6, 6, 10, 10]


@pytest.mark.parametrize("n", list(range(1, 40)) + [64, 100, 127, 300])
def test_double_tree_is_two_complementary_trees(n):
    p0, p1 = dtree_parents(n)
    for par in (p0, p1):
        assert (par < 0).sum() == 1
        # every rank reaches the root: a tree
        for v in range(n):
            u, k = v, 0
            while par[u] >= 0 and k <= n:
                u, k = par[u], k + 1
            assert par[u] < 0
    children = np.bincount(np.r_[p0[p0 >= 0], p1[p1 >= 0]], minlength=n)
    assert children.max() <= 2                        # at most two children in both trees together
    leaf0 = np.bincount(p0[p0 >= 0], minlength=n) == 0
    leaf1 = np.bincount(p1[p1 >= 0], minlength=n) == 0
    if n > 2:   # a leaf in at least one tree; for odd n rank 0 (root of tree 0) is the exception
        assert (leaf0 | leaf1)[1:].all() and (leaf0 | leaf1)[0] == (n % 2 == 0)
    assert p1[1 if n % 2 and n > 1 else n - 1] == -1  # NCCL's second root
    plan = plan_trees([p0, p1])
    assert plan.k <= 2


def test_colouring_never_shares_a_port_within_a_step():
    s = build_schedule("hierarchical-nccl", 32, 1000, gpus_per_node=4, chunks=3)
    for k in range(s.n_steps):
        sl = s.step_slice(k)
        assert len(set(s.src[sl])) == len(s.src[sl]) and len(set(s.dst[sl])) == len(s.dst[sl])


def test_default_chunks():
    assert default_chunks("tree", 0) == 1
    assert default_chunks("tree", 1 << 30) == 64
    assert default_chunks("binary-tree", 4 << 16) == 4
    assert build_schedule("tree", 4, 1 << 20).meta["chunks"] == default_chunks("tree", 4 << 20)


@pytest.mark.parametrize("args, kw, words", [
    (("nope", 4, 10), {}, "unknown algorithm"),
    (("ring", 0, 10), {}, "ranks must be >= 1"),
    (("ring", 4, -1), {}, "count must be >= 0"),
    (("ring", 4.5, 10), {}, "ranks must be an integer"),
    (("ring", 4, 10.0), {}, "count must be an integer"),
    (("ring", 4, 10), {"chunks": 2}, "takes no 'chunks'"),
    (("ring", 4, 10), {"slices": 0}, "slices must be >= 1"),
    (("tree", 4, 10), {"chunks": 1.5}, "chunks must be an integer"),
    (("hierarchical", 6, 10), {}, "needs gpus_per_node"),
    (("hierarchical", 6, 10), {"gpus_per_node": 4}, "does not divide"),
    (("hierarchical", 6, 10), {"gpus_per_node": 3, "inter": "mesh"}, "inter must be"),
    (("direct", 4, 10), {"gpus_per_node": 2}, "takes no 'gpus_per_node'"),
    (("ring", True, 10), {}, "must be an integer"),
])
def test_bad_input_is_one_line_error(args, kw, words):
    with pytest.raises(CollsimError) as e:
        build_schedule(*args, **kw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_algorithms_describe_themselves():
    for name, info in ALGORITHMS.items():
        assert info.description and "\n" not in info.description
        assert set(info.params) <= {"slices", "chunks", "gpus_per_node", "inter"}


def test_transfer_bound_bounds_every_schedule_and_guards_huge_ones():
    from collsim.algorithms import MAX_TRANSFERS, transfer_bound, validate
    for name in ALGORITHMS:
        for p in (1, 2, 3, 5, 8, 12, 17, 32):
            gs = [g for g in range(1, p + 1) if p % g == 0] if name.startswith("hierarchical") else [None]
            for g in gs:
                kw = {"gpus_per_node": g} if g else {}
                kw.update({"ring": {"slices": 3}, "hierarchical": {"inter": "tree", "chunks": 3}}.get(name, {}))
                if name in ("tree", "binary-tree", "hierarchical-nccl"):
                    kw["chunks"] = 3
                q = validate(name, p, **kw)
                q.setdefault("chunks", 1)
                assert build_schedule(name, p, 10007, **kw).n_transfers <= transfer_bound(name, p, q)
    with pytest.raises(CollsimError, match="transfers"):
        build_schedule("direct", 1 << 14, 1)
    assert transfer_bound("direct", 1 << 14, {}) > MAX_TRANSFERS
    with pytest.raises(CollsimError, match="too large"):
        build_schedule("ring", 4, 1 << 62)
