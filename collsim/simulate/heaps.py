"""An indexed binary min-heap on arrays, for the engine (``collsim.simulate.events``): items 0..m-1, each in the
heap at most once under a key (time, seq); ``pos[item]`` is its place (-1: absent). Keys compare by time, then
by seq (a counter: ties go to what was scheduled first), so the engine's order of events is deterministic.

A heap is five arrays: ``ht`` (times, seconds), ``hs`` (seqs), ``hi`` (items) of the heap's capacity, ``pos``
(one per item); its size is kept by the caller. All functions compile with ``collsim.simulate.jit``.
"""
from __future__ import annotations

import numpy as np

from collsim.simulate.jit import jit


def new_heap(capacity: int, items: int):
    """(ht, hs, hi, pos) of an empty heap of ``capacity`` places for items 0..items-1."""
    return (np.zeros(capacity, np.float64), np.zeros(capacity, np.int64), np.zeros(capacity, np.int64),
            np.full(items, -1, np.int64))


@jit
def _less(ht, hs, a, b):
    return ht[a] < ht[b] or (ht[a] == ht[b] and hs[a] < hs[b])


@jit
def _swap(ht, hs, hi, pos, a, b):
    ht[a], ht[b] = ht[b], ht[a]
    hs[a], hs[b] = hs[b], hs[a]
    hi[a], hi[b] = hi[b], hi[a]
    pos[hi[a]] = a
    pos[hi[b]] = b


@jit
def _up(ht, hs, hi, pos, k):
    while k > 0:
        parent = (k - 1) >> 1
        if not _less(ht, hs, k, parent):
            break
        _swap(ht, hs, hi, pos, k, parent)
        k = parent


@jit
def _down(ht, hs, hi, pos, k, size):
    while True:
        c = 2 * k + 1
        if c >= size:
            break
        if c + 1 < size and _less(ht, hs, c + 1, c):
            c += 1
        if not _less(ht, hs, c, k):
            break
        _swap(ht, hs, hi, pos, k, c)
        k = c


@jit
def put(ht, hs, hi, pos, size, item, t, seq):
    """Insert ``item`` at (t, seq), or move it there if it is in; returns the new size."""
    k = pos[item]
    if k < 0:
        k = size
        size += 1
        hi[k] = item
        pos[item] = k
        ht[k] = t
        hs[k] = seq
        _up(ht, hs, hi, pos, k)
        return size
    ht[k] = t
    hs[k] = seq
    _up(ht, hs, hi, pos, k)
    _down(ht, hs, hi, pos, pos[item], size)
    return size


@jit
def pop(ht, hs, hi, pos, size):
    """Remove the least item (the caller reads ``hi[0]``, ``ht[0]`` first); returns the new size."""
    pos[hi[0]] = -1
    size -= 1
    if size > 0:
        ht[0], hs[0], hi[0] = ht[size], hs[size], hi[size]
        pos[hi[0]] = 0
        _down(ht, hs, hi, pos, 0, size)
    return size
