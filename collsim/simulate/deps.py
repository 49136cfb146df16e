"""What every transfer waits for before it starts: the dependency lists of the "ready" engine
(``collsim.simulate.events``), built once per schedule structure.

- Data: for every element i reads (on its sender, and on its receiver if it reduces), the transfers
  of the last earlier step that wrote it (``collsim.simulate.reference`` rule 1).
- Engine: the transfer before i on its engine (rule 2), whose end i waits for.
- Window: the transfer ``window`` places before i on its
  connection (rule 3), whose arrival i waits for.

Cells are (endpoint, segment) with segments between the schedule's breakpoints (``segments``).
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.simulate.jit import jit, pick


def _grid(offset: np.ndarray, end: np.ndarray) -> int:
    """A common divisor of every offset and end, large where the breakpoints sit on a grid: the gcd
    of a sample, kept when it divides them all (one vectorized check), else the gcd of all of
    them."""
    sample = np.concatenate([offset[:: max(1, len(offset) // 4096)],
                             end[:: max(1, len(end) // 4096)]])
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
    srt = np.sort(np.concatenate([offset, end]), kind="stable")  # radix/timsort: fast on these runs
    bp = srt[np.concatenate([[True], srt[1:] != srt[:-1]])]
    for modulus in range(8 * len(bp) + 1, 8 * len(bp) + 9, 2):   # a few tries, then binary search
        slot = bp % modulus
        if len(np.unique(slot)) == len(bp):
            table = np.zeros(modulus, dtype=np.int64)
            table[slot] = np.arange(len(bp))
            return table[offset % modulus], table[end % modulus], len(bp) - 1
    return np.searchsorted(bp, offset), np.searchsorted(bp, end), len(bp) - 1


def _previous(key: np.ndarray, lag: int) -> np.ndarray:
    """For every transfer the one ``lag`` places before it
    (schedule order) with the same key, -1 if none."""
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


def ranges(s: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Every transfer's segment range read (sa, sb) and written (da, db: the same arrays unless it
    has a ``dst_offset``), and the number of segments (``segments`` of all of them)."""
    if not s.shifted:
        sa, sb, nseg = segments(s.offset, s.offset + s.length)
        return sa, sb, sa, sb, nseg
    a, b, nseg = segments(np.r_[s.offset, s.dst_offset],
                          np.r_[s.offset, s.dst_offset] + np.r_[s.length, s.length])
    n = s.n_transfers
    return a[:n], b[:n], a[n:], b[n:], nseg


@jit
def _deps(step_ptr, src, dst, reduce, sa, sb, da, db, nseg, cells):
    """(owner, dep) pairs in transfer order (module docstring): steps in order, each step's reads
    against the writes of earlier steps, then its writes. A cell keeps the step that last wrote it
    and that step's writers (a list through ``nxt``); a transfer's deps are counted once
    (``mark``)."""
    n, writes = len(src), 0
    for i in range(n):
        writes += db[i] - da[i]
    head = np.full(cells, -1, np.int64)
    last = np.full(cells, -1, np.int64)
    who, nxt = np.empty(writes, np.int64), np.empty(writes, np.int64)
    mark = np.full(n, -1, np.int64)
    owner, dep = np.empty(max(writes, 16), np.int64), np.empty(max(writes, 16), np.int64)
    used, rec = 0, 0
    for step in range(len(step_ptr) - 1):
        for i in range(step_ptr[step], step_ptr[step + 1]):
            for side in range(2):
                if side == 1 and not reduce[i]:
                    break
                end, lo, hi = (src[i], sa[i], sb[i]) if side == 0 else (dst[i], da[i], db[i])
                for g in range(lo, hi):
                    r = head[end * nseg + g]
                    while r >= 0:
                        w = who[r]
                        if mark[w] != i:
                            mark[w] = i
                            if used == len(owner):
                                owner = np.concatenate((owner, np.empty(used, np.int64)))
                                dep = np.concatenate((dep, np.empty(used, np.int64)))
                            owner[used], dep[used] = i, w
                            used += 1
                        r = nxt[r]
        for i in range(step_ptr[step], step_ptr[step + 1]):
            for g in range(da[i], db[i]):
                cell = dst[i] * nseg + g
                if last[cell] != step:
                    last[cell], head[cell] = step, -1
                who[rec], nxt[rec], head[cell] = i, head[cell], rec
                rec += 1
    return owner[:used], dep[:used]


def data_deps(s: Schedule, sa: np.ndarray, sb: np.ndarray, nseg: int, da=None,
              db=None) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, deps) of every transfer's data dependencies (module docstring); ``sa``/``sb``: its
    segment range read, ``da``/``db`` written (default: the same, ``ranges``); compiled
    (``collsim.simulate.jit``), one pass over the steps."""
    da, db = (sa, sb) if da is None else (da, db)
    cols = (a.astype(np.int64) for a in (sa, sb, da, db))
    owner, dep = pick(_deps, s.n_transfers)(s.step_ptr, s.src, s.dst, s.op == REDUCE, *cols, nseg,
                                            s.endpoints * max(nseg, 1))
    ptr = np.zeros(s.n_transfers + 1, np.int64)            # owners come in order: a CSR as they are
    np.cumsum(np.bincount(owner, minlength=s.n_transfers), out=ptr[1:])
    return ptr, dep
