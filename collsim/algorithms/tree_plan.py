"""The trees a pipelined tree AllReduce runs on, as edges with colours and heights: ``tree_plan``.

A ``TreePlan`` holds the edges of one or more trees over positions 0..n-1 (shapes from
``collsim.algorithms.tree_shapes``). Its edges are coloured with K colours so that no position
sends, nor receives, on two edges of one colour (a bipartite edge colouring, Koenig: K = 2 for the
double tree), which ``collsim.algorithms.tree_pipeline`` uses to place transfers of one colour in
one step.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from collsim.algorithms.tree_shapes import (
    btree_parents,
    chain_tree_parents,
    depths,
    dtree_parents,
    heights,
)
from collsim.errors import CollsimError

MAX_TREE_POSITIONS = 1 << 15   # ranks a pipelined tree spans: planning it grows faster than n


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
        depth = depths(par)
        height = heights(par, depth)
        e = np.flatnonzero(par >= 0)
        cols["tree"].append(np.full(len(e), t))
        cols["child"].append(e)
        cols["parent"].append(par[e])
        cols["up0"].append(height[e])
    c = {k: np.concatenate(v).astype(np.int64) for k, v in cols.items()}
    colour, k = _edge_colouring(c["child"], c["parent"])
    return TreePlan(c["tree"], c["child"], c["parent"], colour, c["up0"], k, len(parents))


def read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


@lru_cache(maxsize=64)
def tree_plan(layout: str, n: int, gpus_per_node: int = 1) -> TreePlan:
    """Cached plan of the trees of ``layout`` over n positions (arrays read-only):
    "binary" (``btree_parents(n)``), "double" (``dtree_parents(n)``) or "nccl"
    (``chain_tree_parents`` of the double tree over n // gpus_per_node nodes);
    "double0"/"double1" and "nccl0"/"nccl1": one of the two trees alone."""
    if n > MAX_TREE_POSITIONS:
        raise CollsimError(f"a tree over {n} positions: collsim pipelines trees of at most "
                           f"{MAX_TREE_POSITIONS} "
                           f"(collsim.algorithms.tree_plan.MAX_TREE_POSITIONS: the pipeline is "
                           f"planned edge by edge, seconds at that size and superlinear past it)")
    if layout == "binary":
        parents = [btree_parents(n)]
    elif layout.startswith("double"):
        parents = list(dtree_parents(n))
    else:
        parents = [chain_tree_parents(q, gpus_per_node) for q in dtree_parents(n // gpus_per_node)]
    if layout[-1] in "01":
        parents = [parents[int(layout[-1])]]
    plan = plan_trees(parents)
    read_only(plan.tree, plan.child, plan.parent, plan.colour, plan.up0)
    return plan
