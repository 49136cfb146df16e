"""A port's jobs in the engine (``collsim.simulate.events``, policy "fair"): kernels
(``collsim.simulate.jit``) on the engine's arrays.

A port p holds its jobs in a list, ``head[p]`` the first (-1: none) and ``jnext[j]`` the one after
job j; ``count[p]`` of them. ``pt[p]`` is the time in seconds to which its jobs have been served;
job j still owes ``jleft[j]`` of service (seconds of the whole port), takes ``jrate[j]`` of the
port's rate (a fraction of 1) and at most ``caps[j]`` of it; ``fixed`` is scratch for the shares.
"""
from __future__ import annotations

import numpy as np

from collsim.simulate.jit import jit


@jit
def serve(p, t, pt, head, jnext, jleft, jrate):
    """Port p's jobs served from its last time to t."""
    dt = t - pt[p]
    if dt > 0:
        j = head[p]
        while j >= 0:
            jleft[j] -= jrate[j] * dt
            j = jnext[j]
    pt[p] = t


@jit
def shares(p, head, count, jnext, caps, jrate, fixed):
    """Max-min fair rates of port p's jobs
    (``collsim.simulate.fair.rates``: the smallest caps first)."""
    k = count[p]
    if k == 0:
        return
    level = 1.0 / k
    low, high = 2.0, -1.0
    j = head[p]
    while j >= 0:
        fixed[j] = False
        if caps[j] < low:
            low = caps[j]
        if caps[j] > high:
            high = caps[j]
        j = jnext[j]
    if low >= level or high <= level:       # every job its equal share, or every job its cap
        j = head[p]
        while j >= 0:
            jrate[j] = level if low >= level else caps[j]
            j = jnext[j]
        return
    rest, m = 1.0, k
    while m > 0:           # the smallest cap left, while it is below an equal share of what is left
        best, j = -1, head[p]
        while j >= 0:
            if not fixed[j] and (best < 0 or caps[j] < caps[best]):
                best = j
            j = jnext[j]
        level = rest / m
        if caps[best] >= level:
            break
        jrate[best] = caps[best]
        fixed[best] = True
        rest -= caps[best]
        m -= 1
    j = head[p]
    while j >= 0:
        if not fixed[j]:
            jrate[j] = rest / m
        j = jnext[j]


@jit
def next_end(p, head, pt, jnext, jleft, jrate):
    """When port p's next job is done (inf: none)."""
    best = np.inf
    j = head[p]
    while j >= 0:
        d = pt[p] + (jleft[j] / jrate[j] if jrate[j] > 0 else 0.0)
        if d < best:
            best = d
        j = jnext[j]
    return best
