"""FIFO timing of one step's transfers on their resources (the simulator's contention policy).

Policy (documented in ``collsim.simulate``): every resource serves its
transfers one at a time in schedule order; a transfer holds a resource of a
kind for that kind's hold time (slots: its whole duration; ports: its bytes x
beta), so it starts at max(ready, the resource's free time before the step,
its in-step predecessor's start + hold on each of its resources). Times in
seconds. Arrays are (transfers, variants); ``res`` holds (free times, key,
hold) per resource kind: ``free`` a flat table, ``key`` the rows of the step's
transfers in it (a transfer that holds nothing of the kind points at the
table's spare last row, which the caller keeps at 0), ``hold`` the hold times.
"""
from __future__ import annotations

import numpy as np

MAX_FIXPOINT_ITERATIONS = 32   # sweeps over the resources' chains before the per-transfer loop
REL_TOL = 1e-14                # a sweep that moves no start by more than this (relative) has converged


def fifo(ready: np.ndarray, d: np.ndarray, res: list) -> tuple[np.ndarray, np.ndarray]:
    """Timing of transfers that share no resource: one vectorized update."""
    st = ready
    for free, key, _ in res:
        np.maximum(st, free.take(key), out=st)
    en = st + d
    for free, key, hold in res:
        free[key] = en if hold is d else st + hold
    return st, en


def chain_table(at: np.ndarray, step_of: np.ndarray, key: np.ndarray, size: int, lo: np.ndarray, m: np.ndarray):
    """In-step FIFO chains of one resource kind, for many steps at once.

    ``at`` (position in the schedule), ``step_of`` and ``key`` (row in a
    table of ``size`` rows) list the transfers that use the resource, in
    schedule order; ``lo`` and ``m`` give each step's first transfer and
    length. A chain is the transfers of one
    step on one row when there are >= 2. Returns (pad, real, row_ptr): chains
    as rows of step-local transfer indices in schedule order, padded with the
    step's length m (``real`` marks the rest), rows ordered by first transfer
    (so equal chain sets of two kinds compare equal); step k's rows are
    row_ptr[k]:row_ptr[k + 1]. None when padding would take over 4 x the
    transfers (very uneven chains).
    """
    if len(key) == 0:
        return None
    comb = step_of.astype(np.int64) * size + key
    if len(lo) * size <= 1 << 16:                       # radix sorts beat a comparison sort
        order = np.argsort(comb.astype(np.uint16), kind="stable")
    elif len(lo) <= 1 << 16 and size <= 1 << 16:
        order = np.argsort(key.astype(np.uint16), kind="stable")
        order = order[np.argsort(step_of[order].astype(np.uint16), kind="stable")]
    else:
        order = np.argsort(comb, kind="stable")
    sc = comb[order]
    new = np.empty(len(order), dtype=bool)
    new[:1] = True
    np.not_equal(sc[1:], sc[:-1], out=new[1:])
    first = np.flatnonzero(new)
    length = np.diff(np.append(first, len(order)))
    long_ = length >= 2
    n_rows = int(long_.sum())
    if n_rows == 0 or n_rows * int(length.max()) > 4 * len(key) + 4096:
        return None
    group = np.cumsum(new, dtype=np.int32) - 1
    pos = np.arange(len(order), dtype=np.int32) - first[group]
    if not long_.all():
        keep = long_[group]
        order, pos, group = order[keep], pos[keep], (np.cumsum(long_) - 1)[group[keep]]
    start = at[order[pos == 0]]                         # each chain's first transfer, chains by (step, key)
    rank = np.empty(n_rows, dtype=np.int64)
    rank[np.argsort(start)] = np.arange(n_rows)         # rows by first transfer
    row_step = np.searchsorted(lo, np.sort(start), side="right") - 1
    width = int(pos.max()) + 1
    row = rank[group]
    flat = row * width + pos
    local = np.repeat(m[row_step], width)               # padding: the step's length
    local[flat] = at[order] - lo[step_of[order]]
    real = np.zeros(n_rows * width, dtype=bool)
    real[flat] = True
    row_ptr = np.searchsorted(row_step, np.arange(len(lo) + 1))
    return local.reshape(n_rows, width), real.reshape(n_rows, width), row_ptr


