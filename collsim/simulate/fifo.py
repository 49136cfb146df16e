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


def fifo(ready: np.ndarray, d: np.ndarray, res: list) -> tuple[np.ndarray, np.ndarray]:
    """Timing of transfers that share no resource: one vectorized update."""
    st = _base(ready, res)
    en = st + d
    for free, key, hold in res:
        free[key] = en if hold is d else st + hold
    return st, en


def _chains(step_of: np.ndarray, key: np.ndarray, size: int, n_steps: int):
    """The transfers listed (schedule order) grouped by (step, key): (order, group, pos, first): ``order``
    sorts them by (step, key) keeping schedule order inside a group, ``group`` numbers the groups in that
    order, ``pos`` is each sorted transfer's place in its group and ``first`` each group's start."""
    comb = step_of.astype(np.int64) * size + key
    if n_steps * size <= 1 << 16:                       # radix sorts beat a comparison sort
        order = np.argsort(comb.astype(np.uint16), kind="stable")
    elif n_steps <= 1 << 16 and size <= 1 << 16:
        order = np.argsort(key.astype(np.uint16), kind="stable")
        order = order[np.argsort(step_of[order].astype(np.uint16), kind="stable")]
    else:
        order = np.argsort(comb, kind="stable")
    sc = comb[order]
    new = np.empty(len(order), dtype=bool)
    new[:1] = True
    np.not_equal(sc[1:], sc[:-1], out=new[1:])
    first = np.flatnonzero(new)
    group = np.cumsum(new, dtype=np.int32) - 1
    return order, group, np.arange(len(order), dtype=np.int32) - first[group], first


def chain_links(at: np.ndarray, step_of: np.ndarray, key: np.ndarray, size: int, n_steps: int):
    """(pos, pred) of the listed transfers (``at``: their places in the schedule, in order): each one's place
    in its in-step chain on its row of one resource kind, and the place in the schedule of the one before
    it there (-1: first)."""
    pos, pred = np.zeros(len(at), np.int32), np.full(len(at), -1, np.int64)
    if len(at):
        order, _, p, _ = _chains(step_of, key, size, n_steps)
        pos[order] = p
        later = p > 0
        pred[order[later]] = at[order[np.flatnonzero(later) - 1]]
    return pos, pred


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
    order, group, pos, first = _chains(step_of, key, size, len(lo))
    length = np.diff(np.append(first, len(order)))
    long_ = length >= 2
    n_rows = int(long_.sum())
    if n_rows == 0 or n_rows * int(length.max()) > 4 * len(key) + 4096:
        return None
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


def one_chain(ready: np.ndarray, d: np.ndarray, res: list, chain: tuple, hold: np.ndarray):
    """Exact FIFO timing of a step whose sharing is one kind of chains (or kinds with the same chains and
    hold times: a node's NIC out and its peer's NIC in), ``chain`` = (pad, real) rows of ``chain_table``.

    On one resource row the transfers form a chain c_1, c_2, ... in schedule order, and
    start(c_i) = max over j <= i of (x(c_j) + H_i - H_j), where x is the start the other
    constraints allow and H the chain's prefix sums of hold times: a cumulative max, all chains at once.
    """
    m, K = ready.shape
    base = _base(ready, res)
    pad, real = chain
    ext = np.vstack([base, np.zeros((1, K))])           # padding reads row m, never written back
    hp = np.vstack([hold, np.zeros((1, K))])[pad]
    D = np.cumsum(hp, axis=1) - hp
    ext[pad[real]] = (np.maximum.accumulate(ext[pad] - D, axis=1) + D)[real]
    st = ext[:m]
    en = st + d
    for free, key, h in res:                            # FIFO frees never decrease: max = the last one
        np.maximum.at(free, key.ravel(), (en if h is d else st + h).ravel())
    return st, en


