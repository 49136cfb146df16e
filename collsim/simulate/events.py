"""The engine: the semantics of ``collsim.simulate.reference`` in one pass, compiled
(``collsim.simulate.jit``).

Policy "fair" (the default): an event simulation. A transfer starts when everything it waits for has
happened (its data dependencies arrived, the transfer before it on its engine ended, its window
predecessor arrived; ``collsim.simulate.deps``); its jobs (its bytes on each port they cross, its
sender's proxy and channel) then join those ports. A port shares its rate max-min fairly among its
jobs (each the same share, or its cap if less: ``collsim.simulate.fair.rates``) and keeps, per job,
the service (seconds of the whole port) it still owes (``collsim.simulate.ports``); a job is done
when that is below ``EPS`` of what it needed. A transfer is done when all its jobs are, and its
dependents learn when it arrives. Two heaps (``collsim.simulate.heaps``) hold the transfers ready to
start and every busy port's next end (indexed: it moves), keyed (time, seq): events are taken in
time order, ties in the order they were scheduled, so the run is deterministic. Policy "schedule":
every port serves its jobs one at a time in schedule order (everything a transfer waits for comes
earlier in the schedule), one pass.

State lives in numpy arrays for the compiled kernels and in Python lists for plain Python (indexing
a list costs a third of indexing an array there); the loops run in ``PROGRESS_BLOCK`` transfers at a
time so that a progress bar can follow a long run.
"""
from __future__ import annotations

import numpy as np

from collsim.simulate.heaps import drop, new_heap, pop, push, put
from collsim.simulate.jit import compiled, jit, pick
from collsim.simulate.ports import next_end, serve, shares

EPS = 1e-9             # a job is done when the service it still owes is below EPS of its whole
PROGRESS_BLOCK = 1 << 20
# a job's port, owner and links, a transfer's waiters, successor and counts: 32 bits hold the 2^31
# jobs of a run far past any memory bound
JOB = np.int32


@jit
def _waiters(n, data_ptr, data_dep, window_pred):
    """CSR (ptr, waiters) of who waits for each transfer's arrival: its data dependents, then its
    window successor, each list in transfer order (a counting sort)."""
    ptr = np.zeros(n + 1, np.int64)
    for x in range(len(data_dep)):
        ptr[data_dep[x] + 1] += 1
    for i in range(n):
        if window_pred[i] >= 0:
            ptr[window_pred[i] + 1] += 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    out = np.empty(ptr[n], JOB)
    for i in range(n):
        for x in range(data_ptr[i], data_ptr[i + 1]):
            w = data_dep[x]
            out[fill[w]] = i
            fill[w] += 1
    for i in range(n):
        w = window_pred[i]
        if w >= 0:
            out[fill[w]] = i
            fill[w] += 1
    return ptr, out


def _waiting(n: int, data_ptr, data_dep, engine_pred, window_pred):
    """(dependencies left per transfer, who waits for each
    one's arrival (CSR), its engine successor)."""
    count = (np.diff(data_ptr) + (engine_pred >= 0) + (window_pred >= 0)).astype(JOB)
    ptr, waiters = pick(_waiters, n)(n, np.asarray(data_ptr, np.int64),
                                     np.asarray(data_dep, np.int64),
                                     np.asarray(window_pred, np.int64))
    succ = np.full(n, -1, JOB)
    has_e = engine_pred >= 0
    succ[engine_pred[has_e]] = np.flatnonzero(has_e)
    return count, ptr, waiters, succ


@jit
def _waited(k, t, tm, left, ready, ctr):
    """Transfer k's wait for something that happens at t is
    over: it may start then, once nothing else holds it."""
    if t > tm[0][k]:
        tm[0][k] = t
    left[k] -= 1
    if left[k] == 0:
        ctr[0] = push(ready[0], ready[1], ready[2], ctr[0], k, tm[0][k], ctr[2])
        ctr[2] += 1


@jit
def _finish(i, e, tm, cost, left, wp, wl, nxt, ready, ctr):
    """Transfer i's jobs are done at e: its arrival and end, and the dependents that can start now
    (into the ready heap). ``tm``: (ready time, start, end, arrive) rows; ``cost``: (compute,
    overhead, latency, alone)."""
    e += cost[0][i]
    r = e + cost[2][i]
    tm[3][i] = r
    e += cost[1][i]
    tm[2][i] = e
    for x in range(wp[i], wp[i + 1]):
        _waited(wl[x], r, tm, left, ready, ctr)
    if nxt[i] >= 0:
        _waited(nxt[i], e, tm, left, ready, ctr)


