"""Broadcast and Reduce as NCCL runs them: a pipelined chain
along each channel's ring, from or to root 0.

NCCL's Broadcast and Reduce use the Ring algorithm only (src/graph/tuning.cc) and run a chain, not a
ring (src/device/broadcast.h, reduce.h runRing): on each channel's ring (``ring_orders``) the root
sends, each next rank receives and forwards (recvCopySend), the rank before the root only receives;
Reduce runs the other way: the rank after the root sends, each next one adds its own and forwards
(recvReduceSend), the root adds the last (recvReduceCopy). Every channel owns a contiguous part of
the buffer, cut in ``chunks`` pieces (one slot each, BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1:
``collsim.predict.schedules``) that follow each other down the chain: piece j crosses hop h at step
j + h, so a chain of n ranks takes chunks + n - 2 steps.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.ring import ring_orders
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, REDUCE, Schedule

# bytes of one Simple slot at NCCL's default 4 MiB buffer (NCCL_BUFFSIZE / NCCL_STEPS)
SLOT = 524288


def chain(ranks: int, count: int, itemsize: int = 4, *, reduce: bool, chunks: int = 1,
          channels: int = 1, gpus_per_node: int | None = None,
          nics_per_node: int | None = None) -> Schedule:
    """The pipelined chain from root 0 (Broadcast) or to it (``reduce``), module docstring."""
    name = "reduce" if reduce else "broadcast"
    meta = {"chunks": chunks, "channels": channels,
            **({"gpus_per_node": gpus_per_node} if gpus_per_node is not None else {})}
    b = ScheduleBuilder(ranks, count, itemsize, name="ring", meta=meta, collective=name)
    orders = ring_orders(ranks, channels, gpus_per_node, nics_per_node=nics_per_node)       # (C, P)
    start = np.argmax(orders == 0, axis=1)                                        # the root's place
    shift = start + 1 if reduce else start        # Reduce: from the rank after the root, ends on it
    path = np.take_along_axis(orders, (shift[:, None] + np.arange(ranks)) % ranks, axis=1)
    off, ln = split_ranges(np.array([0]), np.array([count]), channels)
    p_off, p_len = split_ranges(off[0], ln[0], chunks)                                      # (C, K)
    hops = ranks - 1
    for t in range(chunks + hops - 1):
        h = np.arange(max(0, t - chunks + 1), min(hops, t + 1))                # hops busy at step t
        j = t - h
        c = np.repeat(np.arange(channels), len(h))
        hh, jj = np.tile(h, channels), np.tile(j, channels)
        b.add_step(path[c, hh], path[c, hh + 1], p_off[c, jj], p_len[c, jj],
                   REDUCE if reduce else COPY, channel=c)
    return b.build()


def chain_time(p: int, nb, links, params: dict, *, reduce: bool):
    """Closed form on a uniform topology: every hop's ports serve the C K pieces of m = N/(C K)
    bytes one after the other (hold h = m beta, + m gamma on the engine when it reduces), a piece
    crossing hop k + 1 when it has arrived over hop k: T = (P-1) alpha + (C K + P - 2) h' with h' =
    m (beta + gamma) (gamma 0 for Broadcast); 0 on one rank."""
    if p == 1:
        return np.zeros_like(nb)
    k = params["channels"] * params["chunks"]
    hold = nb / k * (links.beta + (links.gamma if reduce else 0.0))
    return (p - 1) * links.alpha + (k + p - 2) * hold


def _chunks(nbytes: int, ranks: int, q: dict) -> int:
    return max(1, -(-nbytes // (q["channels"] * SLOT)))


def _granularity(p: int, q: dict) -> int:
    return q["chunks"] * q["channels"]


PARAMS = ("chunks", "channels", "gpus_per_node", "nics_per_node")
FORMULA = ("C K pieces of m = N/(C K) down a chain of P-1 hops, a hop's ports serving them one "
           "after the other: T = (P-1) alpha + (C K + P - 2) m beta{}")
EXACT = ('policy "schedule": exact on a uniform topology for N a multiple of the granularity when '
         "every channel runs the same ring (one node: gpus_per_node none or P){}; rail rings "
         "across nodes cross other ports per channel: neither exact nor a bound")
CHAIN_BROADCAST = Algorithm(
    "ring", "NCCL's Broadcast: a chain from root 0 along each channel's ring, pipelined in chunks",
    lambda *a, **q: chain(*a, reduce=False, **q), lambda p, q: (p - 1) * _granularity(p, q),
    params=PARAMS, default_chunks=_chunks,
    closed_form=lambda *a: chain_time(*a, reduce=False), granularity=_granularity,
    formula=FORMULA.format(""), exact=EXACT.format(""), nccl_name="Ring", collective="broadcast")
CHAIN_REDUCE = Algorithm(
    "ring", "NCCL's Reduce: a chain to root 0 along each channel's ring, pipelined in chunks",
    lambda *a, **q: chain(*a, reduce=True, **q), lambda p, q: (p - 1) * _granularity(p, q),
    params=PARAMS, default_chunks=_chunks,
    closed_form=lambda *a: chain_time(*a, reduce=True), granularity=_granularity,
    formula=FORMULA.format(" + (C K + P - 2) m gamma"),
    exact=EXACT.format(" and one channel or gamma 0; with C > 1 and gamma > 0 an upper bound (the "
                       "engine, not the port, holds a piece m gamma longer)"),
    nccl_name="Ring", collective="reduce")
