"""collsim.algorithms.tree(_pipeline): the fast, cached tree schedule build equals a slow reference.

The reference below is the straightforward build the fast one replaced (kept
here only): dict-based edge colouring, one Python step per (edge, chunk) of the
list scheduling, a sort of all keys, one ``add_step`` per step. Every tree
algorithm's schedule must be identical array for array.
"""
import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.core.compose import split_ranges
from collsim.core.schedule import COPY, REDUCE

tree_mod = importlib.import_module("collsim.algorithms.tree")
pipeline_mod = importlib.import_module("collsim.algorithms.tree_pipeline")
hier_mod = importlib.import_module("collsim.algorithms.hierarchical")   # the package shadows its name


def ref_colouring(child, parent):
    k = int(max(np.bincount(child).max(), np.bincount(parent).max())) if len(child) else 0
    colour = np.full(len(child), -1, np.int64)
    at = {}
    for e, (u, w) in enumerate(zip(child.tolist(), parent.tolist())):
        a = next(c for c in range(k) if ("L", u, c) not in at)
        b = next(c for c in range(k) if ("R", w, c) not in at)
        if ("R", w, a) in at:
            path, side, v, c = [], "R", w, a
            while (side, v, c) in at:
                f = at[(side, v, c)]
                path.append(f)
                side, v = ("L", child[f]) if side == "R" else ("R", parent[f])
                c = b if c == a else a
            for f in path:
                del at[("L", child[f], colour[f])], at[("R", parent[f], colour[f])]
            for f in path:
                colour[f] = b if colour[f] == a else a
                at[("L", child[f], colour[f])] = at[("R", parent[f], colour[f])] = f
        colour[e] = a
        at[("L", u, a)] = at[("R", w, a)] = e
    return colour, k


def ref_up_slots(plan, chunks):
    n_e = len(plan.child)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    colour, k = ref_colouring(plan.child, plan.parent)
    idx = np.arange(n_e * chunks)
    e_of, c_of = idx % n_e, idx // n_e
    order = np.argsort((plan.up0[e_of] + c_of) * k + colour[e_of], kind="stable")
    edge_of = {(int(t), int(v)): e for e, (t, v) in enumerate(zip(plan.tree, plan.child))}
    kids = [[] for _ in range(n_e)]
    for e, (t, w) in enumerate(zip(plan.tree.tolist(), plan.parent.tolist())):
        if (t, w) in edge_of:
            kids[edge_of[(t, w)]].append(e)
    send, recv = [0] * n_pos, [0] * n_pos
    slot = [[0] * chunks for _ in range(n_e)]
    for i in order.tolist():
        c, e = divmod(i, n_e)
        u, w = plan.child[e], plan.parent[e]
        s = max(send[u], recv[w], max((slot[f][c] + 1 for f in kids[e]), default=0))
        slot[e][c] = s
        send[u] = recv[w] = s + 1
    return np.array(slot, np.int64)


def ref_down_slots(plan, chunks):
    n_e = len(plan.child)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    colour, k = ref_colouring(plan.child, plan.parent)
    edge_of = {(int(t), int(v)): e for e, (t, v) in enumerate(zip(plan.tree, plan.child))}
    above = [edge_of.get((int(t), int(w)), -1) for t, w in zip(plan.tree, plan.parent)]
    depth = []
    for e in range(n_e):
        d, f = 0, above[e]
        while f >= 0:
            d, f = d + 1, above[f]
        depth.append(d)
    idx = np.arange(n_e * chunks)
    e_of, c_of = idx % n_e, idx // n_e
    order = np.argsort((np.array(depth)[e_of] + c_of) * k + colour[e_of], kind="stable")
    send, recv = [0] * n_pos, [0] * n_pos
    slot = [[0] * chunks for _ in range(n_e)]
    for i in order.tolist():
        c, e = divmod(i, n_e)
        w, u = plan.parent[e], plan.child[e]
        s = max(send[w], recv[u], slot[above[e]][c] + 1 if above[e] >= 0 else 0)
        slot[e][c] = s
        send[w] = recv[u] = s + 1
    return np.array(slot, np.int64)


def ref_tree_phase(b, ref, groups, seg_off, seg_len, channel=0, lanes=(0, 1), fan=0):   # lanes: not compared
    plan, chunks = ref.plan, ref.chunks
    groups = np.atleast_2d(np.asarray(groups, np.int64))
    if len(plan.child) == 0:
        return
    c_off, c_len = split_ranges(seg_off, seg_len, chunks)
    slot = ref_up_slots(plan, chunks).ravel()
    n, u = len(slot), int(slot.max()) + 1
    key = np.concatenate([slot, u + ref_down_slots(plan, chunks).ravel()])
    up = np.arange(2 * n) < n
    e = np.tile(np.repeat(np.arange(len(plan.child)), chunks), 2)
    c = np.tile(np.arange(chunks), 2 * len(plan.child))
    order = np.argsort(key, kind="stable")
    key, up, e, c = key[order], up[order], e[order], c[order]
    src = np.where(up, plan.child[e], plan.parent[e])
    dst = np.where(up, plan.parent[e], plan.child[e])
    bounds = np.flatnonzero(np.diff(key)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(key)]):
        sl = slice(lo, hi)
        t = plan.tree[e[sl]]
        ch = np.broadcast_to(np.asarray(channel)[..., None], (len(groups), hi - lo))
        b.add_step(groups[:, src[sl]].ravel(), groups[:, dst[sl]].ravel(),
                   c_off[:, t, c[sl]].ravel(), c_len[:, t, c[sl]].ravel(), REDUCE if up[lo] else COPY,
                   channel=ch.ravel())


