"""Binary min-heaps on arrays for the engine (``collsim.simulate.events``), keyed (time, seq): times
compare first, then seqs (a counter: ties go to what was scheduled first), so the engine's order of
events is deterministic. A heap is four arrays: ``ht`` (times, seconds), ``hs`` (seqs),
``hi`` (items) of its capacity, and ``pos`` (an item's place, -1: absent); its size is kept by the
caller.

``push``/``pop`` keep a queue of items that come in once and leave once (``pos`` unused); ``put``
moves an item that is already in and ``drop`` takes one out (an indexed heap: a port's next end
changes as jobs come and go, and an idle port leaves). Sifts move a hole rather than swapping, and
every function compiles with ``collsim.simulate.jit``.
"""
from __future__ import annotations

import numpy as np

from collsim.simulate.jit import jit


def new_heap(capacity: int, items: int):
    """(ht, hs, hi, pos) of an empty heap of ``capacity`` places for items 0..items-1."""
    return (np.zeros(capacity, np.float64), np.zeros(capacity, np.int64),
            np.zeros(capacity, np.int64), np.full(items, -1, np.int64))


@jit
def _up(ht, hs, hi, pos, k, t, s, item, indexed):
    """Place (t, s, item) at hole k or above it."""
    while k > 0:
        parent = (k - 1) >> 1
        if ht[parent] < t or (ht[parent] == t and hs[parent] < s):
            break
        ht[k], hs[k], hi[k] = ht[parent], hs[parent], hi[parent]
        if indexed:
            pos[hi[k]] = k
        k = parent
    ht[k], hs[k], hi[k] = t, s, item
    if indexed:
        pos[item] = k


@jit
def _down(ht, hs, hi, pos, k, size, t, s, item, indexed):
    """Place (t, s, item) at hole k or below it."""
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hs[c + 1] < hs[c])):
            c += 1
        if t < ht[c] or (t == ht[c] and s < hs[c]):
            break
        ht[k], hs[k], hi[k] = ht[c], hs[c], hi[c]
        if indexed:
            pos[hi[k]] = k
        k = c
    ht[k], hs[k], hi[k] = t, s, item
    if indexed:
        pos[item] = k


@jit
def push(ht, hs, hi, size, item, t, seq):
    """Add ``item`` at (t, seq) to a queue (``pos`` unused); returns the new size."""
    _up(ht, hs, hi, pos=hi, k=size, t=t, s=seq, item=item, indexed=False)
    return size + 1


@jit
def pop(ht, hs, hi, pos, size, indexed):
    """Remove the least item (the caller reads ``hi[0]``, ``ht[0]`` first); returns the new size."""
    if indexed:
        pos[hi[0]] = -1
    size -= 1
    if size > 0:
        _down(ht, hs, hi, pos=pos, k=0, size=size, t=ht[size], s=hs[size], item=hi[size],
              indexed=indexed)
    return size


@jit
def put(ht, hs, hi, pos, size, item, t, seq):
    """Insert ``item`` at (t, seq) into an indexed heap, or
    move it there if it is in; returns the new size."""
    k = pos[item]
    if k < 0:
        _up(ht, hs, hi, pos=pos, k=size, t=t, s=seq, item=item, indexed=True)
        return size + 1
    parent = (k - 1) >> 1
    if k > 0 and (t < ht[parent] or (t == ht[parent] and seq < hs[parent])):
        _up(ht, hs, hi, pos=pos, k=k, t=t, s=seq, item=item, indexed=True)
    else:
        _down(ht, hs, hi, pos=pos, k=k, size=size, t=t, s=seq, item=item, indexed=True)
    return size


@jit
def drop(ht, hs, hi, pos, size, item):
    """Remove ``item`` from an indexed heap if it is in; returns the new size."""
    k = pos[item]
    if k < 0:
        return size
    pos[item] = -1
    size -= 1
    if k < size:
        t, s, last = ht[size], hs[size], hi[size]
        parent = (k - 1) >> 1
        if k > 0 and (t < ht[parent] or (t == ht[parent] and s < hs[parent])):
            _up(ht, hs, hi, pos=pos, k=k, t=t, s=s, item=last, indexed=True)
        else:
            _down(ht, hs, hi, pos=pos, k=k, size=size, t=t, s=s, item=last, indexed=True)
    return size
