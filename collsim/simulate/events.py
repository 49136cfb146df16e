"""The engine: the semantics of ``collsim.simulate.reference`` in one pass.

Policy "ready": a transfer enters a heap when everything it waits for has happened (its data dependencies
arrived, the transfer before it on its engine ended, its window predecessor arrived; ``collsim.simulate.deps``),
keyed by the time it asks for its ports , then its place in the schedule. Popping in that order
serves every port in the order the transfers ask for it: a transfer's successors ask no earlier than it does
(an arrival or an end comes after its start), so the pops are in time order. Policy "schedule": the transfers
in schedule order (everything a transfer waits for comes earlier in the schedule). O(n log n) in the transfers
and their dependencies; the per-transfer state lives in ``array`` buffers (8 bytes an entry).
"""
from __future__ import annotations

import heapq
from array import array

import numpy as np


def _waiting(n: int, data_ptr, data_dep, engine_pred, window_pred):
    """(dependencies left per transfer, who waits for each one's arrival (CSR), its engine successor)."""
    count = np.diff(data_ptr) + (engine_pred >= 0) + (window_pred >= 0)
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(data_ptr))
    has_w = window_pred >= 0
    who = np.concatenate([data_dep, window_pred[has_w]])
    waiter = np.concatenate([owner, np.flatnonzero(has_w)])
    order = np.argsort(who, kind="stable")
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(who, minlength=n), out=ptr[1:])
    succ = np.full(n, -1, np.int64)
    has_e = engine_pred >= 0
    succ[engine_pred[has_e]] = np.flatnonzero(has_e)
    return count, ptr, waiter[order], succ


def run(n: int, data_ptr: np.ndarray, data_dep: np.ndarray, engine_pred: np.ndarray, window_pred: np.ndarray,
        out_port: np.ndarray, in_port: np.ndarray, n_ports: int, overhead, work, port, latency,
        policy: str = "ready", progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, arrive) in seconds of every transfer; ports are rows of one table (``n_ports`` rows; a
    transfer that holds none of a kind names the spare row ``n_ports - 1``, which stays free)."""
    count, wptr, waiters, succ = _waiting(n, data_ptr, data_dep, engine_pred, window_pred)
    left, wp, wl, nxt = array("q", count), array("q", wptr), array("q", waiters), array("q", succ)
    oh, wk, ph, lat = (array("d", np.asarray(a, np.float64)) for a in (overhead, work, port, latency))
    out_p, in_p = array("q", out_port), array("q", in_port)
    spare = n_ports - 1
    free = array("d", bytes(8 * n_ports))
    t, start, end, arrive = (array("d", bytes(8 * n)) for _ in range(4))
    heap = [(0.0, i) for i in range(n) if left[i] == 0] if policy == "ready" else None
    if heap is not None:
        heapq.heapify(heap)
    order = iter(range(n)) if heap is None else None
    for done in range(n):
        if heap is None:
            i = next(order)
            q = t[i]
        else:
            q, i = heapq.heappop(heap)
        a, b = out_p[i], in_p[i]
        ba = free[a] if free[a] > q else q          # each port serves its transfers one at a time
        bb = free[b] if free[b] > q else q
        p = ph[i]
        free[a] = ba + p
        free[b] = bb + p
        free[spare] = 0.0
        b0 = ba if ba > bb else bb
        e = b0 + p
        w = q + wk[i]
        if w > e:
            e = w
        r = e + lat[i]
        arrive[i] = r
        e += oh[i]
        start[i], end[i] = b0, e
        for x in range(wp[i], wp[i + 1]):
            k = wl[x]
            if r > t[k]:
                t[k] = r
            left[k] -= 1
            if heap is not None and not left[k]:
                heapq.heappush(heap, (t[k], k))
        k = nxt[i]
        if k >= 0:
            if e > t[k]:
                t[k] = e
            left[k] -= 1
            if heap is not None and not left[k]:
                heapq.heappush(heap, (t[k], k))
        if progress is not None and not (done + 1) % 65536:
            progress(65536)
    return np.frombuffer(start), np.frombuffer(end), np.frombuffer(arrive)
