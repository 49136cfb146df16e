"""Reference algorithms: Rabenseifner halving-doubling, recursive doubling, direct.

Non-power-of-two P (Thakur, Rabenseifner and Gropp 2005): with p' the largest
power of two <= P and r = P - p', first every even rank 2i < 2r adds its whole
buffer into rank 2i+1; the p' remaining ranks (odd ranks below 2r and all ranks
from 2r on) run the power-of-two algorithm; last every rank 2i+1 copies the
result back to rank 2i.
"""
from __future__ import annotations

import numpy as np

from collsim.schedule import COPY, REDUCE, Schedule, ScheduleBuilder, split_even


def fold(ranks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(active ranks of length p', evens that fold in, odds they fold into)."""
    p2 = 1 << (ranks.bit_length() - 1)
    r = ranks - p2
    active = np.r_[np.arange(1, 2 * r, 2), np.arange(2 * r, ranks)].astype(np.int64)
    return active, np.arange(0, 2 * r, 2, dtype=np.int64), np.arange(1, 2 * r, 2, dtype=np.int64)


def _with_fold(name: str, ranks: int, count: int, itemsize: int, body) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name=name)
    active, evens, odds = fold(ranks)
    b.add_step(evens, odds, 0, count, REDUCE)
    body(b, active)
    b.add_step(odds, evens, 0, count, COPY)
    return b.build()


def recursive_doubling(ranks: int, count: int, itemsize: int = 4) -> Schedule:
    """log2(p') steps: rank i adds its whole buffer into partner i ^ d, d = 1, 2, 4, ..."""
    def body(b, active):
        i = np.arange(len(active))
        d = 1
        while d < len(active):
            b.add_step(active, active[i ^ d], 0, count, REDUCE)
            d *= 2
    return _with_fold("recursive-doubling", ranks, count, itemsize, body)


def halving_doubling(ranks: int, count: int, itemsize: int = 4) -> Schedule:
    """Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive doubling.

    With p' chunks (``split_even``), halving step d = p'/2, ..., 1: index i keeps
    chunks [base, base+2d) half given by bit d of i and adds the other half into
    partner i ^ d (base = i with its low log2(2d) bits cleared). Index i then owns
    chunk i; doubling reverses the steps with copies.
    """
    def body(b, active):
        p2 = len(active)
        off, ln = split_even(count, p2)
        edge = np.r_[off, count]
        i = np.arange(p2)
        dists = [p2 >> k for k in range(1, p2.bit_length())]     # p'/2, ..., 1
        for d in dists:
            base = i & ~(2 * d - 1)
            send_lo = np.where(i & d, base, base + d)
            b.add_step(active, active[i ^ d], edge[send_lo], edge[send_lo + d] - edge[send_lo], REDUCE)
        for d in reversed(dists):
            lo = i & ~(d - 1)
            b.add_step(active, active[i ^ d], edge[lo], edge[lo + d] - edge[lo], COPY)
    return _with_fold("halving-doubling", ranks, count, itemsize, body)


def direct(ranks: int, count: int, itemsize: int = 4) -> Schedule:
    """One-shot: one step in which every rank adds its buffer into every other rank.

    Transfers are listed round by round (round k: rank i -> i + k), so that with
    FIFO ports every round uses each send and receive port once.
    """
    b = ScheduleBuilder(ranks, count, itemsize, name="direct")
    k = np.repeat(np.arange(1, ranks), ranks)
    src = np.tile(np.arange(ranks), ranks - 1)
    b.add_step(src, (src + k) % ranks, 0, count, REDUCE)
    return b.build()
