"""PAT (Parallel Aggregated Trees) AllGather and
ReduceScatter: NCCL's log-step algorithm for one GPU per node.

NCCL 2.23+ runs PAT for AllGather and ReduceScatter when every node has one GPU (src/graph/tuning.cc
``ncclPatEnable``; ``collsim.nccl.tuning``). Its schedule (src/include/collectives.h
``PatAGAlgorithm``, ``PatRSAlgorithm``; Jeaugey, arXiv 2506.20252) is a Bruck pattern with the
dimensions reversed: the data of rank r + s reaches rank r along the set bits of the distance s, the
highest first, each hop a peer at distance 2^d (``sendDims``/``recvDims``, "Should cover 2^32
ranks"); distances of nranks or more are skipped (``if (s >= nranks) skip``), so any rank count
works in log2Up(nranks) dimensions.

As a schedule on the collective's buffer (``collsim.core.collective``): for dimension d from the
highest down, every segment b moves from the rank at distance u to the one at distance u + 2^d (u a
multiple of 2^(d+1), u + 2^d < P), copied (AllGather) ; ReduceScatter is the same tree run
backwards: every transfer reversed in time and direction, adding, so that segment b's partial sums
flow to rank b. NCCL aggregates the segments of one dimension into one step of its staging buffer
and keeps up to 16 steps in flight (``parallelFactor``, NCCL_PAT_NWORKERS / 32); here each segment
is its own transfer (the checker needs the places), each segment is cut in ``chunks`` pieces that
follow each other one dimension behind (piece j runs dimension step s at step j + s), and the
connection window keeps up to 16 in flight (``collsim.predict.schedules``). PAT runs on every
channel of its own: one ring of channels per call.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.core.collective import get as get_collective
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, REDUCE, Schedule

MAX_IN_FLIGHT = 16     # PAT's parallel steps: NCCL_PAT_NWORKERS 512 / 32 (src/device/all_gather.h)
CHUNK = 524288         # NCCL's PAT chunk at the default buffer: one Simple slot (calcCollChunking)


def _dims(ranks: int) -> int:
    return max(1, (ranks - 1).bit_length())


def pat(ranks: int, count: int, itemsize: int = 4, *, gather: bool, chunks: int = 1,
        channels: int = 1) -> Schedule:
    """PAT AllGather (``gather``) or ReduceScatter (module docstring)."""
    name = "all_gather" if gather else "reduce_scatter"
    get_collective(name).check_count(ranks, count)
    seg = count // ranks
    off, ln = split_ranges(np.array([0]), np.array([seg]), channels)
    p_off, p_len = split_ranges(off[0], ln[0], chunks)                                   # (C, K)
    b = np.arange(ranks)
    rounds = []                                        # (src, dst, segment) of every dimension step
    for d in reversed(range(_dims(ranks))):
        u = np.arange(0, max(ranks - (1 << d), 0), 2 << d)
        blk = np.repeat(b, len(u))
        at = blk + np.tile(u, ranks)
        rounds.append(((at % ranks), (at + (1 << d)) % ranks, blk))
    if not gather:                               # the same tree backwards: reduce towards the owner
        rounds = [(dst, src, blk) for src, dst, blk in reversed(rounds)]
    out = ScheduleBuilder(ranks, count, itemsize, name="pat",
                          meta={"chunks": chunks, "channels": channels}, collective=name)
    k = len(rounds)
    for t in range(chunks + k - 1):
        parts = []
        for s in range(max(0, t - chunks + 1), min(k, t + 1)):
            j = t - s
            src, dst, blk = rounds[s]
            for c in range(channels):
                parts.append((src, dst, blk * seg + p_off[c, j], np.full(len(src), p_len[c, j]), c))
        src, dst, offset, length, ch = (np.concatenate(x) for x in zip(*[
            (p[0], p[1], p[2], p[3], np.full(len(p[0]), p[4])) for p in parts]))
        out.add_step(src, dst, offset, length, COPY if gather else REDUCE, channel=ch)
    return out.build()


def pat_time(p: int, nb, links, params: dict, *, reduce: bool):
    """Upper bound on a uniform topology: the K + D - 1 steps (D = ``_dims``) one after the other,
    each one alpha, and every rank's (P-1)/P N bytes through its port in turn, adding (+ gamma) for
    ReduceScatter: T = (K + D - 1) alpha + (P-1)/P N (beta + gamma); 0 on one rank."""
    if p == 1:
        return np.zeros_like(nb)
    rate = links.beta + (links.gamma if reduce else 0.0)
    return (params["chunks"] + _dims(p) - 1) * links.alpha + (p - 1) / p * nb * rate


def _granularity(p: int, q: dict) -> int:
    return p * q["chunks"] * q["channels"]


def _bound(p: int, q: dict) -> int:
    return (p - 1) * _granularity(p, q)


def _chunks(nbytes: int, ranks: int, q: dict) -> int:
    return max(1, -(-nbytes // (ranks * q["channels"] * CHUNK)))


FORMULA = ("D = ceil(log2 P) dimension steps, K chunks one dimension behind each other: T = (K + D "
           "- 1) alpha + (P-1)/P N beta{}")
EXACT = ('policy "schedule", uniform topology: exact for P <= 2 with one chunk (ReduceScatter: and '
         "one channel); otherwise an upper bound (every step waits for the last; the simulation "
         "overlaps the steps' alphas, and the channels' reductions, with the bytes)")
PAT_ALLGATHER = Algorithm(
    "pat", "NCCL's PAT all-gather: reversed Bruck, log2 P dimension steps, highest distance first",
    lambda *a, **q: pat(*a, gather=True, **q), _bound, params=("chunks", "channels"),
    default_chunks=_chunks, closed_form=lambda *a: pat_time(*a, reduce=False),
    granularity=_granularity, formula=FORMULA.format(""), exact=EXACT, nccl_name="PAT",
    collective="all_gather")
PAT_REDUCESCATTER = Algorithm(
    "pat", "NCCL's PAT reduce-scatter: PAT all-gather's trees run backwards, adding",
    lambda *a, **q: pat(*a, gather=False, **q), _bound, params=("chunks", "channels"),
    default_chunks=_chunks, closed_form=lambda *a: pat_time(*a, reduce=True),
    granularity=_granularity, formula=FORMULA.format(" + (P-1)/P N gamma"), exact=EXACT,
    nccl_name="PAT", collective="reduce_scatter")
