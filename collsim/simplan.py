"""The simulator's engine: a ``Plan`` (structure of a schedule on a topology) and its time pass.

Semantics and contention policy are documented in ``collsim.simulate``; this
module makes them fast. ``Plan(schedule, topology)`` precomputes everything
that does not depend on durations: element ranges as segment index ranges,
resource indices, and per step whether its ranges are single segments, whether
it has inter-node transfers or transfers that share a resource.
``Plan.run(durations)`` then walks the steps once; ``durations`` has one column
per variant (e.g. message size) of the same structure, so a sweep pays the
per-step overhead once for many sizes.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError
from collsim.schedule import Schedule
from collsim.topology import Topology

MAX_FIXPOINT_ITERATIONS = 32   # in-step FIFO chains longer than this use the per-transfer loop


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
            nic_shared = (_steps_with_shared(step_of[cross], self.nic_out[cross], self.n_nics, n_steps)
                          | _steps_with_shared(step_of[cross], self.nic_in[cross], self.n_nics, n_steps))
        else:
            cross = np.zeros(n, dtype=bool)
            self.nic_out = self.nic_in = None
            nic_shared = np.zeros(n_steps, dtype=bool)
        shared = (nic_shared | _steps_with_shared(step_of, s.src, self.ranks, n_steps)
                  | _steps_with_shared(step_of, s.dst, self.ranks, n_steps))
        nonempty = np.flatnonzero(np.diff(s.step_ptr) > 0)
        starts = s.step_ptr[nonempty]

        def per_step(mask, ufunc=np.logical_or):
            out = np.zeros(n_steps, dtype=bool)
            if len(starts):
                out[nonempty] = ufunc.reduceat(mask, starts)
            return out

        self.flags = list(zip(s.step_ptr[:-1].tolist(), s.step_ptr[1:].tolist(),
                              per_step(self.sb - self.sa == 1, np.logical_and).tolist(),
                              per_step(cross).tolist(), shared.tolist()))

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
        for lo, hi, single, inter, shared in self.flags:
            if lo == hi:
                continue
            if single:
                ready = W.take(lift(self.rs[lo:hi], tab))
                writes, wend = lift(self.rd[lo:hi], tab), None
            else:
                ready, writes, wend = self._ready_multi(W, lo, hi, lift)
            res = [(send_free, lift(self.src[lo:hi], P), None), (recv_free, lift(self.dst[lo:hi], P), None)]
            if inter:
                for free, key in ((nic_out_free, self.nic_out[lo:hi]), (nic_in_free, self.nic_in[lo:hi])):
                    res.append((free, lift(key, nics), np.broadcast_to((key < self.n_nics)[:, None], (hi - lo, K))))
            st, en = (_contended if shared else _fifo)(ready, dur[lo:hi], res)
            start[lo:hi], end[lo:hi] = st, en
            np.maximum.at(W, writes.ravel(), (en if wend is None else en[wend]).ravel())   # 1-D: fast path
        return start.T, end.T

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


def _fifo(ready: np.ndarray, d: np.ndarray, res: list) -> tuple[np.ndarray, np.ndarray]:
    """Timing of transfers that share no resource: one vectorized update.

    ``res`` holds (free times, key, valid) per resource kind, keys and valid
    (None: all) of shape (transfers, variants); ``valid`` marks transfers that
    use the resource (intra-node transfers use no NIC: their key is a spare row).
    """
    st = ready
    for free, key, _ in res:
        np.maximum(st, free.take(key), out=st)
    en = st + d
    for free, key, valid in res:
        if valid is None:
            free[key] = en
        else:
            free[key[valid]] = en[valid]
    return st, en


def _contended(ready: np.ndarray, d: np.ndarray, res: list) -> tuple[np.ndarray, np.ndarray]:
    """Exact FIFO timing of one step whose transfers share resources.

    Every transfer waits for the previous transfer of the step on each of its
    resources (its in-step predecessor) and for the resource's free time before
    the step. Three exact methods, by shape: (1) cut the step into maximal runs
    without a shared resource, each a vectorized ``_fifo`` (when runs are long,
    e.g. "send to rank + k" rounds); (2) iterate start = max(ready, free, end of
    predecessors) to its least fixed point, reached in (longest chain + 1)
    rounds (short chains, e.g. GPUs sharing a NIC); (3) a per-transfer loop.
    """
    m, K = ready.shape
    preds, last = [], np.full(m, -1)
    for free, key, valid in res:
        order = np.argsort(key[:, 0], kind="stable")
        sk = key[:, 0].take(order)
        same = sk[1:] == sk[:-1]
        if valid is not None:
            same &= valid[:, 0].take(order[1:])
        who, pred = order[1:][same], order[:-1][same]
        preds.append((who, pred))
        last[who] = np.maximum(last[who], pred)
    adjacent = np.count_nonzero(last[1:] == np.arange(m - 1))   # each starts a run: a cheap lower bound
    bounds = _run_bounds(last.tolist()) if adjacent < m // 16 else []
    if 0 < len(bounds) - 1 <= m // 16:
        st, en = np.empty_like(ready), np.empty_like(ready)
        for a, b in zip(bounds[:-1], bounds[1:]):
            part = [(f, k[a:b], v if v is None else v[a:b]) for f, k, v in res]
            st[a:b], en[a:b] = _fifo(ready[a:b], d[a:b], part)
        return st, en
    base = ready
    for free, key, _ in res:
        np.maximum(base, free.take(key), out=base)     # spare rows are 0; a predecessor ends later anyway
    st = base
    for _ in range(MAX_FIXPOINT_ITERATIONS):
        en = st + d
        new = base.copy()
        for who, pred in preds:
            new[who] = np.maximum(new[who], en[pred])
        if np.array_equal(new, st):
            break
        st = new
    else:
        st = np.stack([_sequential(base[:, k], d[:, k], preds) for k in range(K)], axis=1)
    en = st + d
    for free, key, valid in res:
        sel = (slice(None),) if valid is None else valid
        np.maximum.at(free, key[sel].ravel(), en[sel].ravel())   # FIFO ends never decrease: max = last end
    return st, en


def _run_bounds(last: list) -> list:
    """Boundaries of maximal runs of positions whose in-step predecessors lie before the run."""
    bounds, run_start = [0], 0
    for i, p in enumerate(last):
        if p >= run_start:
            bounds.append(i)
            run_start = i
    bounds.append(len(last))
    return bounds


def _sequential(base: np.ndarray, d: np.ndarray, preds: list) -> np.ndarray:
    """Per-transfer loop in schedule order: start = max(base, ends of in-step predecessors)."""
    m = len(base)
    pred_lists = []
    for who, pred in preds:
        p = np.full(m, m, dtype=np.int64)               # m: no predecessor (reads the 0.0 sentinel)
        p[who] = pred
        pred_lists.append(p.tolist())
    b, dd, st, en = base.tolist(), d.tolist(), [0.0] * m, [0.0] * (m + 1)
    for i in range(m):
        t = max([b[i]] + [en[p[i]] for p in pred_lists])
        st[i], en[i] = t, t + dd[i]
    return np.array(st)
