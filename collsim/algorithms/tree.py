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

Step structure (what makes the cost exact, see ``collsim.cost``): the tree
edges are coloured with K colours so that no rank sends, nor receives, on two
edges of one colour (a bipartite edge colouring; K = 2 for the double tree).
The reduce-up transfers (edge, chunk) are taken in super-step order (chunk c
of an edge of height h in super-step c + h, colour by colour) and each is put
in the first step after its children's transfers of that chunk and after its
ports' previous use (``up_slots``): U steps, none empty, no port twice in a
step, every transfer following one of the step before. The broadcast-down
copies are those U steps mirrored in time (``step_keys``). Reduce and
broadcast steps are never mixed, so on one link class every step has one
duration and time = U (up step) + U (down step).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.algorithms.ring import split_ranges
from collsim.schedule import COPY, REDUCE, Schedule, ScheduleBuilder


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
    colour = np.full(len(child), -1, np.int64)
    at = {}  # (side, vertex, colour) -> edge
    for e, (u, w) in enumerate(zip(child.tolist(), parent.tolist())):
        a = next(c for c in range(k) if ("L", u, c) not in at)
        b = next(c for c in range(k) if ("R", w, c) not in at)
        if ("R", w, a) in at:  # swap colours a/b along the path from w starting with colour a
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


@dataclass
class TreePlan:
    """Edges of several trees over positions 0..n-1 with their pipeline timing.

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
    return TreePlan(c["tree"], c["child"], c["parent"], colour, c["up0"], k)


def up_slots(plan: TreePlan, chunks: int) -> np.ndarray:
    """Step of every (edge, chunk) reduce-up transfer: (E, C) int array.

    List scheduling with unit durations: transfers taken in the order of the
    super-step keys (chunk c of an edge of height h at super-step c + h, its
    colour inside it) each go to the first step after its children's
    transfers of that chunk and after the last step its sender's send port and
    its receiver's receive port were used (ports in first-come order). So a
    transfer never shares a port within its step, and every transfer of step
    s >= 1 follows one of step s - 1 (a child's transfer of the same chunk, or
    the previous transfer on one of its ports): no step is ever empty.
    """
    n_e = len(plan.child)
    if n_e == 0:
        return np.zeros((0, chunks), np.int64)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    idx = np.arange(n_e * chunks)
    e_of, c_of = idx % n_e, idx // n_e
    order = np.argsort((plan.up0[e_of] + c_of) * plan.k + plan.colour[e_of], kind="stable")
    kids = [[] for _ in range(n_e)]
    edge_of = {(int(t), int(v)): e for e, (t, v) in enumerate(zip(plan.tree, plan.child))}
    for e, (t, w) in enumerate(zip(plan.tree.tolist(), plan.parent.tolist())):
        if (t, w) in edge_of:
            kids[edge_of[(t, w)]].append(e)
    send, recv = [0] * n_pos, [0] * n_pos
    child, parent = plan.child.tolist(), plan.parent.tolist()
    slot = [[0] * chunks for _ in range(n_e)]
    for i in order.tolist():
        c, e = divmod(i, n_e)
        u, w = child[e], parent[e]
        s = max(send[u], recv[w], max((slot[f][c] + 1 for f in kids[e]), default=0))
        slot[e][c] = s
        send[u] = recv[w] = s + 1
    return np.array(slot, np.int64)


def step_keys(plan: TreePlan, chunks: int):
    """Every (edge, chunk) transfer of the plan, up and down, sorted by step.

    Returns (key, up, edge, chunk): equal keys form one step, in key order;
    ``up`` is true for the reduce (child -> parent) transfers. The U up steps
    come from ``up_slots``; the broadcast is their mirror image in time: the
    copy parent -> child of chunk c goes in step 2U - 1 - (its up step), so it
    uses the ports its reduce used (send and receive swapped) in reverse order
    and every copy precedes one of the next step.
    """
    slot = up_slots(plan, chunks).ravel()
    n = len(slot)
    u = int(slot.max()) + 1 if n else 0
    key = np.concatenate([slot, 2 * u - 1 - slot])
    up = np.arange(2 * n) < n
    e = np.repeat(np.arange(len(plan.child)), chunks)
    cc = np.tile(np.arange(chunks), len(plan.child))
    e2, c2 = np.concatenate([e, e]), np.concatenate([cc, cc])
    order = np.argsort(key, kind="stable")
    return key[order], up[order], e2[order], c2[order]


def tree_phase(b: ScheduleBuilder, plan: TreePlan, groups: np.ndarray, seg_off, seg_len,
               chunks: int) -> None:
    """Append the pipelined reduce-up / broadcast-down steps of ``plan`` to ``b``.

    groups: (G, n) rank of every tree position in each of G disjoint groups.
    seg_off, seg_len: (G, T) the element range tree t handles in group g.
    """
    groups = np.atleast_2d(np.asarray(groups, np.int64))
    if len(plan.child) == 0:
        return
    c_off, c_len = split_ranges(seg_off, seg_len, chunks)            # (G, T, C)
    key, up, e2, c2 = step_keys(plan, chunks)
    src_pos = np.where(up, plan.child[e2], plan.parent[e2])
    dst_pos = np.where(up, plan.parent[e2], plan.child[e2])
    tr = plan.tree[e2]
    bounds = np.flatnonzero(np.diff(key)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(key)]):
        sl = slice(lo, hi)
        b.add_step(groups[:, src_pos[sl]].ravel(), groups[:, dst_pos[sl]].ravel(),
                   c_off[:, tr[sl], c2[sl]].ravel(), c_len[:, tr[sl], c2[sl]].ravel(),
                   REDUCE if up[lo] else COPY)


def _run(name: str, parents: list[np.ndarray], ranks: int, count: int, itemsize: int,
         chunks: int) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name=name, meta={"chunks": chunks})
    off, ln = split_ranges(np.array([0]), np.array([count]), len(parents))
    tree_phase(b, plan_trees(parents), np.arange(ranks)[None, :], off, ln, chunks)
    return b.build()


def binary_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1) -> Schedule:
    """One NCCL binary tree carrying the whole buffer, pipelined over ``chunks``."""
    return _run("binary-tree", [btree_parents(ranks)], ranks, count, itemsize, chunks)


def double_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1) -> Schedule:
    """NCCL's double binary tree: each tree carries half the buffer, pipelined over ``chunks``."""
    return _run("tree", list(dtree_parents(ranks)), ranks, count, itemsize, chunks)
