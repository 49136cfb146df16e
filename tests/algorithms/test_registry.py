"""collsim.algorithms: every algorithm is an AllReduce (proved by the checker) for any P and count."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, REGISTRY, build_schedule
from collsim.algorithms.tree_plan import plan_trees
from collsim.algorithms.tree_shapes import btree_parents, dtree_parents
from collsim.core.checker import check
from collsim.errors import CollsimError

PRIMES = [2, 3, 5, 7, 11, 13, 97, 101, 1009, 7919]
COUNTS = st.one_of(st.sampled_from([0, 1]), st.sampled_from(PRIMES), st.integers(0, 300),
                   st.integers(10**5, 3 * 10**5))


def divisors(p):
    return [g for g in range(1, p + 1) if p % g == 0]


@st.composite
def case(draw, name):
    p = draw(st.integers(1, 64) if name not in ("direct", "nvls", "nvlstree") else st.integers(1, 24))
    kw = {"channels": draw(st.sampled_from([1, 2, 3, 8, 16]))}
    takes = ALGORITHMS[name].params
    if "slices" in takes:
        kw["slices"] = draw(st.integers(1, 3))
    if "chunks" in takes:
        kw["chunks"] = draw(st.one_of(st.none(), st.integers(1, 4)))
    if "gpus_per_node" in takes and (name != "ring" or draw(st.booleans())):
        kw["gpus_per_node"] = draw(st.sampled_from(divisors(p)))
    if name == "hierarchical":
        kw["inter"] = draw(st.sampled_from(["ring", "tree"]))
    if name == "ring":
        kw["direct"] = draw(st.booleans()) and "gpus_per_node" not in kw
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
    # slices pipeline on channels
    assert s.n_channels <= kw["channels"] * (kw["slices"] if name == "hierarchical" else 1)
    if count == 0:
        assert s.n_transfers == 0


@pytest.mark.parametrize("p", [1, 2, 3, 8, 13, 64])
def test_small_and_prime_cases_exhaustively(p):
    for name, algo in ALGORITHMS.items():
        if name in ("direct", "nvls", "nvlstree") and p > 13:
            continue
        for count in (0, 1, p - 1, p, 2 * p + 1):
            kws = [{}]
            if "gpus_per_node" in algo.needs or name == "ring":
                kws = [{"gpus_per_node": g} for g in divisors(p)]
                if name == "hierarchical":
                    kws += [dict(k, inter="tree") for k in kws]
            for kw in kws:
                for channels in (1, 2, 5):
                    r = check(build_schedule(name, p, count, channels=channels, **kw))
                    assert r.ok, (name, p, count, kw, channels, r.error)


def test_ring_steps_and_traffic_are_textbook():
    p, count = 8, 8 * 1000
    s = build_schedule("ring", p, count, itemsize=4, slices=2)
    r = check(s)
    assert s.n_steps == 2 * (p - 1) * 2
    assert np.all(r.bytes_sent == 2 * (p - 1) * count * 4 // p)
    assert set(r.link_bytes) == {(i, (i + 1) % p) for i in range(p)}


def test_double_tree_sends_each_rank_about_twice_the_buffer():
    p, count = 16, 16 * 64
    r = check(build_schedule("double-tree", p, count, itemsize=1, chunks=4))
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
    s = build_schedule("nccl-tree", 32, 1000, gpus_per_node=4, chunks=3, channels=4)
    for k in range(s.n_steps):
        sl = s.step_slice(k)
        for key in (s.src * 8 + s.channel, s.dst * 8 + s.channel):       # one slot use per channel and step
            assert len(set(key[sl])) == len(key[sl])


def test_default_chunks_follow_nccl():
    from collsim.algorithms.nvls import NVLS_CHUNK_BYTES
    from collsim.algorithms.tree import TREE_CHUNK_BYTES, tree_chunks
    assert TREE_CHUNK_BYTES == 512 << 10 and NVLS_CHUNK_BYTES == 128 << 10
    assert tree_chunks(0) == 1 and tree_chunks(512 << 10) == 1 and tree_chunks((512 << 10) + 1) == 2
    assert build_schedule("double-tree", 4, 1 << 20).meta["chunks"] == 4             # 4 MiB: two trees of 2 MiB
    assert build_schedule("nccl-tree", 64, 4 << 20, gpus_per_node=8, channels=16).meta["chunks"] == 2
    assert build_schedule("nvls", 8, 8 << 20, channels=16).meta["chunks"] == 2   # 2 MiB a channel, 8 heads
    assert build_schedule("double-tree", 4, 1 << 40 // 4 >> 10).meta["chunks"] <= 1024


def test_rail_rings_match_nccl_2_x_8():
    from collsim.algorithms.ring import ring_orders
    from collsim.machine import load_cluster
    from collsim.nccl.search import search
    orders = ring_orders(16, 16, gpus_per_node=8)
    # the port of NCCL's ring search (search.cc:559-574, 669-751) finds the same 8 rings on 2 x 8 H100
    rings = search(load_cluster("ib-400g", nodes=2), {}).rings
    assert [list(r.gpus) for r in rings] == orders[:8, :8].tolist()
    # ring 0 = GPU 0 7 6 5 4 3 2 1, ring 1 = 1 2 ... 7 0; channel c + 8 repeats c
    assert orders[0, :8].tolist() == [0, 7, 6, 5, 4, 3, 2, 1] and orders[1, :8].tolist() == [1, 2, 3, 4, 5, 6, 7, 0]
    assert orders[2, :8].tolist() == [2, 1, 0, 7, 6, 5, 4, 3] and (orders[8:] == orders[:8]).all()
    # odd nodes run the partner channel, so every hop between nodes stays on one rail (local index)
    assert orders[0, 8:].tolist() == [9, 10, 11, 12, 13, 14, 15, 8]
    for ring in orders:
        nxt = np.roll(ring, -1)
        cross = ring // 8 != nxt // 8
        assert (ring[cross] % 8 == nxt[cross] % 8).all() and cross.sum() == 2
    # each local GPU leaves its node on exactly 2 of 16 channels and enters on 2: all 8 NICs, both ways
    leave = np.concatenate([ring[ring // 8 != np.roll(ring, -1) // 8] % 8 for ring in orders])
    assert np.bincount(leave, minlength=8).tolist() == [4] * 8            # 2 nodes x 2 channels
    one_node = ring_orders(8, 3)
    assert (one_node == np.arange(8)).all()


def test_direct_board_rings_spread_over_hamiltonian_cycles():
    from collsim.algorithms.ring import hamiltonian_cycles, ring_orders
    cycles = hamiltonian_cycles(4)
    assert len(cycles) == 6 and all(sorted(c) == [0, 1, 2, 3] for c in cycles)
    orders = ring_orders(4, 6, direct=True)
    pairs = np.bincount((orders * 4 + np.roll(orders, -1, axis=1)).ravel(), minlength=16).reshape(4, 4)
    assert (pairs[~np.eye(4, dtype=bool)] == 2).all()                     # every directed pair link twice
    assert len(hamiltonian_cycles(9)) == 6                                # rotations beyond 7 GPUs
    assert check(build_schedule("ring", 4, 1000, channels=6, direct=True)).ok


def test_nccl_tree_heads_and_trees_per_channel():
    s = build_schedule("nccl-tree", 32, 32 * 64, gpus_per_node=8, chunks=1, channels=4)
    inter = s.src // 8 != s.dst // 8
    for c in range(4):
        on = inter & (s.channel == c)
        assert set((s.src[on] % 8).tolist()) == {c}                        # the head GPU carries the network
    from collsim.algorithms.hierarchical import tree_of_channel
    assert tree_of_channel(16).tolist() == [0] * 8 + [1] * 8 and tree_of_channel(1).tolist() == [0]


def test_nvls_moves_s_n_plus_one_over_n_per_gpu_and_direction():
    n, count = 8, 8 * 8 * 64
    s = build_schedule("nvls", n, count, itemsize=4, channels=2, chunks=4)
    r = check(s)
    assert r.ok and s.switches == 1
    assert (r.bytes_sent == count * 4 * (n + 1) // n).all() and (r.bytes_recv == r.bytes_sent).all()
    t = build_schedule("nvlstree", 32, count, itemsize=4, gpus_per_node=8, channels=2, chunks=2)
    assert check(t).ok and t.switches == 4
    inter = (t.src < 32) & (t.dst < 32)
    assert (t.src[inter] % 8 == t.dst[inter] % 8).all()                  # heads of one index, one rail


@pytest.mark.parametrize("args, kw, words", [
    (("nope", 4, 10), {}, "unknown algorithm"),
    (("ring", 0, 10), {}, "ranks must be >= 1"),
    (("ring", 4, -1), {}, "count must be >= 0"),
    (("ring", 4.5, 10), {}, "ranks must be an integer"),
    (("ring", 4, 10.0), {}, "count must be an integer"),
    (("ring", 4, 10), {"chunks": 2}, "takes no 'chunks'"),
    (("ring", 4, 10), {"slices": 0}, "slices must be >= 1"),
    (("ring", 4, 10), {"channels": 0}, "channels must be >= 1"),
    (("nvlstree", 8, 10), {}, "needs gpus_per_node"),
    (("double-tree", 4, 10), {"chunks": 1.5}, "chunks must be an integer"),
    (("hierarchical", 6, 10), {}, "needs gpus_per_node"),
    (("ring", 6, 10), {"gpus_per_node": 4}, "does not divide"),
    (("hierarchical", 6, 10), {"gpus_per_node": 4}, "does not divide"),
    (("hierarchical", 6, 10), {"gpus_per_node": 3, "inter": "mesh"}, "inter must be"),
    (("direct", 4, 10), {"gpus_per_node": 2}, "takes no 'gpus_per_node'"),
    (("ring", True, 10), {}, "must be an integer"),
])
def test_bad_input_is_one_line_error(args, kw, words):
    with pytest.raises(CollsimError) as e:
        build_schedule(*args, **kw)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_validate_names_unknown_parameters():
    from collsim.algorithms import validate
    with pytest.raises(CollsimError, match="unknown parameter 'lanes'"):
        validate("ring", 4, lanes=2)


def test_algorithms_describe_themselves():
    from collsim.algorithms import DEFAULTS
    assert set(REGISTRY) - set(ALGORITHMS) == {"lecture-ring", "lecture-tree", "lecture-hierarchical"}
    for name, algo in REGISTRY.items():
        assert algo.name == name and algo.description and "\n" not in algo.description
        assert set(algo.params) <= set(DEFAULTS) and set(algo.needs) <= set(algo.params)
        assert algo.teaching_only or ("channels" in algo.params and algo.formula and algo.exact)


def test_transfer_bound_bounds_every_schedule_and_guards_huge_ones(monkeypatch):
    from collsim.algorithms import MAX_TRANSFERS, resolve
    for name, algo in REGISTRY.items():
        for p in (1, 2, 3, 5, 8, 12, 17, 32):
            gs = divisors(p) if "gpus_per_node" in algo.params else [None]
            for g in gs:
                kw = {"gpus_per_node": g} if g else {}
                kw.update({"ring": {"slices": 3}, "hierarchical": {"inter": "tree", "chunks": 3}}.get(name, {}))
                if "channels" in algo.params:
                    kw["channels"] = 3
                q = resolve(name, p, 10007, **kw)
                assert build_schedule(name, p, 10007, **kw).n_transfers <= algo.transfer_bound(p, q)
    with pytest.raises(CollsimError, match=r"direct on 16384 ranks \(268419072 transfers\) would hold about .* GB "
                                           r"\(collsim's estimate\), over the 4 GB memory bound.*COLLSIM_MAX_MEMORY"):
        build_schedule("direct", 1 << 14, 1)                       # the memory it would hold first
    monkeypatch.setenv("COLLSIM_MAX_MEMORY", "1T")
    with pytest.raises(CollsimError, match=r"transfers \(about .* GiB; limit .* COLLSIM_MAX_TRANSFERS"):
        build_schedule("direct", 1 << 14, 1)                       # then the count
    monkeypatch.delenv("COLLSIM_MAX_MEMORY")
    assert REGISTRY["direct"].transfer_bound(1 << 14, {"channels": 1}) > MAX_TRANSFERS
    monkeypatch.setenv("COLLSIM_MAX_TRANSFERS", "100")
    with pytest.raises(CollsimError, match="limit 100"):
        build_schedule("ring", 8, 1000)
    with pytest.raises(CollsimError, match="too large"):
        build_schedule("ring", 4, 1 << 62)
