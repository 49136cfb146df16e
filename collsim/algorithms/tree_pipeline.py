"""Pipelining of the tree AllReduce: the steps of every (edge, chunk) transfer.

A ``TreePlan`` (``collsim.algorithms.tree_plan``) holds the edges of one or more trees over
positions 0..n-1 with their edge colours and heights. Given it and a number of pipeline chunks C,
this module orders every (edge, chunk) transfer into steps and appends them to a schedule:

* ``up_slots``, ``down_slots``: the step of every reduce-up transfer (child ->
  parent, chunk c) and of every broadcast-down copy;
* ``tree_steps``: cached ``TreeSteps``, the reduce and broadcast steps of a
  tree layout ("binary", "double", "nccl") in schedule order;
* ``tree_phase``: appends those steps to a ``ScheduleBuilder`` for one or more
  disjoint groups of ranks, each tree carrying its own element range.

Exactness construction (what makes the cost exact, see ``collsim.cost``): the
tree edges are coloured with K colours so that no rank sends, nor receives, on
two edges of one colour (a bipartite edge colouring; K = 2 for the double
tree). The reduce phase is packed into U steps: the reduce-up transfers (edge,
chunk) are taken in super-step order (chunk c of an edge of height h in
super-step c + h, colour by colour) and each is put in the first step after its
children's transfers of that chunk and after its ports' previous use
(``up_slots``): U steps, none empty, no port twice in a step, every transfer
following one of the step before. The broadcast phase is packed the same way
into D steps in the other direction (``down_slots``: chunk 0 first, as NCCL
forwards each chunk down as soon as the root has it), so a simulation overlaps
it with the reduce. Reduce and broadcast steps are never mixed, so on one link
class every step has one duration and the closed form is U (up step) + D (down
step), an upper bound of the simulation under policy "schedule".
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from collsim.algorithms.tree_plan import TreePlan, read_only, tree_plan
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, REDUCE

__all__ = ["TreePlan", "TreeSteps", "down_slots", "tree_phase", "tree_plan", "tree_steps",
           "up_slots"]


def _edge_above(plan: TreePlan, n_pos: int) -> np.ndarray:
    """The edge just above every edge in its tree (its parent's own edge), -1 below a root."""
    edge_at = np.full((plan.trees, n_pos), -1, np.int64)
    edge_at[plan.tree, plan.child] = np.arange(len(plan.child))
    return edge_at[plan.tree, plan.parent]


def _kid_edges(plan: TreePlan, n_pos: int) -> np.ndarray:
    """(E, m) edges just below every edge in its tree (its child's child edges), -1 padded."""
    n_e = len(plan.child)
    above = _edge_above(plan, n_pos)
    f = np.flatnonzero(above >= 0)
    f = f[np.argsort(above[f], kind="stable")]
    a = above[f]
    nth = np.arange(len(f)) - np.searchsorted(a, a)      # index among its siblings
    kids = np.full((n_e, int(nth.max()) + 1 if len(f) else 0), -1, np.int64)
    kids[a, nth] = f
    return kids


def _list_schedule(plan: TreePlan, chunks: int, offset: np.ndarray, sender: np.ndarray,
                   receiver: np.ndarray, before: np.ndarray) -> np.ndarray:
    """Step of every (edge, chunk) transfer ``sender[e] -> receiver[e]``: (E, C) int array.
    Transfers go in super-step key order (chunk c of edge e at c + offset[e], colour by colour),
    each to the first step after the (edge, chunk) transfers of ``before`` (E, m; -1 padded) and
    after the last use of its sender's send port and its receiver's receive port. One key's
    transfers are edges of one colour (no shared port) after transfers of smaller keys, so they are
    placed together."""
    n_e = len(plan.child)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    e, c, cuts = _key_order(plan, chunks, offset)
    base = 1 + 2 * n_pos                                 # ends[0] stays 0: "nothing before"
    prior = before[e]
    reads = np.empty((len(e), 2 + prior.shape[1]), np.int64)
    reads[:, 0] = 1 + sender[e]
    reads[:, 1] = 1 + n_pos + receiver[e]
    reads[:, 2:] = np.where(prior >= 0, base + prior * chunks + c[:, None], 0)
    writes = np.column_stack([reads[:, :2], base + e * chunks + c])
    ends = np.zeros(base + n_e * chunks, np.int64)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        ends[writes[lo:hi]] = ends[reads[lo:hi]].max(axis=1, keepdims=True) + 1
    return ends[base:].reshape(n_e, chunks) - 1


def up_slots(plan: TreePlan, chunks: int) -> np.ndarray:
    """Step of every (edge, chunk) reduce-up transfer: (E, C) int array.

    List scheduling with unit durations (``_list_schedule``): chunk c of an edge of height h at
    super-step c + h, after its children's transfers of that chunk and the last use of its ports
    (first-come order). So a transfer never shares a port within its step, and every transfer of
    step s >= 1 follows one of step s - 1 (a child's transfer of the same chunk, or the previous
    transfer on one of its ports): no step is ever empty.
    """
    if len(plan.child) == 0:
        return np.zeros((0, chunks), np.int64)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    return _list_schedule(plan, chunks, plan.up0, plan.child, plan.parent, _kid_edges(plan, n_pos))


def down_slots(plan: TreePlan, chunks: int) -> np.ndarray:
    """Step of every (edge, chunk) broadcast-down copy,
    counted from the first down step: (E, C) int array.

    The same list scheduling as ``up_slots`` in the other direction: chunk c of an edge whose parent
    is d below its root at super-step c + d, after the copy of that chunk into the parent and the
    last use of its ports. Chunk 0 goes down first, as it came up first: NCCL's tree forwards every
    chunk down as soon as the root has it (runTreeUpDown), so the broadcast pipelines behind the
    reduce.
    """
    if len(plan.child) == 0:
        return np.zeros((0, chunks), np.int64)
    n_pos = int(max(plan.child.max(), plan.parent.max())) + 1
    above = _edge_above(plan, n_pos)
    below_root = np.zeros(len(above), np.int64)          # edges between the parent and its root
    hop = above.copy()
    while (hop >= 0).any():
        below_root += hop >= 0
        hop = np.where(hop >= 0, above[np.maximum(hop, 0)], -1)
    return _list_schedule(plan, chunks, below_root, plan.parent, plan.child, above[:, None])


def _key_order(plan: TreePlan, chunks: int,
               offset: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(edge, chunk) of every transfer in super-step key order (chunk c of edge e at c + offset[e],
    colour by colour), and the cuts between keys, without a sort over all transfers: the transfers
    of super-step s and colour q are the edges of colour q with s - C < offset <= s, a range of the
    edges sorted by (colour, offset)."""
    eo = np.lexsort((offset, plan.colour))
    span = int(offset.max()) + 2 * chunks + 1            # (colour, offset) -> one sortable int
    pair = plan.colour[eo] * span + offset[eo] + chunks
    s = np.repeat(np.arange(int(offset.max()) + chunks), plan.k)
    q = np.tile(np.arange(plan.k), len(s) // plan.k)
    lo = np.searchsorted(pair, q * span + s + 1)
    hi = np.searchsorted(pair, q * span + s + chunks, side="right")
    n = hi - lo
    first = np.cumsum(n) - n
    at = np.repeat(lo - first, n) + np.arange(int(n.sum()))
    e = eo[at]
    c = np.repeat(s, n) - offset[e]
    return e, c, np.r_[0, np.cumsum(n[n > 0])].tolist()


@dataclass(frozen=True)
class TreeSteps:
    """Every (edge, chunk) transfer of a plan, up and down, in schedule order.

    Per transfer (int32, read-only): ``step``, ``slot`` (position in its step), ``src``/``dst``
    positions, ``tree``, ``chunk``, ``edge``, ``colour`` (its edge's); per step ``up`` (true: reduce
    child -> parent, else copy parent -> child); ``width``: most transfers in a step; ``trees``,
    ``chunks``.
    """

    step: np.ndarray
    slot: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    tree: np.ndarray
    chunk: np.ndarray
    edge: np.ndarray
    colour: np.ndarray
    up: np.ndarray
    width: int
    trees: int
    chunks: int


@lru_cache(maxsize=16)
def tree_steps(layout: str, n: int, gpus_per_node: int, chunks: int) -> TreeSteps:
    """Cached ``TreeSteps`` of ``tree_plan(layout, n, gpus_per_node)`` pipelined over chunks: the U
    up steps of ``up_slots``, then the D down steps of ``down_slots`` (chunk 0 first), each step in
    (edge, chunk) order."""
    plan = tree_plan(layout, n, gpus_per_node)
    slot = up_slots(plan, chunks).ravel()
    n_up = len(slot)
    u = int(slot.max()) + 1 if n_up else 0
    down = down_slots(plan, chunks).ravel() + u
    key = np.r_[slot, down]                              # (edge, chunk) up, then (edge, chunk) down
    order = np.argsort(key.astype(np.int16 if key.max(initial=0) < 1 << 15 else np.int64),
                       kind="stable")
    sizes = np.bincount(key, minlength=int(key.max(initial=-1)) + 1)
    up = np.arange(len(sizes)) < u
    step = np.repeat(np.arange(int((sizes > 0).sum())), sizes[sizes > 0])
    pos = np.arange(2 * n_up) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    is_up = order < n_up
    edge, chunk = order % max(n_up, 1) // chunks, order % chunks
    src = np.where(is_up, plan.child[edge], plan.parent[edge])
    dst = np.where(is_up, plan.parent[edge], plan.child[edge])
    cols = [a.astype(np.int32)
            for a in (step, pos, src, dst, plan.tree[edge], chunk, edge, plan.colour[edge])]
    steps = TreeSteps(*cols, up[sizes > 0], int(sizes.max()) if n_up else 0, plan.trees, chunks)
    read_only(*cols, steps.up)
    return steps


def tree_phase(b: ScheduleBuilder, steps: TreeSteps, groups: np.ndarray, seg_off, seg_len,
               channel=0, lanes: tuple[int, int] = (0, 1), fan: int = 0) -> None:
    """Append the pipelined reduce-up / broadcast-down steps of ``steps`` to ``b``.

    groups: (G, n) rank of every tree position in each of G groups (disjoint ranks, or disjoint
    element ranges on other channels). seg_off, seg_len: (G, T) the element range tree t handles in
    group g (length 0: the group does not use tree t). channel: (G,) or scalar, the channel of each
    group. lanes: the lane of the reduce-up and of the broadcast-down transfers (NCCL runs them in
    separate warps). fan: if > 0, a parent's copies down to children of edge colour q > 0 run in
    lane ``fan + q - 1``, beside those of colour 0: NCCL's broadcast sends to every child at once
    (its primitives' FanAsymmetric<1, NCCL_MAX_TREE_ARITY>, device/all_reduce.h runTreeSplit), where
    one lane would send to one child after the other. Every step holds its transfers group by group;
    it is laid out padded to ``steps.width`` per group with zero-length transfers, which
    ``add_steps`` drops.
    """
    groups = np.atleast_2d(np.asarray(groups, np.int64))
    if len(steps.step) == 0:
        return
    c_off, c_len = split_ranges(seg_off, seg_len, steps.chunks)      # (G, T, C)
    shape = (len(steps.up), len(groups), steps.width)
    cols = []
    for values in (groups[:, steps.src], groups[:, steps.dst], c_off[:, steps.tree, steps.chunk],
                   c_len[:, steps.tree, steps.chunk]):
        grid = np.zeros(shape, np.int64)
        grid[steps.step, :, steps.slot] = values.T
        cols.append(grid.reshape(shape[0], -1))
    ch = np.repeat(np.broadcast_to(np.asarray(channel, np.int64), (len(groups),)), steps.width)
    lane = np.zeros(shape, np.int64)
    lane[steps.step, :, steps.slot] = np.where(steps.up[steps.step], lanes[0],
                                               np.where((steps.colour > 0) & (fan > 0),
                                                        fan + steps.colour - 1, lanes[1]))[:, None]
    b.add_steps(*cols, np.where(steps.up, REDUCE, COPY)[:, None], ch[None, :],
                lane.reshape(shape[0], -1))
