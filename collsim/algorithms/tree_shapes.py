"""Tree shapes of NCCL's tree AllReduce, as parent arrays (-1 for a root).

Shapes follow NCCL's src/graph/trees.cc (re-derived here, not copied):

* ``btree_parents(n)``: rank 0 is the root with a single child; below it a
  binary tree where rank r's parent is found from its lowest set bit b:
  (r ^ b) | 2b, or r ^ b if that is >= n. Odd ranks are leaves.
* ``dtree_parents(n)``: tree 0 is that btree; tree 1 is its mirror
  (r -> n-1-r) for even n, or it shifted by one rank (r -> r+1 mod n) for odd
  n. Every rank is a leaf in at least one tree (except rank 0 for odd n: the
  root of tree 0 with one child, and inner in tree 1, as in NCCL) and has at
  most two children in both trees together.
* ``chain_tree_parents(inter, g)``: NCCL's multi-node tree, a chain inside each
  node of g GPUs below the node's GPU 0, joined by the tree ``inter`` over nodes.

``depths`` and ``heights`` give every rank's distance from its root and from its
deepest leaf.
"""
from __future__ import annotations

import numpy as np


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


def depths(parent: np.ndarray) -> np.ndarray:
    depth = np.where(parent < 0, 0, -1)
    while (depth < 0).any():
        known = (parent >= 0) & (depth < 0)
        ready = known & (depth[np.maximum(parent, 0)] >= 0)
        depth[ready] = depth[parent[ready]] + 1
    return depth


def heights(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    height = np.zeros(len(parent), np.int64)
    for v in np.argsort(-depth, kind="stable"):
        if parent[v] >= 0:
            height[parent[v]] = max(height[parent[v]], height[v] + 1)
    return height
