"""How the transfers of each step contend for resources, decided once per schedule (``step_modes``).

The simulator serves every resource in schedule order (``collsim.simulate``). Within a step that
holds each resource row at most once, all transfers start from the free times before the step: one
vectorized update (mode None). Otherwise the step is cut into the cheapest exact form:

* ``("runs", bounds)``: the step's maximal runs of one channel each hold every row at most once
  (a channel-ordered step of rings or trees): the runs are solved one after another, each one
  vectorized update (``fifo.fifo``), in schedule order;
* ``("one", pad, real, hold)``: one kind of resource (or kinds with the same chains and hold times)
  has chains: a cumulative max along them (``fifo.one_chain``);
* ``("levels", order, ptr)``: the general case, level by level (``fifo.levels``, ``fifo.by_levels``);
* ``("seq", preds)``: where levels hold few transfers each (long chains across many resources, e.g.
  all-to-all through shared NICs), one loop in schedule order (``fifo.in_order``).

Row repeats are found by stamping rows in blocks of groups small enough to stay in cache
(``repeats``), the chains by sorting only the steps that need them.
"""
from __future__ import annotations

import numpy as np

from collsim.simulate.fifo import chain_links, chain_table, levels

BLOCK = 1 << 18               # stamp table entries per block of groups (fits in cache)
ONE_KIND_CUMMAX = True        # a step with one kind of chains: a cumulative max (False: level by level)
LEVEL_WIDTH = 8               # levels of fewer transfers on average: one loop in schedule order instead


def repeats(group_of: np.ndarray, key: np.ndarray, size: int, n_groups: int) -> np.ndarray:
    """Boolean per group: do two of its transfers hold the same row ``key`` (of ``size`` rows)?
    ``group_of`` never decreases."""
    out = np.zeros(n_groups, dtype=bool)
    if len(key) == 0:
        return out
    per = max(1, BLOCK // size)
    bounds = np.searchsorted(group_of, np.arange(0, n_groups + per, per, dtype=group_of.dtype))   # same dtype: no copy
    stamp = np.empty(per * size, dtype=np.int32)
    for block, (lo, hi) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist())):
        if hi > lo:
            cell = (group_of[lo:hi] - block * per) * size + key[lo:hi]
            pos = np.arange(hi - lo, dtype=np.int32)
            stamp[cell] = pos                           # one writer per cell survives; the others lose
            lost = stamp[cell] != pos
            out[group_of[lo:hi][lost]] = True
    return out


def mirrored(step_of: np.ndarray, a: np.ndarray, b: np.ndarray, size: int, n_steps: int) -> bool:
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


def step_modes(step_ptr: np.ndarray, step_of: np.ndarray, channel: np.ndarray, keys, sizes, valid,
               ports_follow_slots: bool = False) -> list:
    """The mode of every step (module docstring). ``keys``/``sizes``/``valid``: per resource kind (send
    slot, receive slot, out port, in port) each transfer's row, the rows, and who holds one; kinds 0, 1
    are held for the duration, 2, 3 for the bytes. ``ports_follow_slots``: a port row is a one-to-one
    function of the GPU (its NVLink port, its own NIC, its pair link to the peer), so within a run of one
    channel a port repeats only where a slot does and the ports need no check of their own."""
    n, n_steps = len(step_of), len(step_ptr) - 1
    modes = [None] * n_steps
    if n == 0:
        return modes
    new_run = np.ones(n, dtype=bool)
    np.not_equal(channel[1:], channel[:-1], out=new_run[1:])
    new_run[step_ptr[:-1][step_ptr[:-1] < n]] = True
    run_start = np.flatnonzero(new_run)
    run_of = np.repeat(np.arange(len(run_start), dtype=np.int32), np.diff(np.r_[run_start, n]))
    bad_run = np.zeros(len(run_start), dtype=bool)
    for key, size, v in list(zip(keys, sizes, valid))[:2 if ports_follow_slots else 4]:
        every = bool(v.all())
        bad_run |= repeats(run_of if every else run_of[v], key if every else key[v], size, len(run_start))
    bad = np.zeros(n_steps, dtype=bool)
    bad[step_of[run_start[bad_run]]] = True
    runs_per_step = np.bincount(step_of[run_start], minlength=n_steps)
    first_run = np.searchsorted(step_of[run_start], np.arange(n_steps))
    for k in np.flatnonzero(~bad & (runs_per_step > 1)).tolist():
        a = first_run[k]
        modes[k] = ("runs", np.r_[run_start[a:a + runs_per_step[k]], step_ptr[k + 1]] - step_ptr[k])
    if bad.any():
        _contended(modes, bad, step_ptr, step_of, keys, sizes, valid)
    return modes


def _contended(modes: list, bad: np.ndarray, step_ptr, step_of, keys, sizes, valid) -> None:
    """Modes "one" or "levels" of the ``bad`` steps (a run holds some row twice)."""
    n_steps = len(bad)
    lo, m = step_ptr[:-1], np.diff(step_ptr)
    in_bad = bad[step_of]
    uses = [v & in_bad for v in valid]
    kinds = np.stack([repeats(step_of[u], key[u], size, n_steps) for key, size, u in zip(keys, sizes, uses)], axis=1)
    tables = []
    for r, (key, size, u) in enumerate(zip(keys, sizes, uses)):
        table = None
        if r % 2 and tables[r - 1] is not None and np.array_equal(u, uses[r - 1]) and \
                mirrored(step_of[u], keys[r - 1][u], key[u], max(sizes[r - 1], size), n_steps):
            table = tables[r - 1]                        # e.g. node pairs: NIC in chains are the NIC out chains
        elif kinds[:, r].any():
            use = kinds[step_of, r] & u
            table = chain_table(np.flatnonzero(use), step_of[use], key[use], size, lo, m)
        tables.append(table)
    by_level = np.zeros(n_steps, dtype=bool)
    for k in np.flatnonzero(bad).tolist():
        used = {(id(tables[r]), r // 2) for r in range(4) if kinds[k, r]}
        r = int(np.flatnonzero(kinds[k])[0])
        if ONE_KIND_CUMMAX and len(used) == 1 and tables[r] is not None:
            a, b = tables[r][2][k], tables[r][2][k + 1]
            modes[k] = ("one", tables[r][0][a:b], tables[r][1][a:b], r // 2)
        else:
            by_level[k] = True
    if not by_level.any():
        return
    links, link_kind = [], []
    for r in range(4):
        use = by_level[step_of] & kinds[step_of, r] & uses[r]
        if use.any():
            at = np.flatnonzero(use)
            links.append((at, *chain_links(at, step_of[use], keys[r][use], sizes[r], n_steps)))
            link_kind.append(r)
    level = levels(len(step_of), links)
    preds = None
    for k in np.flatnonzero(by_level).tolist():
        lo_k, hi_k = int(step_ptr[k]), int(step_ptr[k + 1])
        lv = level[lo_k:hi_k]
        if (int(lv.max()) + 1) * LEVEL_WIDTH > hi_k - lo_k:     # thin levels: one loop in schedule order
            if preds is None:
                preds = np.full((4, len(step_of)), -1, np.int64)
                for r, (at, _, pred) in zip(link_kind, links):
                    preds[r, at] = pred
            local = preds[:, lo_k:hi_k]
            modes[k] = ("seq", np.where(local >= 0, local - lo_k, -1))
            continue
        order = np.argsort(lv, kind="stable").astype(np.int32)
        modes[k] = ("levels", order, np.searchsorted(lv[order], np.arange(int(lv.max()) + 2)))
