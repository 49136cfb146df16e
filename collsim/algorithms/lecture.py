"""The lecture's ring, tree and hierarchical AllReduce, exactly as it describes them, as schedules.

Registered as the teaching-only algorithms ``lecture-ring``, ``lecture-tree`` and
``lecture-hierarchical`` (``collsim check --algo lecture-ring``): listed, built and checked like the
others, never swept. The ring and the tree move the whole buffer in every transfer.
``collsim check`` (``collsim.core.checker.check``) shows where they go wrong:

* ``lecture_ring``: phase 1 (P-1 steps) every rank sends its current buffer to
  rank-1, which adds it; phase 2 (P-1 steps) every rank sends its buffer to
  rank+1, which overwrites its own. After two steps rank r holds
  x_r + 2x_{r+1} + x_{r+2}: step 1 counts contributions twice (P >= 3). Each
  rank sends 2(P-1) x S bytes instead of 2(P-1)/P x S.
* ``lecture_tree``: ranks r < P//2 are parents of r + P//2. In one step every
  parent copies its data to its child and every child adds its data into its
  parent (the child ends with the parent's original data, not the sum); then
  rank 0 copies its buffer to every other rank, one step each (O(P) latency).
  Rank 0 ends with x_0 + x_{P//2}: the sum only for P = 2. For odd P the last
  rank has no parent and only takes part in the broadcast.
* ``lecture_hierarchical``: "AllReduce inside the node first, then between nodes": a ring
  AllReduce of the whole buffer inside every node, a ring AllReduce of the whole buffer between
  the nodes' GPU 0s, then GPU 0 copies the result to the other GPUs of its node (one step). It is
  correct, but every byte that crosses a node boundary goes through GPU 0's NIC: per node
  2(n-1)/n x S on one NIC, where the hierarchical schedule (``collsim.algorithms.hierarchical``)
  spreads 2(n-1)/n x S/G over each of the G GPUs' NICs.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.ring import ring_phases
from collsim.core.compose import ScheduleBuilder
from collsim.core.schedule import COPY, REDUCE, Schedule


def lecture_ring(ranks: int, count: int, itemsize: int = 4) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name="lecture-ring")
    r = np.arange(ranks)
    for _ in range(ranks - 1):
        b.add_step(r, (r - 1) % ranks, 0, count, REDUCE)
    for _ in range(ranks - 1):
        b.add_step(r, (r + 1) % ranks, 0, count, COPY)
    return b.build()


def lecture_tree(ranks: int, count: int, itemsize: int = 4) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name="lecture-tree")
    half = ranks // 2
    parent, child = np.arange(half), np.arange(half) + half
    b.add_step(np.r_[parent, child], np.r_[child, parent], 0, count,
               np.r_[np.full(half, COPY), np.full(half, REDUCE)])
    for dst in range(1, ranks):
        b.add_step([0], [dst], 0, count, COPY)
    return b.build()


def lecture_hierarchical(ranks: int, count: int, itemsize: int = 4,
                         gpus_per_node: int = 1) -> Schedule:
    g = gpus_per_node
    nodes = ranks // g
    b = ScheduleBuilder(ranks, count, itemsize, name="lecture-hierarchical",
                        meta={"gpus_per_node": g})
    grid = np.arange(ranks).reshape(nodes, g)
    if g > 1:                                          # 1. AllReduce inside every node
        ring_phases(b, grid, np.zeros(nodes, np.int64), np.full(nodes, count))
    if nodes > 1:                                      # 2. AllReduce between the nodes' GPU 0s
        ring_phases(b, grid[:, :1].T, np.zeros(1, np.int64), np.full(1, count))
    if g > 1 and nodes > 1:                            # 3. GPU 0 copies the result to its node
        b.add_step(np.repeat(grid[:, 0], g - 1), grid[:, 1:].ravel(), 0, count, COPY)
    return b.build()


LECTURE_RING = Algorithm("lecture-ring",
                         "the lecture's ring pseudo-code: whole buffers, counts contributions "
                         "twice", lecture_ring, lambda p, q: 2 * p * max(p - 1, 0), params=(),
                         teaching_only=True)
LECTURE_TREE = Algorithm("lecture-tree",
                         "the lecture's tree pseudo-code: one exchange, then rank 0 copies to all",
                         lecture_tree, lambda p, q: 2 * p, params=(), teaching_only=True)
LECTURE_HIERARCHICAL = Algorithm(
    "lecture-hierarchical",
    "the lecture's hierarchical AllReduce: inside nodes, between GPU 0s, then a copy in the node",
    lecture_hierarchical,
    lambda p, q: 2 * p * q["gpus_per_node"] + 2 * (p // q["gpus_per_node"]) ** 2 + p,
    params=("gpus_per_node",), needs=("gpus_per_node",), teaching_only=True)
# by name (``collsim.measure.executed``)
LECTURE = {a.name: a.build for a in (LECTURE_RING, LECTURE_TREE)}
