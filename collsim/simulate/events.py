"""The engine: the semantics of ``collsim.simulate.reference`` in one pass.

Policy "fair" (the default): an event simulation. A transfer starts when everything it waits for has happened
(its data dependencies arrived, the transfer before it on its engine ended, its window predecessor arrived;
``collsim.simulate.deps``); its bytes then join each port they cross, which serves its transfers fairly
(``collsim.simulate.fair.Port``); when every port has served them the transfer is done, and its dependents
learn when it arrives. Events (a transfer's start, a port's next end) are taken in time order, ties in the
order they were made: deterministic. Policy "schedule": every port serves its transfers one at a time in
schedule order (everything a transfer waits for comes earlier in the schedule), one pass. The per-transfer
state lives in ``array`` buffers (8 bytes an entry).
"""
from __future__ import annotations

import heapq
from array import array

import numpy as np

from collsim.simulate.fair import Port


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


class _State:
    """Per-transfer times and what waits for whom, shared by both policies."""

    def __init__(self, n, data_ptr, data_dep, engine_pred, window_pred, c):
        count, wptr, waiters, succ = _waiting(n, data_ptr, data_dep, engine_pred, window_pred)
        self.left, self.wp = array("q", count), array("q", wptr)
        self.wl, self.nxt = array("q", waiters), array("q", succ)
        self.cp, self.oh, self.lat, self.alone = (array("d", np.asarray(a, np.float64)) for a in
                                                  (c.compute, c.overhead, c.latency, c.alone))
        self.t, self.start, self.end, self.arrive = (array("d", bytes(8 * n)) for _ in range(4))

    def finish(self, i: int, e: float, started) -> None:
        """Transfer i's bytes are done at e: its arrival and end, and the dependents that can start now."""
        e += self.cp[i]
        r = e + self.lat[i]
        self.arrive[i] = r
        e += self.oh[i]
        self.end[i] = e
        t, left = self.t, self.left
        for x in range(self.wp[i], self.wp[i + 1]):
            k = self.wl[x]
            if r > t[k]:
                t[k] = r
            left[k] -= 1
            if not left[k]:
                started(k)
        k = self.nxt[i]
        if k >= 0:
            if e > t[k]:
                t[k] = e
            left[k] -= 1
            if not left[k]:
                started(k)


def _fair(n, st: _State, rows, sizes, caps, spare, progress):
    heap, seq, version = [], 0, {}
    ports: dict[int, Port] = {}
    pending = array("q", bytes(8 * n))
    jobs = len(rows) // n if n else 0

    def push(time, kind, x):
        nonlocal seq
        heapq.heappush(heap, (time, seq, kind, x))
        seq += 1

    def check(p: int, port: Port):
        version[p] = version.get(p, 0) + 1
        done = port.next_done()
        if done != float("inf"):
            push(done, 1, (p, version[p]))

    def started(j):
        push(st.t[j], 0, j)

    for i in range(n):
        if st.left[i] == 0:
            push(0.0, 0, i)
    done_count = 0
    while heap:
        time, _, kind, x = heapq.heappop(heap)
        if kind == 0:
            i = x
            st.start[i] = time
            k = 0
            for j in range(i * jobs, i * jobs + jobs):
                p = rows[j]
                if p != spare:
                    port = ports.get(p)
                    if port is None:
                        port = ports[p] = Port()
                    port.add(time, i, sizes[j], caps[j])
                    check(p, port)
                    k += 1
            pending[i] = k
            if not k:
                st.finish(i, time + st.alone[i], started)
            continue
        p, v = x
        if version.get(p) != v:
            continue
        port = ports[p]
        for i in port.advance(time):
            pending[i] -= 1
            if not pending[i]:
                st.finish(i, time, started)
                done_count += 1
                if progress is not None and not done_count % 65536:
                    progress(65536)
        check(p, port)


def _in_order(n, st: _State, rows, sizes, spare, n_ports, progress):
    free = array("d", bytes(8 * n_ports))
    jobs = len(rows) // n if n else 0
    for i in range(n):
        q = st.t[i]
        e = q + st.alone[i]
        b0 = q
        for j in range(i * jobs, i * jobs + jobs):
            p = rows[j]
            if p == spare:
                continue
            b = free[p] if free[p] > q else q
            h = b + sizes[j]
            free[p] = h
            if b > b0:
                b0 = b
            if h > e:
                e = h
        st.start[i] = b0
        st.finish(i, e, lambda j: None)
        if progress is not None and not (i + 1) % 65536:
            progress(65536)


def run(n: int, data_ptr: np.ndarray, data_dep: np.ndarray, engine_pred: np.ndarray, window_pred: np.ndarray,
        rows: np.ndarray, sizes: np.ndarray, caps: np.ndarray, n_ports: int, costs, policy: str = "fair",
        progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, arrive) in seconds of every transfer (``collsim.simulate.costs.Costs``). ``rows``, ``sizes``,
    ``caps``: (n, k) arrays, every transfer's k jobs: the port (a row of one table of ``n_ports`` rows; the spare
    row ``n_ports - 1`` means none), the seconds of it the job needs, the most of its rate the job takes."""
    st = _State(n, data_ptr, data_dep, engine_pred, window_pred, costs)
    r = array("q", np.ascontiguousarray(rows, np.int64).ravel())
    z = array("d", np.ascontiguousarray(sizes, np.float64).ravel())
    if policy == "fair":
        _fair(n, st, r, z, array("d", np.ascontiguousarray(caps, np.float64).ravel()), n_ports - 1, progress)
    else:
        _in_order(n, st, r, z, n_ports - 1, n_ports, progress)
    return np.frombuffer(st.start), np.frombuffer(st.end), np.frombuffer(st.arrive)
