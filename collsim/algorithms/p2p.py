"""AlltoAll and SendRecv as NCCL runs them: grouped
point-to-point operations, per peer, on p2p channels.

NCCL has no collective kernel and no cost model for these (``collsim.nccl.tuning``): nccl-tests'
alltoall posts ncclSend/ncclRecv to every peer in one group, sendrecv a send to rank r+1 and a
receive from r-1. NCCL orders a group's peers by rounds (src/init.cc p2pSchedule: in round q rank r
sends to r + q and receives from r - q) and spreads each peer's bytes over ``chunks`` p2p channels
of its own (``collsim.nccl.p2p``; src/enqueue.cc, ncclP2pChannelForPart); here round q's parts take
channels (q x chunks + i) mod ``channels``, so consecutive peers run on different channels, and a
channel runs the peers it is given together, up to 8 (NCCL_MAX_DEV_WORK_P2P_PER_BATCH: one batch's
p2p operations, each on a group of the channel's warps, a lane here); a ninth waits for the first
(the schedule's transfer order).

All of it is one step: every send reads what its rank held at the start, which is nccl-tests'
alltoall (rank k's segment r ends with rank r's segment k, each transfer writing at ``dst_offset``)
and its ring shift (rank r ends with rank r-1's buffer).
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import Algorithm
from collsim.core.collective import get as get_collective
from collsim.core.compose import ScheduleBuilder, split_ranges
from collsim.core.schedule import COPY, Schedule

P2P_PER_BATCH = 8        # NCCL_MAX_DEV_WORK_P2P_PER_BATCH: p2p operations a channel runs together


def _parts(length: int, chunks: int):
    return split_ranges(np.array([0]), np.array([length]), chunks)


def alltoall(ranks: int, count: int, itemsize: int = 4, chunks: int = 1,
             channels: int = 1) -> Schedule:
    """nccl-tests' alltoall as NCCL's grouped sends and receives (module docstring)."""
    get_collective("alltoall").check_count(ranks, count)
    b = ScheduleBuilder(ranks, count, itemsize, name="p2p",
                        meta={"chunks": chunks, "channels": channels}, collective="alltoall")
    _alltoall_sends(b, ranks, count, chunks, channels, ranks)
    return b.build()


def alltoall_fold(ranks: int, count: int, itemsize: int = 4, chunks: int = 1, channels: int = 1,
                  unit: int = 1) -> Schedule:
    """``alltoall(ranks, count, ...)`` seen from two consecutive units of ``unit`` ranks (a node,
    or the group under the fabric's top switches), for the simulation only: its ranks 0..2 unit-1
    send every send of theirs, and a send to a rank of another unit goes to the rank at its place
    in the other kept unit (rank r of unit u stands for the rank r of every unit u + 2k + 1 it
    sends to). When the schedule and the machine repeat every unit (``ranks`` a multiple of at
    least 3 units, NICs alike, the fabric's groups whole units) the shift of every rank one unit
    on maps each onto itself, each send keeps its route's kind (within a node, across nodes,
    across the units' switches) and every port the same set of sends, images of its own: each
    send's time is its image's, exactly, with ranks / (2 unit) times fewer transfers. Writes of
    several sends land on one place of the kept receiver: not a checkable result."""
    get_collective("alltoall").check_count(ranks, count)
    b = ScheduleBuilder(2 * unit, count, itemsize, name="p2p",
                        meta={"chunks": chunks, "channels": channels, "folded_of": ranks},
                        collective="alltoall")
    _alltoall_sends(b, ranks, count, chunks, channels, unit)
    return b.build()


def _alltoall_sends(b: ScheduleBuilder, ranks: int, count: int, chunks: int, channels: int,
                    unit: int) -> None:
    """Every send of ranks 0..min(2 unit, ranks)-1 of the alltoall in one step (``alltoall``;
    ``alltoall_fold`` for ``unit`` < ``ranks``)."""
    seg, kept = count // ranks, min(2 * unit, ranks)
    p_off, p_len = (a[0] for a in _parts(seg, chunks))
    q, r, i = (a.ravel()
               for a in np.meshgrid(np.arange(1, ranks), np.arange(kept), np.arange(chunks),
                                    indexing="ij"))
    peer = (r + q) % ranks
    dst = np.where(peer // unit == r // unit, peer, peer % unit + unit * (1 - r // unit))
    slot = (q - 1) * chunks + i
    b.add_step(r, dst, peer * seg + p_off[i], p_len[i], COPY, channel=(slot + chunks) % channels,
               lane=slot // channels % P2P_PER_BATCH, dst_offset=r * seg + p_off[i])


def sendrecv(ranks: int, count: int, itemsize: int = 4, chunks: int = 1,
             channels: int = 1) -> Schedule:
    """nccl-tests' sendrecv: every rank sends its buffer to the next (module docstring)."""
    b = ScheduleBuilder(ranks, count, itemsize, name="p2p",
                        meta={"chunks": chunks, "channels": channels}, collective="sendrecv")
    p_off, p_len = (a[0] for a in _parts(count, chunks))
    r, i = (a.ravel() for a in np.meshgrid(np.arange(ranks), np.arange(chunks), indexing="ij"))
    b.add_step(r, (r + 1) % ranks, p_off[i], p_len[i], COPY, channel=(chunks + i) % channels)
    return b.build()


def alltoall_time(p: int, nb, links, params: dict):
    """Closed form on a uniform topology: every rank's send (and receive) port serves its (P-1)/P N
    bytes one part after the other, the last arriving alpha later: alpha + (P-1)/P N beta; 0 on one
    rank (nothing to send)."""
    if p == 1:
        return np.zeros_like(nb)
    return links.alpha + (p - 1) / p * nb * links.beta


def sendrecv_time(p: int, nb, links, params: dict):
    """Closed form on a uniform topology: every rank's port serves its N bytes, the last part
    arriving alpha later: alpha + N beta (one rank sends to itself too)."""
    return links.alpha + nb * links.beta


EXACT = 'policy "schedule": exact on a uniform topology for N a multiple of the granularity'
P2P_ALLTOALL = Algorithm(
    "p2p", "NCCL's alltoall: a send and a receive to every peer, in rounds, on p2p channels",
    alltoall, lambda p, q: p * (p - 1) * q["chunks"], params=("chunks", "channels"),
    default_chunks=lambda nb, p, q: 1, closed_form=alltoall_time,
    granularity=lambda p, q: p * q["chunks"], formula="alpha + (P-1)/P N beta (one step: every "
    "port serves its P-1 segments in turn)", exact=EXACT + " (0 on one rank)",
    collective="alltoall")
P2P_SENDRECV = Algorithm(
    "p2p", "nccl-tests' sendrecv: rank r sends to r+1 and receives from r-1, on p2p channels",
    sendrecv, lambda p, q: p * q["chunks"], params=("chunks", "channels"),
    default_chunks=lambda nb, p, q: 1, closed_form=sendrecv_time,
    granularity=lambda p, q: q["chunks"], formula="alpha + N beta (one step: every port serves the "
    "whole buffer)", exact=EXACT, collective="sendrecv")
