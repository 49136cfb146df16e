"""Pipelined tree AllReduce: NCCL's double binary tree, and one binary tree.

Tree shapes follow NCCL's src/graph/trees.cc (re-derived here, not copied):

* ``btree_parents(n)``: rank 0 is the root with a single child; below it a
  binary tree where rank r's parent is found from its lowest set bit b:
  (r ^ b) | 2b, or r ^ b if that is >= n. Odd ranks are leaves.
* ``dtree_parents(n)``: tree 0 is that btree; tree 1 is its mirror
  (r -> n-1-r) for even n, or it shifted by one rank (r -> r+1 mod n) for odd
  n. Every rank is a leaf in at least one tree (except rank 0 for odd n: the
  root of tree 0 with one child, and inner in tree 1, as in NCCL) and has at
  most two children in both trees together.

Each tree reduces and broadcasts its own segment of the buffer (the double
tree gives each tree half), cut into ``chunks`` pipeline chunks.

The edges are coloured with K colours (``plan_trees``: no rank sends, nor
receives, on two edges of one colour); ``collsim.algorithms.tree_pipeline``
orders the (edge, chunk) transfers into reduce and broadcast steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from collsim.algorithms.ring import split_ranges
from collsim.algorithms.tree_pipeline import tree_phase, tree_steps
from collsim.schedule import Schedule, ScheduleBuilder


def btree_parents(n: int) -> np.ndarray:
    """Parent of every rank in NCCL's binary tree on n ranks (-1 for the root 0)."""
    r = np.arange(n, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    up = np.where(up >= n, r ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two complementary trees (mirror for even n, shift for odd n)."""
    p0 = btree_parents(n)
    r = np.arange(n)
    if n % 2 == 0:
        q = p0[n - 1 - r]
        p1 = np.where(q < 0, -1, n - 1 - q)
    else:
        q = p0[(r - 1) % n]
        p1 = np.where(q < 0, -1, (q + 1) % n)
    return p0, p1


def chain_tree_parents(inter: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """Tree over nodes x GPUs: ``inter`` (parents of nodes) joins local GPU 0s; inside a
    node GPU l's parent is GPU l-1 (NCCL's intra-node chain)."""
    nodes, g = len(inter), gpus_per_node
    rank = np.arange(nodes * g)
    node, local = rank // g, rank % g
    head_parent = np.where(inter[node] < 0, -1, inter[node] * g)
    return np.where(local == 0, head_parent, rank - 1)


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.where(parent < 0, 0, -1)
    while (depth < 0).any():
        known = (parent >= 0) & (depth < 0)
        ready = known & (depth[np.maximum(parent, 0)] >= 0)
        depth[ready] = depth[parent[ready]] + 1
    return depth


def _heights(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    height = np.zeros(len(parent), np.int64)
    for v in np.argsort(-depth, kind="stable"):
        if parent[v] >= 0:
            height[parent[v]] = max(height[parent[v]], height[v] + 1)
    return height


def _edge_colouring(child: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, int]:
    """Proper edge colouring of the bipartite multigraph child-side x parent-side
    with K = max degree colours (Koenig), by alternating-path recolouring."""
    k = 0
    if len(child):
        k = int(max(np.bincount(child).max(), np.bincount(parent).max()))
    child, parent = child.tolist(), parent.tolist()
    n_pos = max(child + parent, default=-1) + 1
    at_l = [[-1] * k for _ in range(n_pos)]   # [vertex][colour] -> edge on the child side
    at_r = [[-1] * k for _ in range(n_pos)]   # ... on the parent side
    colour = [-1] * len(child)
    for e, (u, w) in enumerate(zip(child, parent)):
        a, b = at_l[u].index(-1), at_r[w].index(-1)
        if at_r[w][a] >= 0:  # swap colours a/b along the path from w starting with colour a
            path, on_r, v, c = [], True, w, a
            while (f := (at_r if on_r else at_l)[v][c]) >= 0:
                path.append(f)
                v = child[f] if on_r else parent[f]
                on_r, c = not on_r, (b if c == a else a)
            for f in path:
                at_l[child[f]][colour[f]] = at_r[parent[f]][colour[f]] = -1
            for f in path:
                colour[f] = b if colour[f] == a else a
                at_l[child[f]][colour[f]] = at_r[parent[f]][colour[f]] = f
        colour[e] = a
        at_l[u][a] = at_r[w][a] = e
    return np.array(colour, np.int64), k


@dataclass(frozen=True)
class TreePlan:
    """Edges of ``trees`` trees over positions 0..n-1 with their pipeline timing.

    Per edge: ``tree``, ``child``, ``parent`` (positions), ``colour``,
    ``up0`` (super-step of chunk 0 going up: the child's height); ``k``
    colours (``up_slots`` orders the transfers by (up0 + chunk) k + colour).
    """

    tree: np.ndarray
    child: np.ndarray
    parent: np.ndarray
    colour: np.ndarray
    up0: np.ndarray
    k: int
    trees: int


def plan_trees(parents: list[np.ndarray]) -> TreePlan:
    cols = {name: [] for name in ("tree", "child", "parent", "up0")}
    for t, par in enumerate(parents):
        par = np.asarray(par, np.int64)
        depth = _depths(par)
        height = _heights(par, depth)
        e = np.flatnonzero(par >= 0)
        cols["tree"].append(np.full(len(e), t))
        cols["child"].append(e)
        cols["parent"].append(par[e])
        cols["up0"].append(height[e])
    c = {k: np.concatenate(v).astype(np.int64) for k, v in cols.items()}
    colour, k = _edge_colouring(c["child"], c["parent"])
    return TreePlan(c["tree"], c["child"], c["parent"], colour, c["up0"], k, len(parents))


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


@lru_cache(maxsize=64)
def tree_plan(layout: str, n: int, gpus_per_node: int = 1) -> TreePlan:
    """Cached plan of the trees of ``layout`` over n positions (arrays read-only):
    "binary" (``btree_parents(n)``), "double" (``dtree_parents(n)``) or "nccl"
    (``chain_tree_parents`` of the double tree over n // gpus_per_node nodes)."""
    if layout == "binary":
        parents = [btree_parents(n)]
    elif layout == "double":
        parents = list(dtree_parents(n))
    else:
        parents = [chain_tree_parents(q, gpus_per_node) for q in dtree_parents(n // gpus_per_node)]
    plan = plan_trees(parents)
    _read_only(plan.tree, plan.child, plan.parent, plan.colour, plan.up0)
    return plan


def _run(name: str, layout: str, ranks: int, count: int, itemsize: int, chunks: int) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name=name, meta={"chunks": chunks})
    steps = tree_steps(layout, ranks, 1, chunks)
    off, ln = split_ranges(np.array([0]), np.array([count]), steps.trees)
    tree_phase(b, steps, np.arange(ranks)[None, :], off, ln)
    return b.build()


def binary_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1) -> Schedule:
    """One NCCL binary tree carrying the whole buffer, pipelined over ``chunks``."""
    return _run("binary-tree", "binary", ranks, count, itemsize, chunks)


def double_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1) -> Schedule:
    """NCCL's double binary tree: each tree carries half the buffer, pipelined over ``chunks``."""
    return _run("tree", "double", ranks, count, itemsize, chunks)
