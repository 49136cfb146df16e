"""Pipelined tree AllReduce: NCCL's double binary tree over all ranks, and one binary tree.

The buffer is cut into C channel parts; on each channel each tree reduces and
broadcasts its own segment of the part (the double tree gives each tree half),
cut into ``chunks`` pipeline chunks; all channels run the same trees on the same
ranks, all channels of a step in one schedule step. Shapes:
``collsim.algorithms.tree_shapes``; the steps of every (edge, chunk) transfer:
``collsim.algorithms.tree_pipeline``. Default chunks follow NCCL's Tree Simple
chunk (``tree_chunks``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.timing import chain, step
from collsim.algorithms.tree_pipeline import tree_phase, tree_steps
from collsim.algorithms.tree_plan import MAX_TREE_POSITIONS
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import Schedule

# NCCL's Tree Simple chunk since 2.20.3 (enqueue.cc calcCollChunking; v2.19.4 :1349-1355 shrank it)
TREE_CHUNK_BYTES = 512 << 10
# beyond 512 MiB per tree segment chunks grow instead (bounds the schedule)
MAX_DEFAULT_CHUNKS = 1024


def tree_chunks(segment_bytes: int, chunk_bytes: int = TREE_CHUNK_BYTES) -> int:
    """Pipeline chunks of a segment of ``segment_bytes`` as NCCL cuts it per channel
    (enqueue.cc:656-669 computes chunks per channel): ceil(bytes / chunk_bytes), 1 to
    ``MAX_DEFAULT_CHUNKS``."""
    return int(min(max(-(-int(segment_bytes) // chunk_bytes), 1), MAX_DEFAULT_CHUNKS))


def channel_parts(count: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, lengths) of the C channel parts of a buffer of ``count`` elements."""
    off, ln = split_ranges(np.array([0]), np.array([count]), channels)
    return off[0], ln[0]


def _run(name: str, layout: str, ranks: int, count: int, itemsize: int, chunks: int,
         channels: int) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name=name,
                        meta={"chunks": chunks, "channels": channels})
    steps = tree_steps(layout, ranks, 1, chunks)
    part_off, part_len = channel_parts(count, channels)
    off, ln = split_ranges(part_off, part_len, steps.trees)                 # (C, T)
    tree_phase(b, steps, np.tile(np.arange(ranks), (channels, 1)), off, ln, np.arange(channels))
    return b.build()


def binary_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1,
                channels: int = 1) -> Schedule:
    """One NCCL binary tree per channel carrying the channel's part, pipelined over ``chunks``."""
    return _run("binary-tree", "binary", ranks, count, itemsize, chunks, channels)


def double_tree(ranks: int, count: int, itemsize: int = 4, chunks: int = 1,
                channels: int = 1) -> Schedule:
    """NCCL's double binary tree per channel: each tree carries
    half the channel's part, pipelined over ``chunks``."""
    return _run("double-tree", "double", ranks, count, itemsize, chunks, channels)


@lru_cache(maxsize=4096)
def up_down_steps(layout: str, n: int, chunks: int, gpus_per_node: int = 1) -> tuple[int, int]:
    """(U, D): the reduce-up and broadcast-down steps of ``tree_steps(layout, n, g, chunks)``.

    Past ``MAX_TREE_POSITIONS`` (no plan is built there) the binary and double trees take
    ``levelled_steps``: exact for a power of two, an upper bound otherwise
    (tests/algorithms/test_tree.py checks both against the planned steps)."""
    if n > MAX_TREE_POSITIONS and layout in ("binary", "double") and gpus_per_node == 1:
        steps = levelled_steps(n, chunks)
        return steps, steps
    up = tree_steps(layout, n, gpus_per_node, chunks).up
    return int(up.sum()), int((~up).sum())


def levelled_steps(n: int, chunks: int) -> int:
    """Up (= down) steps of the pipelined binary or double tree on n >= 4 positions and ``chunks``
    chunks without planning it: 2 (ceil(log2 n) + chunks) - 3. Each of the ceil(log2 n) levels costs
    two steps (a parent takes its two children one after the other, the edge colouring's K = 2), the
    last level one, and every further chunk two. Exact when n is a power of two, and no plan of n
    positions takes more steps than the plan of the next power of two: so an upper bound
    otherwise."""
    return 2 * ((int(n) - 1).bit_length() + int(chunks)) - 3


def _tree_time(layout: str, trees: int):
    """Closed form of ``layout``'s trees on C channels: U up steps (reduce) then D down steps (copy)
    of m = N/(T C chunks) bytes, ``timing.chain``."""
    def time(p: int, nb, links, params: dict):
        c, k = params["channels"], params["chunks"]
        (u, d), m = up_down_steps(layout, p, k), nb / (trees * k * c)
        return chain([(*step(m, links.alpha, links.beta, links.gamma), u),
                      (*step(m, links.alpha, links.beta, 0.0), d)], c)
    return time


TREE_EXACT = ('an upper bound under policy "schedule": every step of the form pays alpha, where '
              "the simulation sends a parent's second child, and the next chunk, as soon as the "
              'first has left; no bound under policy "fair" (the default), where the reduce and '
              "the broadcast share ports: mostly below, at times above")
TREE = Algorithm(
    "double-tree",
    "NCCL's double binary tree over all ranks per channel, each tree half the part, pipelined over "
    "chunks", double_tree, lambda p, q: 4 * (p - 1) * q["chunks"] * q["channels"],
    params=("chunks", "channels"),
    default_chunks=lambda nbytes, p, q: tree_chunks(nbytes // (2 * q["channels"])),
    closed_form=_tree_time("double", 2), granularity=lambda p, q: 2 * q["chunks"] * q["channels"],
    formula="U up steps then D down steps of m = N/(2 C chunks), U and D from "
            "tree_pipeline.up_slots and down_slots: timing.chain; one channel: (U + D) (alpha + m "
            "beta) + U m gamma", exact=TREE_EXACT)
BINARY_TREE = Algorithm(
    "binary-tree", "one binary tree per channel: reduce up, broadcast down, pipelined over chunks",
    binary_tree, lambda p, q: 2 * (p - 1) * q["chunks"] * q["channels"],
    params=("chunks", "channels"),
    default_chunks=lambda nbytes, p, q: tree_chunks(nbytes // q["channels"]),
    closed_form=_tree_time("binary", 1), granularity=lambda p, q: q["chunks"] * q["channels"],
    formula="U up steps then D down steps of m = N/(C chunks): timing.chain; one channel: (U + D) "
            "(alpha + m beta) + U m gamma", exact=TREE_EXACT)
