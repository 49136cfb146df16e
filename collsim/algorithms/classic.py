"""Reference algorithms: Rabenseifner halving-doubling, recursive doubling, direct.

With C channels the buffer is cut into C parts, each running the algorithm on
its own channel, all channels of a step in one schedule step in channel order
(direct: round by round, channels in order within a round).

Non-power-of-two P (Thakur, Rabenseifner and Gropp 2005): with p' the largest
power of two <= P and r = P - p', first every even rank 2i < 2r adds its whole
buffer into rank 2i+1; the p' remaining ranks (odd ranks below 2r and all ranks
from 2r on) run the power-of-two algorithm; last every rank 2i+1 copies the
result back to rank 2i.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.algorithms.timing import chain, step
from collsim.algorithms.tree import channel_parts
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, REDUCE, Schedule


def fold(ranks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(active ranks of length p', evens that fold in, odds they fold into)."""
    p2 = 1 << (ranks.bit_length() - 1)
    r = ranks - p2
    active = np.r_[np.arange(1, 2 * r, 2), np.arange(2 * r, ranks)].astype(np.int64)
    return active, np.arange(0, 2 * r, 2, dtype=np.int64), np.arange(1, 2 * r, 2, dtype=np.int64)


def _with_fold(name: str, ranks: int, count: int, itemsize: int, channels: int, body) -> Schedule:
    b = ScheduleBuilder(ranks, count, itemsize, name=name, meta={"channels": channels})
    active, evens, odds = fold(ranks)
    part_off, part_len = channel_parts(count, channels)

    def step(src, dst, off, ln, op):
        """One step: rows (C, n) of every channel's transfers, channel by channel."""
        shape = (channels, len(src))
        b.add_step(*(np.broadcast_to(x, shape).ravel() for x in (src, dst, off, ln)), op,
                   channel=np.broadcast_to(np.arange(channels)[:, None], shape).ravel())

    step(evens, odds, part_off[:, None], part_len[:, None], REDUCE)
    body(step, active, part_off, part_len)
    step(odds, evens, part_off[:, None], part_len[:, None], COPY)
    return b.build()


def recursive_doubling(ranks: int, count: int, itemsize: int = 4, channels: int = 1) -> Schedule:
    """log2(p') steps: rank i adds its whole part into partner i ^ d, d = 1, 2, 4, ..."""
    def body(step, active, part_off, part_len):
        i = np.arange(len(active))
        d = 1
        while d < len(active):
            step(active, active[i ^ d], part_off[:, None], part_len[:, None], REDUCE)
            d *= 2
    return _with_fold("recursive-doubling", ranks, count, itemsize, channels, body)


def halving_doubling(ranks: int, count: int, itemsize: int = 4, channels: int = 1) -> Schedule:
    """Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive doubling.

    With p' chunks of each channel's part (``split_ranges``), halving step d = p'/2, ..., 1:
    index i keeps chunks [base, base+2d) half given by bit d of i and adds the other half into
    partner i ^ d (base = i with its low log2(2d) bits cleared). Index i then owns
    chunk i; doubling reverses the steps with copies.
    """
    def body(step, active, part_off, part_len):
        p2 = len(active)
        off, ln = split_ranges(part_off, part_len, p2)                  # (C, p')
        edge = np.concatenate([off, (part_off + part_len)[:, None]], axis=1)
        i = np.arange(p2)
        dists = [p2 >> k for k in range(1, p2.bit_length())]     # p'/2, ..., 1
        for d in dists:
            base = i & ~(2 * d - 1)
            send_lo = np.where(i & d, base, base + d)
            step(active, active[i ^ d], edge[:, send_lo], edge[:, send_lo + d] - edge[:, send_lo],
                 REDUCE)
        for d in reversed(dists):
            lo = i & ~(d - 1)
            step(active, active[i ^ d], edge[:, lo], edge[:, lo + d] - edge[:, lo], COPY)
    return _with_fold("halving-doubling", ranks, count, itemsize, channels, body)