@jit
def _fair(limit, tm, cost, left, wp, wl, nxt, rows, sizes, caps, jptr, jown, pend, pt, head, count,
          jnext, jprev, jleft, jrate, fixed, ready, busy, ctr):
    """Run events until every transfer is done or ``limit`` more are; ``ctr``: (ready size, busy
    size, seq, done). Returns the transfers done."""
    rt, rs, ri, rpos = ready
    bt, bs, bi, bpos = busy
    stop = ctr[3] + limit
    while ctr[3] < stop:
        take_ready = (ctr[0] > 0
                      and (ctr[1] == 0 or rt[0] < bt[0] or (rt[0] == bt[0] and rs[0] < bs[0])))
        if take_ready:
            i, time = ri[0], rt[0]
            ctr[0] = pop(rt, rs, ri, rpos, ctr[0], False)
            tm[1][i] = time
            k = 0
            for j in range(jptr[i], jptr[i + 1]):
                p = rows[j]
                serve(p, time, pt, head, jnext, jleft, jrate)
                jleft[j] = sizes[j]
                jprev[j] = -1
                jnext[j] = head[p]
                if head[p] >= 0:
                    jprev[head[p]] = j
                head[p] = j
                count[p] += 1
                shares(p, head, count, jnext, caps, jrate, fixed)
                ctr[1] = put(bt, bs, bi, bpos, size=ctr[1], item=p,
                             t=next_end(p, head, pt, jnext, jleft, jrate), seq=ctr[2])
                ctr[2] += 1
                k += 1
            pend[i] = k
            if k == 0:
                _finish(i, time + cost[3][i], tm, cost, left=left, wp=wp, wl=wl, nxt=nxt,
                        ready=ready, ctr=ctr)
                ctr[3] += 1
            continue
        if ctr[1] == 0:
            break
        p, time = bi[0], bt[0]
        serve(p, time, pt, head, jnext, jleft, jrate)
        j = head[p]
        while j >= 0:
            after = jnext[j]
            # done, or owing less than the clock can resolve
            if jleft[j] <= EPS * sizes[j] or (jrate[j] > 0 and time + jleft[j] / jrate[j] <= time):
                if jprev[j] >= 0:
                    jnext[jprev[j]] = after
                else:
                    head[p] = after
                if after >= 0:
                    jprev[after] = jprev[j]
                count[p] -= 1
                i = jown[j]
                pend[i] -= 1
                if pend[i] == 0:
                    _finish(i, time, tm, cost, left=left, wp=wp, wl=wl, nxt=nxt, ready=ready,
                            ctr=ctr)
                    ctr[3] += 1
            j = after
        shares(p, head, count, jnext, caps, jrate, fixed)
        if count[p]:
            ctr[1] = put(bt, bs, bi, bpos, size=ctr[1], item=p,
                         t=next_end(p, head, pt, jnext, jleft, jrate), seq=ctr[2])
            ctr[2] += 1
        else:                                                    # idle: out of the heap
            ctr[1] = drop(bt, bs, bi, bpos, ctr[1], p)
    return ctr[3]


@jit
def _in_order(n, tm, cost, left, wp, wl, nxt, rows, sizes, jptr, free, ready, ctr):
    """Policy "schedule": transfer by transfer in schedule
    order, each port serving its jobs one at a time."""
    for i in range(n):
        q = tm[0][i]
        e = q + cost[3][i]
        b0 = q
        for j in range(jptr[i], jptr[i + 1]):
            p = rows[j]
            b = free[p] if free[p] > q else q
            h = b + sizes[j]
            free[p] = h
            if b > b0:
                b0 = b
            if h > e:
                e = h
        tm[1][i] = b0
        # (its ready heap goes unused)
        _finish(i, e, tm, cost, left=left, wp=wp, wl=wl, nxt=nxt, ready=ready, ctr=ctr)


