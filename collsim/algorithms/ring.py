"""Ring AllReduce: reduce-scatter then all-gather around a ring, 2(P-1) steps.

The buffer is cut into P chunks (``split_even``, so any count works, also
count < P); with ``slices`` S every chunk is cut again into S slices and every
ring step becomes S steps, one per slice (NCCL's pipelining of a chunk into
slices). Rank i sends to rank i+1. Reduce-scatter step k (k = 0..P-2): rank i
sends chunk (i - k) mod P, the receiver adds it; afterwards rank i owns the
full sum of chunk (i + 1) mod P. All-gather step k: rank i sends chunk
(i + 1 - k) mod P, the receiver overwrites its copy.

``ring_phases`` runs the same pattern on many disjoint rank groups at once, each
on its own element range; the hierarchical algorithms reuse it.
"""
from __future__ import annotations

import numpy as np

from collsim.schedule import COPY, REDUCE, Schedule, ScheduleBuilder, split_ranges


def ring_phases(b: ScheduleBuilder, groups: np.ndarray, offset, length, slices: int = 1,
                reduce_scatter: bool = True, all_gather: bool = True) -> None:
    """Append ring reduce-scatter and/or all-gather steps to ``b``.

    groups: (G, n) rank matrix; row g is one ring (position i sends to i+1).
    offset, length: (G,) element range each ring reduces (its own buffer part).
    After the reduce-scatter, position i owns chunk (i + 1) mod n of its range.
    """
    groups = np.atleast_2d(np.asarray(groups, np.int64))
    n = groups.shape[1]
    if n < 2:
        return
    chunk_off, chunk_len = split_ranges(offset, length, n)          # (G, n)
    sl_off, sl_len = split_ranges(chunk_off, chunk_len, slices)     # (G, n, S)
    g = groups.shape[0]
    src = groups.ravel()
    dst = np.roll(groups, -1, axis=1).ravel()
    gi = np.repeat(np.arange(g), n)
    k = np.arange(n - 1)[:, None, None]
    s = np.arange(slices)[None, :, None]
    phases = ([(REDUCE, 0)] if reduce_scatter else []) + ([(COPY, 1)] if all_gather else [])
    for op, shift in phases:
        chunk = (np.tile(np.arange(n), g)[None, None, :] + shift - k) % n   # (n-1, 1, G*n)
        shape = ((n - 1) * slices, g * n)
        b.add_steps(src, dst, sl_off[gi, chunk, s].reshape(shape), sl_len[gi, chunk, s].reshape(shape), op)

def ring(ranks: int, count: int, itemsize: int = 4, slices: int = 1) -> Schedule:
    """Ring AllReduce of ``count`` elements on ``ranks`` ranks, 2(P-1)*slices steps."""
    b = ScheduleBuilder(ranks, count, itemsize, name="ring", meta={"slices": slices})
    ring_phases(b, np.arange(ranks)[None, :], [0], [count], slices)
    return b.build()
