"""Hierarchical AllReduce on nodes x gpus_per_node ranks (rank = node * G + local).

``hierarchical``: (1) ring reduce-scatter inside every node over G shards;
afterwards local GPU l owns shard (l + 1) mod G; (2) the GPUs with the same
local index l in all nodes AllReduce shard (l + 1) mod G across nodes with a
ring (``inter="ring"``) or NCCL's double binary tree (``inter="tree"``),
all G groups at once; (3) ring all-gather inside every node.

``hierarchical-nccl``: NCCL's multi-node tree: inside a node a chain
(GPU l's parent is GPU l-1), GPU 0 of every node joined by the inter-node
double binary tree over nodes; each of the two trees carries half the buffer,
pipelined over chunks (see ``tree_pipeline.tree_phase``).
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms.ring import ring_phases
from collsim.algorithms.tree_pipeline import tree_phase, tree_steps
from collsim.schedule import Schedule, ScheduleBuilder, split_ranges


def hierarchical(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                 inter: str = "ring", slices: int = 1, chunks: int = 1) -> Schedule:
    g = gpus_per_node
    nodes = ranks // g
    grid = np.arange(ranks).reshape(nodes, g)
    b = ScheduleBuilder(ranks, count, itemsize, name="hierarchical",
                        meta={"gpus_per_node": g, "inter": inter, "slices": slices, "chunks": chunks})
    zeros = np.zeros(nodes, np.int64)
    ring_phases(b, grid, zeros, np.full(nodes, count), slices, all_gather=False)
    sh_off, sh_len = split_ranges(np.array([0]), np.array([count]), g)
    owned = (np.arange(g) + 1) % g                       # shard owned by local GPU l
    off, ln = sh_off[0, owned], sh_len[0, owned]
    if inter == "ring":
        ring_phases(b, grid.T, off, ln, slices)
    else:
        seg_off, seg_len = split_ranges(off, ln, 2)
        tree_phase(b, tree_steps("double", nodes, 1, chunks), grid.T, seg_off, seg_len)
    ring_phases(b, grid, zeros, np.full(nodes, count), slices, reduce_scatter=False)
    return b.build()


def hierarchical_nccl(ranks: int, count: int, itemsize: int = 4, gpus_per_node: int = 1,
                      chunks: int = 1) -> Schedule:
    g = gpus_per_node
    b = ScheduleBuilder(ranks, count, itemsize, name="hierarchical-nccl",
                        meta={"gpus_per_node": g, "chunks": chunks})
    off, ln = split_ranges(np.array([0]), np.array([count]), 2)
    tree_phase(b, tree_steps("nccl", ranks, g, chunks), np.arange(ranks)[None, :], off, ln)
    return b.build()
