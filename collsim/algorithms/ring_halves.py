"""Ring AllGather and ReduceScatter: one half of the ring AllReduce each, n-1 steps per channel.

The buffer convention is ``collsim.core.collective``'s: ``count`` elements per rank in ``ranks``
segments of ``count / ranks``; AllGather starts with rank r's data in segment r, ReduceScatter ends
with segment r of rank r holding the sum. As NCCL (src/device/all_gather.h, reduce_scatter.h
runRing), every channel moves its own contiguous part of every segment (the segment cut in C channel
parts, each in ``loops`` consecutive parts, one loop after the other), and position i of channel c's
ring (``ring_orders``: NCCL's rings, rail rings across nodes) sends:

* AllGather step k: the part of segment ``order[i - k]``
  (its own at k = 0, then what it received), copied;
* ReduceScatter step k: the part of segment ``order[i - k - 1]``, added by the receiver, so that
  after n-1 steps position i holds the sum of its own segment ``order[i]`` (the receive of the last
  step is NCCL's recvReduceCopy).

Both are ``ring_phases`` with the chunk of position j set to the segment of ``order[j - 1]``. With
``slices`` S every chunk step is S steps (NCCL's 4 chunk steps sent as 2 slices of 2 for Simple, as
AllReduce: ``collsim.predict.schedules``).
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.ring import ring_orders, ring_phases
from collsim.algorithms.timing import chain, step
from collsim.core.collective import get as get_collective
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import Schedule


def ring_half(ranks: int, count: int, itemsize: int = 4, *, gather: bool, slices: int = 1,
              channels: int = 1, gpus_per_node: int | None = None, direct: bool = False,
              loops: int = 1, nics_per_node: int | None = None) -> Schedule:
    """Ring AllGather (``gather``) or ReduceScatter of
    ``count`` elements per rank (module docstring)."""
    name = "all_gather" if gather else "reduce_scatter"
    get_collective(name).check_count(ranks, count)
    meta = {"slices": slices, "channels": channels, **({"loops": loops} if loops > 1 else {}),
            **({"gpus_per_node": gpus_per_node} if gpus_per_node is not None else {}),
            **({"direct": True} if direct else {}),
            **({"nics_per_node": nics_per_node} if nics_per_node else {})}
    b = ScheduleBuilder(ranks, count, itemsize, name="ring", meta=meta, collective=name)
    seg = count // ranks
    orders = ring_orders(ranks, channels, gpus_per_node, direct, nics_per_node)          # (C, P)
    off, ln = split_ranges(np.array([0]), np.array([seg]), channels)
    l_off, l_len = split_ranges(off[0], ln[0], loops)                          # (C, L)
    owner = np.roll(orders, 1, axis=1) * seg                                   # chunk j: order[j-1]
    for i in range(loops):
        chunks = owner + l_off[:, i, None], np.broadcast_to(l_len[:, i, None], owner.shape)
        ring_phases(b, orders, None, None, slices, reduce_scatter=not gather, all_gather=gather,
                    channel=np.arange(channels), chunks=chunks)
    return b.build()


def half_time(p: int, nb, links, params: dict, *, reduce: bool):
    """Closed form on a uniform topology (``timing.chain``): per loop (P-1)S steps of m = N/(P S C
    L) bytes per transfer, each reducing (ReduceScatter, ``reduce``) or not; 0 on one rank."""
    c, s, loops = params["channels"], params["slices"], params.get("loops", 1)
    if p == 1:
        return np.zeros_like(nb)
    m = nb / (p * s * c * loops)
    d, h = step(m, links.alpha, links.beta, links.gamma if reduce else 0.0)
    return chain([(d, h, (p - 1) * s)] * loops, c)


PARAMS = ("slices", "channels", "gpus_per_node", "direct", "loops", "nics_per_node")
FORMULA = ("K = (P-1)S steps of m = N/(P S C) (N: the whole buffer of P segments): d = alpha + m "
           "beta{}, h = m beta; T = timing.chain (as ring's); one channel: (P-1) S alpha + (P-1)/P "
           "N beta{}")
EXACT = ('policy "schedule": slices 1 exact on a uniform topology for N a multiple of the '
         "granularity, rail rings too; slices > 1 an upper bound (as ring's AllReduce)")


def _granularity(p: int, q: dict) -> int:
    return p * q["slices"] * q["channels"] * q.get("loops", 1)


def _bound(p: int, q: dict) -> int:
    return (p - 1) * _granularity(p, q)


RING_ALLGATHER = Algorithm(
    "ring", "ring all-gather per channel, P-1 steps; NCCL's rail rings across nodes",
    lambda *a, **q: ring_half(*a, gather=True, **q), _bound, params=PARAMS,
    closed_form=lambda *a: half_time(*a, reduce=False), granularity=_granularity,
    formula=FORMULA.format("", ""), exact=EXACT, nccl_name="Ring", collective="all_gather")
RING_REDUCESCATTER = Algorithm(
    "ring", "ring reduce-scatter per channel, P-1 steps; NCCL's rail rings across nodes",
    lambda *a, **q: ring_half(*a, gather=False, **q), _bound, params=PARAMS,
    closed_form=lambda *a: half_time(*a, reduce=True), granularity=_granularity,
    formula=FORMULA.format(" + m gamma", " + (P-1)/P N gamma"), exact=EXACT, nccl_name="Ring",
    collective="reduce_scatter")