def by_levels(ready: np.ndarray, d: np.ndarray, res: list, order: np.ndarray, ptr: np.ndarray,
              spare: list) -> tuple[np.ndarray, np.ndarray]:
    """Exact FIFO timing of a step whose transfers share several kinds of resources, level by level.

    ``order``/``ptr`` (``levels``, sorted per step) group the step's transfers by level: a transfer's level is above
    its in-step predecessor's on every resource row it holds, so the transfers of one level share no row
    and each level is one vectorized update of the free times, in level order. ``spare``: per kind the
    slice of the free table's spare row (it holds nothing), kept at 0.
    """
    st = np.empty_like(ready)
    for lo, hi in zip(ptr[:-1], ptr[1:]):
        idx = order[lo:hi]
        part = [(free, key[idx], h[idx]) for free, key, h in res]
        s_, _ = fifo(ready[idx], d[idx], part)
        st[idx] = s_
        for (free, _, _), sp in zip(res, spare):
            free[sp] = 0.0
    return st, st + d


def in_order(ready: np.ndarray, d: np.ndarray, res: list, preds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact FIFO timing of a step one transfer at a time in schedule order: each waits for the free times
    before the step and for its in-step predecessor (``preds[kind, i]``, -1: none) on every resource row it
    holds, that predecessor's start + hold. For steps whose levels are thin (``by_levels`` would pay a
    vectorized update per transfer)."""
    base = _base(ready, res)
    m, K = base.shape
    st = np.empty_like(base)
    kinds = [(p, [i for i in range(m) if p[i] >= 0]) for p in preds.tolist()]
    for k in range(K):
        out = base[:, k].tolist()
        ends = [(h[:, k].tolist(), [0.0] * m) for _, _, h in res]
        waiting = {}
        for (p, who), (_, end) in zip(kinds, ends):
            for i in who:
                waiting.setdefault(i, []).append((end, p[i]))
        for i in range(m):
            t = out[i]
            for end, j in waiting.get(i, ()):
                if end[j] > t:
                    t = end[j]
            out[i] = t
            for hold, end in ends:
                end[i] = t + hold[i]
        st[:, k] = out
    for free, key, hold in res:                         # FIFO frees never decrease: max = the last one
        np.maximum.at(free, key.ravel(), (st + hold).ravel())
    return st, st + d


def _base(ready: np.ndarray, res: list) -> np.ndarray:
    """Start allowed by the data and by every resource's free time before the step."""
    for free, key, _ in res:
        np.maximum(ready, free.take(key), out=ready)     # spare rows are 0
    return ready


MAX_LEVEL_PASSES = 16     # vectorized passes over the chains before one pass in schedule order


def levels(n: int, links: list) -> np.ndarray:
    """Level of each of ``n`` transfers (int32): at least its place in every in-step chain it is in, and
    above its predecessor's on every chain, so the transfers of one level of a step share no resource
    row. ``links``: per resource kind, (at, pos, pred) of ``chain_links``. Starts at the largest place and
    raises levels until no chain is violated: a few vectorized passes where the places agree (steps in
    channel order), else, past ``MAX_LEVEL_PASSES``, one loop in schedule order (predecessors come first)."""
    level = np.zeros(n, np.int32)
    for at, pos, _ in links:
        level[at] = np.maximum(level[at], pos)          # ``at`` lists each transfer once
    for _ in range(MAX_LEVEL_PASSES):
        new = level.copy()
        for at, _, pred in links:
            has = pred >= 0
            new[at[has]] = np.maximum(new[at[has]], level[pred[has]] + 1)
        if np.array_equal(new, level):
            return level
        level = new
    preds = np.full((len(links), n), -1, np.int64)
    for k, (at, _, pred) in enumerate(links):
        preds[k, at] = pred
    todo = np.flatnonzero((preds >= 0).any(axis=0)).tolist()
    out, by = level.tolist(), preds.T.tolist()
    for i in todo:                                      # in schedule order: every predecessor is done
        out[i] = max(out[i], max(out[p] + 1 for p in by[i] if p >= 0))
    return np.array(out, np.int32)
