"""Pipelined tree AllReduce: NCCL's double binary tree, and one binary tree.

Each tree reduces and broadcasts its own segment of the buffer (the double
tree gives each tree half), cut into ``chunks`` pipeline chunks. Shapes:
``collsim.algorithms.tree_shapes``; the steps of every (edge, chunk) transfer:
``collsim.algorithms.tree_pipeline``.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms.tree_pipeline import tree_phase, tree_steps
from collsim.schedule import Schedule, ScheduleBuilder, split_ranges


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