def held_jobs(rows: np.ndarray, sizes: np.ndarray, caps: np.ndarray,
              spare: int) -> tuple[np.ndarray, ...]:
    """(jptr, rows, sizes, caps) for ``run``: the jobs of (n, k) ``rows`` (a port each, ``spare``
    for none), ``sizes`` (seconds of the port) and ``caps`` (the most of its rate) that hold a
    port, transfer i's at jptr[i]:jptr[i + 1]."""
    held = rows != spare
    jptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(held.sum(axis=1), out=jptr[1:])
    return (jptr, np.ascontiguousarray(rows[held], JOB),
            np.ascontiguousarray(sizes[held], np.float64),
            np.ascontiguousarray(caps[held], np.float64))


def run(n: int, data_ptr: np.ndarray, data_dep: np.ndarray, engine_pred: np.ndarray,
        window_pred: np.ndarray, jobs: tuple[np.ndarray, ...], n_ports: int, costs,
        policy: str = "fair", progress=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, arrive) in seconds of every transfer (``collsim.simulate.costs.Costs``).
    ``jobs``: ``held_jobs``' (jptr, rows, sizes, caps), every transfer's jobs: the port (a row of
    one table of ``n_ports`` rows), the seconds of it the job needs, the most of its rate the job
    takes. ``progress``: called with the transfers done since its last call (a tqdm bar's
    ``update``), or None."""
    count, wp, wl, nxt = _waiting(n, data_ptr, data_dep, engine_pred, window_pred)
    tm = np.zeros((4, n))                                      # ready time, start, end, arrive
    cost = np.ascontiguousarray(np.stack([np.broadcast_to(np.asarray(a, np.float64), (n,))
                                          for a in (costs.compute, costs.overhead, costs.latency,
                                                    costs.alone)]))
    jptr, r, z, c = jobs
    ready = new_heap(max(n, 1), 1)                         # a queue: pos unused
    ctr = np.zeros(4, np.int64)
    if policy == "fair":
        jown = np.repeat(np.arange(n, dtype=JOB), np.diff(jptr))
        # an event visits its port's jobs: the work is n times the jobs one port starts with
        crowd = int(np.bincount(r[count[jown] == 0], minlength=n_ports).max(initial=1))
        kernel = pick(_fair, n * max(crowd, 1))
        st = dict(tm=tm, cost=cost, left=count, wp=wp, wl=wl, nxt=nxt, rows=r, sizes=z, caps=c,
                  jptr=jptr, jown=jown, pend=np.zeros(n, JOB), pt=np.zeros(n_ports),
                  head=np.full(n_ports, -1, np.int64), count=np.zeros(n_ports, np.int64),
                  jnext=np.full(len(r), -1, JOB), jprev=np.full(len(r), -1, JOB),
                  jleft=np.zeros(len(r)), jrate=np.zeros(len(r)),
                  fixed=np.zeros(len(r), np.bool_), ready=ready,
                  busy=new_heap(max(n_ports, 1), max(n_ports, 1)), ctr=ctr)
    else:
        kernel = pick(_in_order, n)
        st = dict(tm=tm, cost=cost, left=count, wp=wp, wl=wl, nxt=nxt, rows=r, sizes=z, jptr=jptr,
                  free=np.zeros(n_ports), ready=ready, ctr=ctr)
    plain = not hasattr(kernel, "py_func")          # numba's dispatchers keep the plain function
    if plain:                                        # lists index several times faster than arrays
        st = {k: _lists(v) for k, v in st.items()}
    queue, ready, ctr = push if plain else compiled(push), st["ready"], st["ctr"]
    for i in np.flatnonzero(count == 0).tolist():            # what waits for nothing starts at 0
        ctr[0] = queue(*ready[:3], ctr[0], i, 0.0, ctr[2])
        ctr[2] += 1
    if policy == "fair":
        done = 0
        while done < n:
            now = kernel(PROGRESS_BLOCK if progress is not None else n, **st)
            if now == done:
                break
            if progress is not None:
                progress(int(now - done))
            done = int(now)
    else:
        kernel(n, **st)
    tm = np.asarray(st["tm"], np.float64).reshape(4, n)
    return tm[1], tm[2], tm[3]


def _lists(v):
    """An engine array (or a heap's tuple of them) as Python lists, for the plain-Python kernels."""
    return tuple(map(_lists, v)) if isinstance(v, tuple) else v.tolist()