def ref_tree_steps(layout, n, g, chunks):
    plan = pipeline_mod.tree_plan(layout, n, g)   # its parents and heights; colours are recomputed
    return SimpleNamespace(plan=plan, chunks=chunks, trees=plan.trees)


def reference_build(monkeypatch, *args, **kw):
    with monkeypatch.context() as m:
        for mod in (tree_mod, hier_mod):
            m.setattr(mod, "tree_steps", ref_tree_steps)
            m.setattr(mod, "tree_phase", ref_tree_phase)
        return build_schedule(*args, **kw)


def same(a, b):
    return (all(np.array_equal(getattr(a, f), getattr(b, f))
                for f in ("src", "dst", "offset", "length", "op", "step_ptr", "channel"))
            and (a.ranks, a.count, a.itemsize, a.name, a.meta) == (b.ranks, b.count, b.itemsize, b.name, b.meta))


def cases(p):
    g = max(d for d in (1, 2, 4, 8) if p % d == 0)
    return [("double-tree", {}), ("binary-tree", {"channels": 2}), ("nccl-tree", {"gpus_per_node": g, "channels": 3}),
            ("hierarchical", {"gpus_per_node": g, "inter": "tree"})]


@pytest.mark.slow
@pytest.mark.parametrize("p", range(1, 65))
def test_fast_build_equals_reference(monkeypatch, p):
    for name, kw in cases(p):
        for chunks in (1, 3, 8) + ((64,) if p % 9 == 1 else ()):
            for count in (5, 1000 * chunks + 7):
                new = build_schedule(name, p, count, chunks=chunks, **kw)
                assert same(new, reference_build(monkeypatch, name, p, count, chunks=chunks, **kw)), \
                    (name, p, chunks, count)


def test_fast_build_equals_reference_on_1000_ranks(monkeypatch):
    for name, kw in (("double-tree", {}), ("nccl-tree", {"gpus_per_node": 8, "channels": 2})):
        new = build_schedule(name, 1000, 123457, chunks=5, **kw)
        assert same(new, reference_build(monkeypatch, name, 1000, 123457, chunks=5, **kw))


def test_cached_steps_are_read_only():
    steps = pipeline_mod.tree_steps("double", 16, 1, 4)
    assert steps is pipeline_mod.tree_steps("double", 16, 1, 4)
    with pytest.raises(ValueError):
        steps.src[0] = 1
    with pytest.raises(ValueError):
        pipeline_mod.tree_plan("double", 16).colour[0] = 1


def test_nccls_broadcast_sends_to_both_children_at_once():
    """NCCL's tree and NVLSTree copy down to every child at once: a parent's copies to its second child run in a
    lane of their own (``tree_phase(fan=...)``), so its broadcast never waits for one child before the other."""
    for s, down in ((build_schedule("nccl-tree", 32, 4096, gpus_per_node=8, channels=2, nics_per_node=8), 1),
                    (build_schedule("nvlstree", 32, 4096, gpus_per_node=8, channels=2), 2)):
        copies = (s.op == COPY) & (s.src // 8 != s.dst // 8)             # down, across nodes
        fans = {}
        for src, lane in zip(s.src[copies], s.lane[copies]):
            fans.setdefault(int(src), set()).add(int(lane))
        assert max(len(v) for v in fans.values()) == 2 and down in set().union(*fans.values())


@pytest.mark.parametrize("layout", ["binary", "double"])
def test_levelled_steps_are_the_planned_steps_for_powers_of_two_and_bound_the_rest(layout):
    from collsim.algorithms.tree import levelled_steps, up_down_steps
    for j in range(2, 13):
        for k in (1, 2, 7):
            assert up_down_steps(layout, 1 << j, k) == (levelled_steps(1 << j, k),) * 2
    for n in (5, 6, 100, 1000, 1025, 3000):
        for k in (1, 3):
            u, d = up_down_steps(layout, n, k)
            assert max(u, d) <= levelled_steps(n, k)


def test_tree_closed_form_past_the_planning_bound_answers_in_log_p():
    from collsim.algorithms import REGISTRY, resolve
    from collsim.algorithms.timing import Links
    from collsim.algorithms.tree_plan import MAX_TREE_POSITIONS
    algo, p, nb = REGISTRY["double-tree"], 1 << 20, 4 << 20
    q = resolve("double-tree", p, nb // 4)
    links = Links(alpha=1e-6, beta=1e-11, gamma=0.0)
    big, small = (float(algo.closed_form(n, np.array([nb], float), links, q)[0]) for n in (p, MAX_TREE_POSITIONS))
    # 5 more levels (2^15 -> 2^20): 10 more steps up and 10 down, alpha + m beta each
    m = nb / (2 * q["chunks"])
    assert big - small == pytest.approx(20 * (1e-6 + m * 1e-11), rel=1e-9)
