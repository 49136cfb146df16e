"""Data readiness over long element ranges: index lists into a per-rank segment tree.

The simulator keeps, per (rank, segment), the latest end (seconds) of a write
to it, and a transfer is ready at the max over its sender's segments. When
ranges span many segments (halving-doubling: up to half the buffer), reading
every segment costs more than the transfers. A segment tree over the
``N`` (a power of two) segments of each rank answers both operations with
O(log N) nodes, without lazy propagation, using two values per node:

* TAG[v]: max end of writes whose range decomposes into v (covers all of v);
* AGG[v]: max end of writes that touch v's leaves.

A range [l, r) splits into its canonical nodes C (maximal nodes inside it)
and A, the nodes that meet it without lying inside (exactly the proper
ancestors of C). A write of end t does TAG[C] = max(., t) and
AGG[C + A] = max(., t); a read is max(AGG[C], TAG[A]). Every write that
overlaps the range is seen (its canonical node lies under some node of C, or
meets the range without lying inside it, so is in A), and no other: the
result is the same max as over the segments, bit for bit.
"""
from __future__ import annotations

import numpy as np


def tree_size(nseg: int) -> int:
    """Leaves N of the segment tree over ``nseg`` segments (a power of two >= 1)."""
    return 1 << int(max(0, nseg - 1)).bit_length()


def tree_index(src: np.ndarray, dst: np.ndarray, sa: np.ndarray, sb: np.ndarray, N: int, ranks: int,
               step_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Per-step dense read and write index blocks of every transfer into the tree tables.

    Table layout, node-major (a step's transfers touch few nodes, on many
    ranks): rank p's AGG node v at v * ranks + p, its TAG node v at
    (2N + v) * ranks + p; then one cell that stays 0 (padding of reads) and one
    that takes padding writes. Step k's transfers i read the cells
    ``read[rptr[k]:rptr[k + 1]]`` reshaped to (width, transfers) and write
    likewise through ``write`` and ``wptr``. Returns (read, rptr, write,
    wptr, table size).
    """
    n = len(src)
    zero, dump = 4 * N * ranks, 4 * N * ranks + 1
    rcount, wcount = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    reads, writes = [], []                              # (owner, slot, cell)

    def emit(out, count, who, cells):
        slot = count[who]
        count[who] += 1
        out.append((who, slot, cells))

    ids = np.flatnonzero(sb > sa)
    lo, hi = sa[ids], sb[ids]
    L, R, who = lo + N, hi + N, ids
    def canonical(w, node):
        emit(reads, rcount, w, node * ranks + src[w])
        emit(writes, wcount, w, (2 * N + node) * ranks + dst[w])
        emit(writes, wcount, w, node * ranks + dst[w])

    while len(who):                                     # canonical nodes, bottom-up
        odd = (L & 1) == 1
        canonical(who[odd], L[odd])
        L = L + odd
        odd = (R & 1) == 1
        R = R - odd
        canonical(who[odd], R[odd])
        L, R = L >> 1, R >> 1
        live = L < R
        L, R, who = L[live], R[live], who[live]
    for h in range(1, N.bit_length()):                  # nodes meeting the range without lying inside
        for leaf, skip in ((lo, None), (hi - 1, (lo + N) >> h)):
            node = (leaf + N) >> h
            first = (leaf >> h) << h
            meet = (first < lo) | (first + (1 << h) > hi)
            if skip is not None:
                meet &= node != skip
            w, node = ids[meet], node[meet]
            emit(reads, rcount, w, (2 * N + node) * ranks + src[w])
            emit(writes, wcount, w, node * ranks + dst[w])
    return _blocks(reads, rcount, step_ptr, zero) + _blocks(writes, wcount, step_ptr, dump) + (dump + 1,)


def _blocks(entries: list, count: np.ndarray, step_ptr: np.ndarray, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """Place (owner, slot, cell) entries into per-step (widest, transfers) blocks padded with ``pad``."""
    m = np.diff(step_ptr)
    width = np.zeros(len(m), dtype=np.int64)
    has = m > 0
    if count.size:
        width[has] = np.maximum.reduceat(count, step_ptr[:-1][has])
    ptr = np.concatenate([[0], np.cumsum(m * width)])
    out = np.full(int(ptr[-1]), pad, dtype=np.int64)
    step = np.repeat(np.arange(len(m)), m)
    for who, slot, cells in entries:
        k = step[who]
        out[ptr[k] + slot * m[k] + who - step_ptr[k]] = cells
    return out, ptr
