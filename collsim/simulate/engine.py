"""The simulator's engine: a ``Plan`` (structure of a schedule on a topology) and its time pass.

Semantics and contention policy are documented in ``collsim.simulate``; this
module makes them fast. ``Plan(schedule, topology)`` precomputes everything
that does not depend on durations: element ranges as segment index ranges,
resource indices, and per step whether its ranges are single segments, whether
it has inter-node transfers or transfers that share a resource (and their FIFO
chains, ``collsim.simulate.fifo``). Where ranges span many segments on average,
readiness goes through per-rank segment trees (``collsim.simulate.segment_tree``) instead of
the flat (rank, segment) table.
``Plan.run(durations)`` then walks the steps once; ``durations`` has one column
per variant (e.g. message size) of the same structure, so a sweep pays the
per-step overhead once for many sizes.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError
from collsim.schedule import Schedule
from collsim.simulate.fifo import chain_table, contended, fifo
from collsim.simulate.segment_tree import tree_index, tree_size
from collsim.simulate.topology import Topology

TREE_SPAN_FACTOR = 2   # segment trees when ranges average over this x tree depth segments (else a flat table)


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
    both = np.concatenate([offset, end])
    g = int(np.gcd.reduce(both)) or 1
    a, b = (offset, end) if g == 1 else (offset // g, end // g)
    hi = int(b.max()) + 1
    if hi <= max(1 << 22, 4 * len(offset)):
        mark = np.zeros(hi, dtype=bool)
        mark[a] = True
        mark[b] = True
        idx = np.cumsum(mark, dtype=np.int64) - 1
        return idx[a], idx[b], int(idx[-1])
    srt = np.sort(both, kind="stable")                  # radix/timsort: fast on these runs
    bp = srt[np.concatenate([[True], srt[1:] != srt[:-1]])]
    for modulus in range(8 * len(bp) + 1, 8 * len(bp) + 9, 2):   # a few tries, then binary search
        slot = bp % modulus
        if len(np.unique(slot)) == len(bp):
            table = np.zeros(modulus, dtype=np.int64)
            table[slot] = np.arange(len(bp))
            return table[offset % modulus], table[end % modulus], len(bp) - 1
    return np.searchsorted(bp, offset), np.searchsorted(bp, end), len(bp) - 1


def _steps_with_shared(step_of: np.ndarray, key: np.ndarray, size: int, n_steps: int) -> np.ndarray:
    """Boolean per step: do two transfers of the step use the same resource ``key``?"""
    flags = np.zeros(n_steps, dtype=bool)
    if len(key) == 0:
        return flags
    combined = step_of * size + key
    if n_steps * size <= 1 << 26:
        pos = np.arange(len(key), dtype=np.int32)
        stamp = np.empty(n_steps * size, dtype=np.int32)
        stamp[combined] = pos          # one writer per slot survives; the others lose
        lost = stamp[combined] != pos
    else:
        order = np.argsort(combined, kind="stable")
        dup = combined[order][1:] == combined[order][:-1]
        lost = np.zeros(len(key), dtype=bool)
        lost[order[1:][dup]] = True
    flags[step_of[lost]] = True
    return flags


def _mirrored(step_of: np.ndarray, a: np.ndarray, b: np.ndarray, size: int, n_steps: int) -> bool:
    """True if within every step row ``a`` determines row ``b`` and back (then both have the same chains)."""
    if n_steps * size > 1 << 24:
        return False
    for x, y in ((a, b), (b, a)):
        idx = step_of * size + x
        stamp = np.empty(n_steps * size, dtype=y.dtype)
        stamp[idx] = y                                  # one writer per slot survives
        if not np.array_equal(stamp[idx], y):
            return False
    return True


class Plan:
    """Duration-independent structure of ``schedule`` on ``topology``."""

    def __init__(self, schedule: Schedule, topology: Topology):
        s = schedule
        self.ranks, n = s.ranks, s.n_transfers
        self.src, self.dst, self.step_ptr = s.src, s.dst, s.step_ptr
        end = s.offset + s.length
        if n and (s.src.min() < 0 or s.dst.min() < 0 or max(s.src.max(), s.dst.max()) >= s.ranks):
            raise CollsimError(f"schedule names a rank outside 0..{s.ranks - 1}")
        if n and (s.offset.min() < 0 or s.length.min() < 0 or end.max() > s.count):
            raise CollsimError(f"schedule has an element range outside its buffer of {s.count} elements")
        self.sa, self.sb, self.nseg = segments(s.offset, end)
        self.table_size = max(1, self.ranks * self.nseg)
        N, span = tree_size(self.nseg), self.sb - self.sa
        self.tree = None                              # per-rank segment trees when ranges are long on average
        if self.nseg > 1 and int(span.sum()) > TREE_SPAN_FACTOR * n * N.bit_length():
            self.tree = tree_index(self.src, self.dst, self.sa, self.sb, N, self.ranks, s.step_ptr)
            self.table_size = self.tree[4]
        # Data readiness reads the sender's (rank, segment) rows. A reduce also waits for earlier writes
        # on its receiver, but those arrived through the receiver's receive port, which serves in
        # schedule order: the port is free only after them, so the resource wait already covers it.
        self.rs = self.src * self.nseg + self.sa      # (rank, segment) rows, used where spans are 1
        self.rd = self.dst * self.nseg + self.sa
        n_steps = s.n_steps
        step_of = s.step_index
        self.n_nics = topology.nodes * topology.nics_per_node
        if topology.nodes > 1:
            cross = topology.node_of(s.src) != topology.node_of(s.dst)
            spare = self.n_nics                                 # intra-node transfers use a spare row
            self.nic_out = np.where(cross, topology.nic_of(s.src), spare)
            self.nic_in = np.where(cross, topology.nic_of(s.dst), spare)
            nic_shared = [_steps_with_shared(step_of[cross], key[cross], self.n_nics, n_steps)
                          for key in (self.nic_out, self.nic_in)]
        else:
            cross = np.zeros(n, dtype=bool)
            self.nic_out = self.nic_in = None
            nic_shared = [np.zeros(n_steps, dtype=bool)] * 2
        # per step: which resource kinds (send, recv, NIC out, NIC in) have two users, or None
        kinds = np.stack([_steps_with_shared(step_of, s.src, self.ranks, n_steps),
                          _steps_with_shared(step_of, s.dst, self.ranks, n_steps)] + nic_shared, axis=1)
        shared = [tuple(k) if any(k) else None for k in kinds.tolist()]
        lo, m = s.step_ptr[:-1], np.diff(s.step_ptr)
        self.chain_tables = []
        for r, (key, size) in enumerate(((s.src, self.ranks), (s.dst, self.ranks),
                                         (self.nic_out, self.n_nics), (self.nic_in, self.n_nics))):
            table = None
            if r == 3 and self.chain_tables[2] is not None and _mirrored(step_of[cross], self.nic_out[cross],
                                                                         self.nic_in[cross], self.n_nics, n_steps):
                table = self.chain_tables[2]             # node pairs: NIC in chains are the NIC out chains
            elif kinds[:, r].any():
                use = kinds[step_of, r] & (cross if r >= 2 else True)
                table = chain_table(np.flatnonzero(use), step_of[use], key[use], size, lo, m)
            self.chain_tables.append(table)
        nonempty = np.flatnonzero(np.diff(s.step_ptr) > 0)
        starts = s.step_ptr[nonempty]

        def per_step(mask, ufunc=np.logical_or):
            out = np.zeros(n_steps, dtype=bool)
            if len(starts):
                out[nonempty] = ufunc.reduceat(mask, starts)
            return out

        self.flags = list(zip(s.step_ptr[:-1].tolist(), s.step_ptr[1:].tolist(),
                              per_step(self.sb - self.sa == 1, np.logical_and).tolist(),
                              per_step(cross).tolist(), shared))

    def same_structure(self, other: "Plan") -> bool:
        """True if ``other`` differs from this plan at most in durations."""
        return (self.ranks == other.ranks and self.nseg == other.nseg and self.n_nics == other.n_nics
                and all(np.array_equal(getattr(self, k), getattr(other, k))
                        for k in ("step_ptr", "src", "dst", "sa", "sb", "nic_out", "nic_in")))

    # ------------------------------------------------------------ time pass
    def run(self, dur: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Start and end (seconds) of every transfer; ``dur`` and both results have shape (variants, transfers).

        Variants are simulated as disjoint copies of the structure in flat 1-D
        tables, interleaved (row r of copy k is entry r * K + k, so a gather
        reads K neighbours), which keeps every numpy call a fast gather, scatter
        or ``maximum.at`` on a 1-D table. Inside, arrays are (transfers, K).
        """
        K = dur.shape[0]
        dur = dur.T if K == 1 else np.ascontiguousarray(dur.T)
        copies = np.arange(K)[None, :]
        lift = (lambda idx, size: idx[:, None]) if K == 1 else (lambda idx, size: idx[:, None] * K + copies)
        tab, P, nics = self.table_size, self.ranks, self.n_nics + 1
        W = np.zeros(K * tab)                            # latest write end per (rank, segment)
        send_free, recv_free = np.zeros(K * P), np.zeros(K * P)
        nic_out_free, nic_in_free = np.zeros(K * nics), np.zeros(K * nics)
        start, end = np.empty_like(dur), np.empty_like(dur)
        for k, (lo, hi, single, inter, shared) in enumerate(self.flags):
            if lo == hi:
                continue
            if self.tree is not None:
                ready, writes, wend = self._ready_tree(W, k, lo, hi, lift)
            elif single:
                ready = W.take(lift(self.rs[lo:hi], tab))
                writes, wend = lift(self.rd[lo:hi], tab), None
            else:
                ready, writes, wend = self._ready_multi(W, lo, hi, lift)
            res = [(send_free, lift(self.src[lo:hi], P), None), (recv_free, lift(self.dst[lo:hi], P), None)]
            if inter:
                for free, key in ((nic_out_free, self.nic_out[lo:hi]), (nic_in_free, self.nic_in[lo:hi])):
                    res.append((free, lift(key, nics), np.broadcast_to((key < self.n_nics)[:, None], (hi - lo, K))))
            st, en = fifo(ready, dur[lo:hi], res) if shared is None else \
                contended(ready, dur[lo:hi], res, self._chains(k, shared))
            start[lo:hi], end[lo:hi] = st, en
            vals = en if wend is None else en[wend]
            if writes.ndim == 3:                        # segment trees: (cells, transfers, variants)
                vals = np.broadcast_to(en, writes.shape)
            np.maximum.at(W, writes.ravel(), vals.ravel())   # 1-D: fast path
        return start.T, end.T

    def _chains(self, k: int, shared: tuple):
        """Chains of step ``k`` per shared resource kind (None if one kind's are too uneven to pad)."""
        out = []
        for table, has in zip(self.chain_tables, shared):
            if has:
                if table is None:
                    return None
                a, b = table[2][k], table[2][k + 1]
                out.append((table[0][a:b], table[1][a:b]))
        return out

    def _ready_tree(self, W, k, lo, hi, lift):
        """``_ready_multi`` through the segment trees of ``collsim.simulate.segment_tree``, for step ``k``."""
        read, rptr, write, wptr, tab = self.tree
        m, K = hi - lo, len(W) // tab
        cells, width = read[rptr[k]:rptr[k + 1]], (rptr[k + 1] - rptr[k]) // m
        ready = W.take(lift(cells, tab)).reshape(width, m, K).max(axis=0) if width else np.zeros((m, K))
        writes = lift(write[wptr[k]:wptr[k + 1]], tab).reshape((wptr[k + 1] - wptr[k]) // m, m, K)
        return ready, writes, None

    def _ready_multi(self, W, lo, hi, lift):
        """Readiness of a step with multi-segment ranges; also its write rows and their owners."""
        sa, span = self.sa[lo:hi], self.sb[lo:hi] - self.sa[lo:hi]
        first = np.cumsum(span) - span
        seg = np.repeat(sa - first, span) + np.arange(int(span.sum()))
        owner = np.repeat(np.arange(hi - lo), span)
        tab, m, K = self.table_size, hi - lo, len(W) // self.table_size
        vals = W.take(lift(self.src[lo:hi][owner] * self.nseg + seg, tab))
        writes = lift(self.dst[lo:hi][owner] * self.nseg + seg, tab)
        ready = np.zeros((m, K))
        has = np.flatnonzero(span > 0)                  # zero-length transfers read nothing
        if len(has):
            ready[has] = np.maximum.reduceat(vals, first[has], axis=0)
        return ready, writes, owner