def contended(ready: np.ndarray, d: np.ndarray, res: list, chains) -> tuple[np.ndarray, np.ndarray]:
    """Exact FIFO timing of one step whose transfers share resources.

    ``chains``: per resource kind None (no chains in this step) or (pad, real),
    rows of ``chain_table``; ``chains`` None: a kind's chains are too uneven to
    pad. On one resource row the transfers form a chain c_1, c_2, ... in
    schedule order, and start(c_i) = max over j <= i of (x(c_j) + H_i - H_j),
    where x is the start the other constraints allow and H the chain's prefix
    sums of hold times: a cumulative max. All chains of one kind are solved at
    once; kinds with the same chains and hold times (a node's NIC out and its
    peer's NIC in) count once.
    Sweeping the kinds in turn reaches the least fixed point: exact when one
    kind has chains, else to within REL_TOL (checked by a sweep that moves
    nothing). Without convergence in ``MAX_FIXPOINT_ITERATIONS`` sweeps, or
    when a sweep after the first moves more than half as many starts
    as the one before (long alternating chains, e.g. all-to-all on shared
    NICs), a per-transfer loop in schedule order gives the exact answer.
    """
    m, K = ready.shape
    base = ready
    for free, key, _ in res:
        np.maximum(base, free.take(key), out=base)     # spare rows are 0; a predecessor ends later anyway
    st = None
    if chains is not None:
        kinds = []
        for c, (_, _, hold) in zip(chains, res):
            if c is not None and not any(h is hold and (c[0] is o or c[0].shape == o.shape
                                                        and np.array_equal(c[0], o)) for o, _, h in kinds):
                kinds.append((c[0], c[1], hold))
        ext = np.vstack([base, np.zeros((1, K))])       # padding reads row m, never written back
        prefix = []
        for pad, _, hold in kinds:
            hp = np.vstack([hold, np.zeros((1, K))])[pad]
            prefix.append(np.cumsum(hp, axis=1) - hp)
        before = m + 1
        for sweep in range(MAX_FIXPOINT_ITERATIONS):
            moved = 0
            for (pad, real, _), D in zip(kinds, prefix):
                old = ext[pad]
                new = np.maximum.accumulate(old - D, axis=1) + D
                grow = (new > old + REL_TOL * new) & real[..., None]
                if grow.any():
                    moved += int(np.count_nonzero(grow))
                    ext[pad[real]] = np.maximum(old, new)[real]
            if not moved or (len(kinds) == 1 and sweep == 0):
                st = ext[:m]
                break
            if sweep and 2 * moved > before:            # converging slowly: the loop is cheaper
                break
            before = moved
    if st is None:
        st = _sequential_all(base, res)
    en = st + d
    for free, key, hold in res:                         # FIFO frees never decrease: max = the last one
        np.maximum.at(free, key.ravel(), (en if hold is d else st + hold).ravel())
    return st, en


def _sequential_all(base: np.ndarray, res: list) -> np.ndarray:
    """Per-transfer loop for every variant: each transfer waits for its predecessor on each resource.
    Spare rows (the table's last row: holds nothing) chain nobody."""
    m = len(base)
    preds = []
    for free, key, _ in res:
        K = base.shape[1]
        idx = np.flatnonzero(key[:, 0] // K != len(free) // K - 1)
        order = idx[np.argsort(key[idx, 0], kind="stable")]
        same = key[order[1:], 0] == key[order[:-1], 0]
        p = np.full(m, m, dtype=np.int64)
        p[order[1:][same]] = order[:-1][same]
        preds.append(p.tolist())
    holds = [h for _, _, h in res]
    return np.stack([_sequential(base[:, k], [h[:, k] for h in holds], preds) for k in range(base.shape[1])], axis=1)


def _sequential(base: np.ndarray, holds: list, preds: list) -> np.ndarray:
    """Start = max(base, in-step predecessor's start + hold on each resource), transfer by transfer in
    schedule order (four resource kinds)."""
    m = len(base)
    st = [0.0] * m
    free = [[0.0] * (m + 1) for _ in holds]            # free[kind][i]: start of i + its hold; [m]: no predecessor
    h0, h1, h2, h3 = (h.tolist() for h in holds)
    f0, f1, f2, f3 = free
    p0, p1, p2, p3 = preds
    for i, b in enumerate(base.tolist()):
        t = max(b, f0[p0[i]], f1[p1[i]], f2[p2[i]], f3[p3[i]])
        st[i] = t
        f0[i], f1[i], f2[i], f3[i] = t + h0[i], t + h1[i], t + h2[i], t + h3[i]
    return np.array(st)
