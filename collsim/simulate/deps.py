"""What every transfer waits for before it starts: the dependency lists of the "ready" engine
(``collsim.simulate.events``), built once per schedule structure.

- Data: for every element i reads (on its sender, and on its receiver if it reduces), the transfers of the
  last earlier step that wrote it (``collsim.simulate.reference`` rule 1).
- Engine: the transfer before i on its engine (rule 2), whose end i waits for.
- Window: the transfer ``window`` places before i on its connection (rule 3), whose arrival i waits for.

Cells are (endpoint, segment) with segments between the schedule's breakpoints (``segments``).
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule


def _grid(offset: np.ndarray, end: np.ndarray) -> int:
    """A common divisor of every offset and end, large where the breakpoints sit on a grid: the gcd of a
    sample, kept when it divides them all (one vectorized check), else the gcd of all of them."""
    sample = np.concatenate([offset[:: max(1, len(offset) // 4096)], end[:: max(1, len(end) // 4096)]])
    g = int(np.gcd.reduce(sample)) or 1
    if g > 1 and not ((offset % g == 0).all() and (end % g == 0).all()):
        g = int(np.gcd.reduce(np.concatenate([offset, end]))) or 1
    return g


def segments(offset: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Map element ranges [offset, end) to segment index ranges [sa, sb).

    Segments lie between consecutive breakpoints (all offsets and ends).
    Looking values up avoids a general sort and binary search: a direct-address
    table when the breakpoints sit on a small grid, else a perfect hash
    (value mod M) of the sorted breakpoints. Ring AllReduce on 1024 ranks maps
    its 2.1 M ranges in tens of milliseconds either way.
    """
    if len(offset) == 0:
        return offset.copy(), end.copy(), 0
    g = _grid(offset, end)
    a, b = (offset, end) if g == 1 else (offset // g, end // g)
    hi = int(b.max()) + 1
    if hi <= max(1 << 22, 4 * len(offset)):
        mark = np.zeros(hi, dtype=bool)
        mark[a] = True
        mark[b] = True
        idx = np.cumsum(mark, dtype=np.int64) - 1
        idx = idx.astype(np.int32) if len(idx) < 1 << 31 else idx
        return idx[a], idx[b], int(idx[-1])
    srt = np.sort(np.concatenate([offset, end]), kind="stable")   # radix/timsort: fast on these runs
    bp = srt[np.concatenate([[True], srt[1:] != srt[:-1]])]
    for modulus in range(8 * len(bp) + 1, 8 * len(bp) + 9, 2):   # a few tries, then binary search
        slot = bp % modulus
        if len(np.unique(slot)) == len(bp):
            table = np.zeros(modulus, dtype=np.int64)
            table[slot] = np.arange(len(bp))
            return table[offset % modulus], table[end % modulus], len(bp) - 1
    return np.searchsorted(bp, offset), np.searchsorted(bp, end), len(bp) - 1


def _previous(key: np.ndarray, lag: int) -> np.ndarray:
    """For every transfer the one ``lag`` places before it (schedule order) with the same key, -1 if none."""
    out = np.full(len(key), -1, np.int64)
    if lag < 1 or not len(key):
        return out
    order = np.lexsort((np.arange(len(key)), key))
    k = key[order]
    same = np.zeros(len(key), dtype=bool)
    same[lag:] = k[lag:] == k[:-lag]
    out[order[same]] = order[np.flatnonzero(same) - lag]
    return out


def engine_keys(s: Schedule) -> np.ndarray:
    """The engine of every transfer: (GPU side, channel, lane) as one integer."""
    gpu = np.where(s.src >= s.ranks, s.dst, s.src)
    return (gpu * (int(s.channel.max(initial=0)) + 1) + s.channel) * 256 + s.lane


def structural(s: Schedule, window: int) -> tuple[np.ndarray, np.ndarray]:
    """(engine predecessor, window predecessor) of every transfer, -1 where there is none."""
    conn = (s.src * s.endpoints + s.dst) * (int(s.channel.max(initial=0)) + 1) + s.channel
    return _previous(engine_keys(s), 1), _previous(conn, window)


def _expand(owner_lo: np.ndarray, owner_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index into the owners, position) of every position of the ranges [lo, hi), owners in order."""
    span = owner_hi - owner_lo
    idx = np.repeat(np.arange(len(span), dtype=np.int64), span)
    first = np.cumsum(span) - span
    return idx, np.arange(int(span.sum()), dtype=np.int64) - first[idx] + owner_lo[idx]


def data_deps(s: Schedule, sa: np.ndarray, sb: np.ndarray, nseg: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, deps) of every transfer's data dependencies (module docstring); ``sa``/``sb``: its segment
    range. Vectorized: every (cell, step) write sorted once, every read looked up in it."""
    n, steps = s.n_transfers, s.n_steps + 1
    step = s.step_index.astype(np.int64)
    # writes: one record per (transfer, segment) on its receiver
    w_t, w_seg = _expand(sa.astype(np.int64), sb.astype(np.int64))
    w_key = (s.dst[w_t] * nseg + w_seg) * steps + step[w_t]
    order = np.argsort(w_key, kind="stable")
    w_key, w_t = w_key[order], w_t[order]
    # reads: on the sender, and on the receiver for a reduce
    red = np.flatnonzero(s.op == REDUCE)
    r_own = np.concatenate([np.arange(n, dtype=np.int64), red])
    r_end = np.concatenate([s.src, s.dst[red]])
    r_i, r_seg = _expand(sa[r_own].astype(np.int64), sb[r_own].astype(np.int64))
    r_t = r_own[r_i]
    cell = r_end[r_i] * nseg + r_seg
    before = np.searchsorted(w_key, cell * steps + step[r_t], side="left") - 1   # the last write key < (cell, step)
    ok = before >= 0
    ok[ok] = w_key[before[ok]] // steps == cell[ok]
    key = w_key[before[ok]]
    lo = np.searchsorted(w_key, key, side="left")
    hi = before[ok] + 1
    g_i, g_pos = _expand(lo, hi)
    pairs = np.sort(r_t[ok][g_i] * n + w_t[g_pos])
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    owner, dep = pairs // n, pairs % n
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=ptr[1:])
    return ptr, dep
