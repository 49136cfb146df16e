"""Trees drawn as trees: every rank a circle, every parent edge a line, the root on top.

``tree_layout`` places the ranks of a parent array (-1 for a root; shapes from
``collsim.algorithms.tree_shapes``) in layers by depth, leaves left to right in depth-first
order and every inner rank above the middle of its children. ``draw_trees`` draws one panel per
tree: inner ranks (those with children: they receive, reduce and forward) filled, leaves white;
with ``gpus_per_node``, edges between nodes thick and coloured, edges inside a node thin and grey,
and every rank labelled ``r`` with its node under it.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms.tree_shapes import btree_parents, chain_tree_parents, dtree_parents
from collsim.errors import CollsimError
from collsim.viz import palette


def tree_layout(parent) -> tuple[np.ndarray, np.ndarray]:
    """(x, depth) of every rank of ``parent`` (one tree, or a forest drawn side by side)."""
    parent = np.asarray(parent, np.int64)
    n = len(parent)
    kids: list[list[int]] = [[] for _ in range(n)]
    for r, p in enumerate(parent.tolist()):
        if p >= n or p == r:
            raise CollsimError(f"parent of rank {r} is {p}: not a tree on {n} ranks")
        if p >= 0:
            kids[p].append(r)
    x, depth = np.full(n, np.nan), np.zeros(n, np.int64)
    next_leaf = 0
    for root in np.flatnonzero(parent < 0).tolist():
        # iterative depth-first walk: chains of thousands are fine
        order, stack = [], [(root, 0)]
        while stack:
            r, d = stack.pop()
            depth[r] = d
            order.append(r)
            stack.extend((c, d + 1) for c in reversed(kids[r]))
        for r in order:                          # leaves in visiting order
            if not kids[r]:
                x[r], next_leaf = next_leaf, next_leaf + 1
        for r in reversed(order):                # inner ranks above their children
            if kids[r]:
                x[r] = np.mean([x[c] for c in kids[r]])
    if np.isnan(x).any():
        raise CollsimError("parent array has a cycle: not a tree")
    return x, depth


def draw_tree(parent, ax, title: str = "", gpus_per_node: int | None = None) -> None:
    """One tree (``parent``) on ``ax``; see the module docstring."""
    from matplotlib.collections import LineCollection

    parent = np.asarray(parent, np.int64)
    x, depth = tree_layout(parent)
    child = np.flatnonzero(parent >= 0)
    segs = [[(x[c], -depth[c]), (x[parent[c]], -depth[parent[c]])] for c in child]
    across = ((child // gpus_per_node != parent[child] // gpus_per_node) if gpus_per_node
              else np.zeros(len(child), bool))
    inner = np.bincount(parent[child], minlength=len(parent)) > 0
    ax.add_collection(LineCollection([s for s, a in zip(segs, across) if not a], colors="0.55",
                                     linewidths=1.2, zorder=1))
    ax.add_collection(LineCollection([s for s, a in zip(segs, across) if a],
                                     colors=palette.OKABE_ITO["blue"], linewidths=3.0, zorder=1))
    size = max(90, min(420, 5000 // max(len(parent), 1)))
    ax.scatter(x[inner], -depth[inner], s=size, c=palette.OKABE_ITO["sky"],
               edgecolors="k", zorder=2)
    ax.scatter(x[~inner], -depth[~inner], s=size, c="white", edgecolors="k", zorder=2)
    fs = 9 if len(parent) <= 16 else 7
    for r in range(len(parent)):
        label = str(r) if not gpus_per_node else f"{r}\n" + f"n{r // gpus_per_node}"
        ax.text(x[r], -depth[r], label, ha="center", va="center",
                fontsize=fs if not gpus_per_node else fs - 1, zorder=3)
    ax.set_xlim(x.min() - 0.7, x.max() + 0.7)
    ax.set_ylim(-depth.max() - 0.6, 0.6)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=10)


def draw_trees(parents: dict, gpus_per_node: int | None = None, width: float = 12.0,
               height: float = 3.2):
    """A figure of one panel per tree: ``parents`` maps a title to a parent array; see
    ``draw_tree``."""
    from matplotlib.figure import Figure

    if not parents:
        raise CollsimError("no trees to draw")
    fig = Figure(figsize=(width, height), layout="constrained")
    for ax, (title, par) in zip(np.atleast_1d(fig.subplots(1, len(parents))), parents.items()):
        draw_tree(par, ax, title, gpus_per_node)
    return fig


def tree_parents(algo: str, ranks: int, gpus_per_node: int | None = None, channel: int = 0) -> dict:
    """{title: parent array} of the trees of ``algo`` on ``ranks`` ranks (channel ``channel``):
    "binary-tree" (one tree), "double-tree" (NCCL's double binary tree: both trees) or "nccl-tree"
    (NCCL's tree across nodes: in every node a chain from GPU ``channel`` mod G, the chains' heads
    joined by the double binary tree over nodes; both trees, since half the channels run each)."""

    if algo == "binary-tree":
        return {f"binary tree, P={ranks}": btree_parents(ranks)}
    if algo == "double-tree":
        t0, t1 = dtree_parents(ranks)
        return {f"double binary tree: tree 0, P={ranks}": t0,
                "tree 1 (the mirror of tree 0)" if ranks % 2 == 0
                else "tree 1 (tree 0 shifted by one rank)": t1}
    if algo == "nccl-tree":
        if not gpus_per_node or ranks % gpus_per_node:
            raise CollsimError("nccl-tree needs gpus_per_node dividing ranks")
        g, nodes = gpus_per_node, ranks // gpus_per_node
        out = {}
        for t, inter in enumerate(dtree_parents(nodes)):
            par = chain_tree_parents(inter, g)
            # channel c's chains start at GPU c mod G
            head = channel % g
            # position -> rank
            perm = np.arange(ranks) // g * g + (np.arange(ranks) % g + head) % g
            rank_parent = np.full(ranks, -1)
            rank_parent[perm] = np.where(par < 0, -1, perm[np.maximum(par, 0)])
            out[f"NCCL's tree {t} over {nodes} nodes (channel {channel}: chains from GPU "
                f"{head})"] = rank_parent
        return out
    raise CollsimError(f"no tree to draw for algorithm {algo!r} (binary-tree, double-tree, "
                       "nccl-tree)")
