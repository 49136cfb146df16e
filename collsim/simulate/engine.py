"""The simulator's engine: a ``Plan`` (structure of a schedule on a topology) and its time pass.

Semantics and contention policy are documented in ``collsim.simulate``; this
module makes them fast. ``Plan(schedule, topology)`` precomputes everything
that does not depend on durations: element ranges as segment index ranges,
the resources of every transfer (``collsim.simulate.resources``: two slots held
for the whole transfer, two ports held for its bytes), and per step whether its
ranges are single segments and how its transfers contend
(``collsim.simulate.contention``). Where ranges span many
segments on average, readiness goes through per-endpoint segment trees
(``collsim.simulate.segment_tree``) instead of the flat (endpoint, segment) table.
``Plan.run(durations, wire)`` then walks the steps once; both have one row per
variant (e.g. message size) of the same structure, so a sweep pays the per-step
overhead once for many sizes.
"""
from __future__ import annotations

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.contention import repeats, step_modes
from collsim.simulate.fifo import by_levels, fifo, in_order, one_chain
from collsim.simulate.resources import route
from collsim.simulate.segment_tree import tree_index, tree_size

TREE_SPAN_FACTOR = 2   # segment trees when ranges average over this x tree depth segments (else a flat table)


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


class Plan:
    """Duration-independent structure of ``schedule`` on ``topology``."""

    def __init__(self, schedule: Schedule, topology: Topology):
        s = schedule
        self.ranks, n, ends = s.endpoints, s.n_transfers, s.offset + s.length
        self.src, self.dst, self.step_ptr = s.src, s.dst, s.step_ptr
        if n and (s.src.min() < 0 or s.dst.min() < 0 or max(s.src.max(), s.dst.max()) >= s.endpoints):
            raise CollsimError(f"schedule names a rank outside 0..{s.endpoints - 1}")
        if n and (s.offset.min() < 0 or s.length.min() < 0 or ends.max() > s.count):
            raise CollsimError(f"schedule has an element range outside its buffer of {s.count} elements")
        self.routes = route(s.src, s.dst, s.channel, s.ranks, topology)
        self.sa, self.sb, self.nseg = segments(s.offset, ends)
        reduce = s.op == REDUCE
        self.table_size = self.ranks * self.nseg + 1      # + a cell that stays 0 (what a copy reads on its receiver)
        N, span = tree_size(self.nseg), self.sb - self.sa
        self.tree = None                                  # per-endpoint segment trees when ranges are long on average
        if self.nseg > 1 and int(span.sum()) > TREE_SPAN_FACTOR * n * N.bit_length():
            self.tree = tree_index(self.src, self.dst, self.sa, self.sb, N, self.ranks, s.step_ptr)
            self.tree_rr = tree_index(self.dst, self.dst, self.sa, np.where(reduce, self.sb, self.sa), N,
                                      self.ranks, s.step_ptr)[:2]
            self.table_size = self.tree[4]
        # Data readiness reads the sender's (endpoint, segment) rows and, for a reduce, the receiver's.
        zero = self.ranks * self.nseg
        row = np.int32 if self.table_size < 1 << 31 else np.int64
        self.rs = (self.src * self.nseg + self.sa).astype(row)         # rows, used where spans are 1
        self.rd = (self.dst * self.nseg + self.sa).astype(row)
        self.rr = self.rd.copy()
        self.rr[~reduce] = zero
        self.reduce = reduce
        n_steps = s.n_steps
        step_of = np.repeat(np.arange(n_steps, dtype=np.int32), np.diff(s.step_ptr))
        keys, sizes = self.routes.keys, self.routes.sizes
        valid = [self.routes.valid(k) for k in range(4)]
        modes = step_modes(s.step_ptr, step_of, s.channel, keys, sizes, valid,
                           topology.nodes == 1 or topology.nics_per_node == topology.gpus_per_node)
        self.spare_used = [not v.all() for v in valid]
        self.unique_writes = ~repeats(step_of, self.rd, self.ranks * self.nseg, n_steps) if self.tree is None \
            else np.zeros(n_steps, dtype=bool)
        nonempty = np.flatnonzero(np.diff(s.step_ptr) > 0)
        starts = s.step_ptr[nonempty]
        single = np.zeros(n_steps, dtype=bool)
        if len(starts):
            single[nonempty] = np.logical_and.reduceat(span == 1, starts)
        self.flags = list(zip(s.step_ptr[:-1].tolist(), s.step_ptr[1:].tolist(), single.tolist(), modes))

    def same_structure(self, other: "Plan") -> bool:
        """True if ``other`` differs from this plan at most in durations."""
        return (self.ranks == other.ranks and self.nseg == other.nseg and self.routes.sizes == other.routes.sizes
                and all(np.array_equal(getattr(self, k), getattr(other, k))
                        for k in ("step_ptr", "src", "dst", "sa", "sb", "reduce"))
                and all(np.array_equal(a, b) for a, b in zip(self.routes.keys, other.routes.keys)))

    # ------------------------------------------------------------ time pass
    def run(self, dur: np.ndarray, wire: np.ndarray, progress=None) -> tuple[np.ndarray, np.ndarray]:
        """Start and end (seconds) of every transfer; ``dur`` (slot hold = duration) and ``wire`` (port
        hold, bytes x beta) and both results have shape (variants, transfers). ``progress``: a callable
        told the number of transfers done after each step, or None.

        Variants are simulated as disjoint copies of the structure in flat 1-D
        tables, interleaved (row r of copy k is entry r * K + k, so a gather
        reads K neighbours), which keeps every numpy call a fast gather, scatter
        or ``maximum.at`` on a 1-D table. Inside, arrays are (transfers, K).
        """
        K = dur.shape[0]
        dur, wire = (a.T if K == 1 else np.ascontiguousarray(a.T) for a in (dur, wire))
        copies = np.arange(K)[None, :]
        lift = (lambda idx: idx[:, None]) if K == 1 else (lambda idx: idx[:, None] * K + copies)
        tab = self.table_size
        W = np.zeros(K * tab)                            # latest write end per (endpoint, segment)
        sizes = self.routes.sizes
        free = [np.zeros(K * size) for size in sizes]    # when each resource row is free
        spare = [slice((size - 1) * K, size * K) for size in sizes]
        resets = [(f, sp) for f, sp, used in zip(free, spare, self.spare_used) if used]   # rows that must stay 0
        start, end = np.empty_like(dur), np.empty_like(dur)
        for k, (lo, hi, single, mode) in enumerate(self.flags):
            if lo == hi:
                continue
            if self.tree is not None:
                ready, writes, wend = self._ready_tree(W, k, lo, hi, lift)
            elif single:
                ready = np.maximum(W.take(lift(self.rs[lo:hi])), W.take(lift(self.rr[lo:hi])))
                writes, wend = lift(self.rd[lo:hi]), None
            else:
                ready, writes, wend = self._ready_multi(W, lo, hi, lift)
            d, w = dur[lo:hi], wire[lo:hi]
            res = [(f, lift(key[lo:hi]), h) for f, key, h in zip(free, self.routes.keys, (d, d, w, w))]
            if mode is None:
                st, en = fifo(ready, d, res)
            elif mode[0] == "runs":
                st, en = np.empty_like(ready), np.empty_like(ready)
                for a, b in zip(mode[1][:-1].tolist(), mode[1][1:].tolist()):
                    da, wa = d[a:b], w[a:b]
                    st[a:b], en[a:b] = fifo(ready[a:b], da, [(f, key[a:b], da if h is d else wa)
                                                             for f, key, h in res])
                    for f, sp in resets:
                        f[sp] = 0.0
            elif mode[0] == "seq":
                st, en = in_order(ready, d, res, mode[1])
            elif mode[0] == "one":
                st, en = one_chain(ready, d, res, mode[1:3], (d, w)[mode[3]])
            else:
                st, en = by_levels(ready, d, res, mode[1], mode[2], spare)
            for f, sp in resets:
                f[sp] = 0.0                              # the spare rows hold nothing
            start[lo:hi], end[lo:hi] = st, en
            vals = en if wend is None else en[wend]
            if writes.ndim == 3:                        # segment trees: (cells, transfers, variants)
                vals = np.broadcast_to(en, writes.shape)
            if wend is None and self.unique_writes[k]:   # each cell written once: plain indexing
                W[writes.ravel()] = np.maximum(W[writes.ravel()], vals.ravel())
            else:
                np.maximum.at(W, writes.ravel(), vals.ravel())
            if progress is not None:
                progress(hi - lo)
        return start.T, end.T

    def _ready_tree(self, W, k, lo, hi, lift):
        """``_ready_multi`` through the segment trees of ``collsim.simulate.segment_tree``, for step ``k``."""
        read, rptr, write, wptr, tab = self.tree
        m, K = hi - lo, len(W) // tab
        ready = np.zeros((m, K))
        for cells_all, ptr in ((read, rptr), self.tree_rr):
            cells, width = cells_all[ptr[k]:ptr[k + 1]], (ptr[k + 1] - ptr[k]) // m
            if width:
                np.maximum(ready, W.take(lift(cells)).reshape(width, m, K).max(axis=0), out=ready)
        writes = lift(write[wptr[k]:wptr[k + 1]]).reshape((wptr[k + 1] - wptr[k]) // m, m, K)
        return ready, writes, None

    def _ready_multi(self, W, lo, hi, lift):
        """Readiness of a step with multi-segment ranges; also its write rows and their owners."""
        sa, span = self.sa[lo:hi], self.sb[lo:hi] - self.sa[lo:hi]
        first = np.cumsum(span) - span
        seg = np.repeat(sa - first, span) + np.arange(int(span.sum()))
        owner = np.repeat(np.arange(hi - lo), span)
        m, K = hi - lo, len(W) // self.table_size
        dst = self.dst[lo:hi][owner] * self.nseg + seg
        vals = np.maximum(W.take(lift(self.src[lo:hi][owner] * self.nseg + seg)),
                          W.take(lift(np.where(self.reduce[lo:hi][owner], dst, self.ranks * self.nseg))))
        ready = np.zeros((m, K))
        has = np.flatnonzero(span > 0)                  # zero-length transfers read nothing
        if len(has):
            ready[has] = np.maximum.reduceat(vals, first[has], axis=0)
        return ready, lift(dst), owner