def direct(ranks: int, count: int, itemsize: int = 4, channels: int = 1) -> Schedule:
    """One-shot: one step in which every rank adds its part into every other rank, on every channel.

    Transfers are listed round by round (round k: rank i -> i + k), channel by channel within a
    round, so that with FIFO ports every round uses each port once per channel.
    """
    b = ScheduleBuilder(ranks, count, itemsize, name="direct", meta={"channels": channels})
    part_off, part_len = channel_parts(count, channels)
    shape = (ranks - 1, channels, ranks)
    k = np.arange(1, ranks)[:, None, None]
    c = np.arange(channels)[None, :, None]
    src = np.broadcast_to(np.arange(ranks)[None, None, :], shape)
    b.add_step(src.ravel(), ((src + k) % ranks).ravel(),
               np.broadcast_to(part_off[c], shape).ravel(),
               np.broadcast_to(part_len[c], shape).ravel(), REDUCE,
               channel=np.broadcast_to(c, shape).ravel())
    return b.build()


def _fold_steps(p: int, part, links, middle: list) -> list:
    """(d, h, count) steps of a folded algorithm: the fold
    in and out around the power-of-two ``middle``."""
    a, b, g = links.alpha, links.beta, links.gamma
    if p == 1 << (p.bit_length() - 1):
        return middle
    return [(*step(part, a, b, g), 1)] + middle + [(*step(part, a, b, 0.0), 1)]


def _rd_time(p: int, nb, links, q: dict):
    part = nb / q["channels"]
    lg = p.bit_length() - 1
    steps = _fold_steps(p, part, links,
                        [(*step(part, links.alpha, links.beta, links.gamma), lg)] if lg else [])
    return chain(steps, q["channels"]) if steps else np.zeros_like(nb)


def _hd_time(p: int, nb, links, q: dict):
    part, p2 = nb / q["channels"], 1 << (p.bit_length() - 1)
    a, b, g = links.alpha, links.beta, links.gamma
    dists = [p2 >> k for k in range(1, p2.bit_length())]
    middle = [(*step(part * d / p2, a, b, g), 1) for d in dists] + \
             [(*step(part * d / p2, a, b, 0.0), 1) for d in reversed(dists)]
    steps = _fold_steps(p, part, links, middle)
    return chain(steps, q["channels"]) if steps else np.zeros_like(nb)


def _direct_time(p: int, nb, links, q: dict):
    if p == 1:
        return np.zeros_like(nb)
    return chain([(*step(nb / q["channels"], links.alpha, links.beta, links.gamma), p - 1)],
                 q["channels"])


_EXACT = ("an upper bound under policy \"schedule\" (a rank's messages to several peers overlap "
          'their latencies in the simulation; every step of the form pays alpha); policy "fair" '
          "(the default): the same on one channel, never above the one-channel form")
HALVING_DOUBLING = Algorithm(
    "halving-doubling",
    "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather",
    halving_doubling, lambda p, q: 2 * p * p.bit_length() * q["channels"], closed_form=_hd_time,
    granularity=lambda p, q: (1 << (p.bit_length() - 1)) * q["channels"],
    formula="steps of m = N/C x d/p' (halving d = p'/2..1 reducing, doubling back), fold steps of "
            "N/C: timing.chain; one channel: 2 L alpha + 2 (p'-1)/p' N beta + (p'-1)/p' N gamma + "
            "f (2 alpha + 2 N beta + N gamma)",
    exact="exact on a uniform topology with one channel for N a multiple of the granularity "
          '(either policy); with channels an upper bound under policy "schedule", and between this '
          'form and the one-channel form under policy "fair" (the default: the channels share '
          "every port and pay their latencies together)")
RECURSIVE_DOUBLING = Algorithm(
    "recursive-doubling", "log2(P) steps exchanging the whole buffer", recursive_doubling,
    lambda p, q: p * (p.bit_length() + 1) * q["channels"], closed_form=_rd_time,
    granularity=lambda p, q: q["channels"],
    formula="L steps of N/C reducing (+ fold in and out): timing.chain; one channel: L (alpha + N "
            "beta + N gamma) + f (2 alpha + 2 N beta + N gamma)", exact=_EXACT)
DIRECT = Algorithm(
    "direct", "one-shot: every rank sends its whole buffer to every other rank", direct,
    lambda p, q: p * (p - 1) * q["channels"], closed_form=_direct_time,
    granularity=lambda p, q: q["channels"],
    formula="P-1 rounds of N/C reducing: timing.chain; one channel: (P-1) (alpha + N beta + N "
            "gamma)", exact=_EXACT)
