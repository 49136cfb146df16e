"""One record per collective NCCL runs, as nccl-tests keeps one ``testColl`` per file.

A ``Collective`` says what the collective computes, independently of any algorithm:

* its names: nccl-tests' (``all_gather``, the binary ``all_gather_perf``), NCCL's (``AllGather``,
  as ``NCCL_ALGO``/``NCCL_PROTO`` logs and the tuner spell it) and NCCL's ``ncclFunc_t``
  (``ncclFuncAllGather``, ``src/include/nccl_common.h``);
* the buffer convention every schedule of it follows: one buffer of ``count`` elements per rank,
  cut into ``ranks`` equal segments where the collective needs segments (``segmented``);
  ``start`` says which (rank, element) cells hold that rank's input at the start, ``complete``
  what every checked cell holds at the end (read by ``collsim.core.execution`` and
  ``collsim.core.checker``):

  - all_reduce: every rank ends with the elementwise sum;
  - all_gather: rank r starts with its data in segment r, every rank ends with every segment;
  - reduce_scatter: segment r of rank r ends with the sum of every rank's segment r;
  - broadcast: rank 0's buffer ends everywhere; reduce: rank 0 ends with the sum;
  - alltoall: rank k's segment r ends with rank r's segment k;
  - sendrecv (nccl-tests' ring shift): rank r ends with rank r-1's buffer;

* nccl-tests' size convention: its size column is ``count * itemsize``, the whole buffer of one
  rank (for all_gather the receive buffer, for reduce_scatter the send buffer: ``src/all_gather.cu``
  ``AllGatherGetCollByteCount``), which is also the ``nBytes`` NCCL's tuner costs
  (``src/enqueue.cc``: AllGather and ReduceScatter multiply their per-rank count by nRanks);
* nccl-tests' bus bandwidth factor (``busbw``: ``*GetBw`` in ``src/*.cu``);
* the algorithms NCCL's cost table holds for it (``algorithms``, NCCL's names,
  tuning.cc:271-277@v2.28.9, read by ``collsim.nccl.formulas``; AllReduce's PAT is costed and
  disabled there; empty for the p2p operations, which NCCL runs outside its cost table);
* nccl-tests' ``redop`` and ``root`` columns: ``redop`` ("sum" or "none"; nccl-tests prints sum for
  sendrecv too) and ``rooted`` (its -r root, 0 by default; the others print -1).

``get(name)`` accepts any of the three names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from collsim.errors import CollsimError, require_int
from collsim.units import algbw_GBps

ALL = -1          # ``Holding.source``: the sum of every rank's input, not one rank's


@dataclass(frozen=True)
class Atoms:
    """A buffer cut into atoms (``bounds``: atom boundaries in elements, 0 .. count) on ``ranks``
    ranks; ``segment``: elements per segment (count // ranks; 0 for an empty buffer)."""

    ranks: int
    bounds: np.ndarray

    @property
    def count(self) -> int:
        return int(self.bounds[-1])

    @property
    def segment(self) -> int:
        return self.count // self.ranks

    @property
    def n(self) -> int:
        return len(self.bounds) - 1

    def segment_of(self) -> np.ndarray:
        """The segment of every atom (int64, length ``n``)."""
        return self.bounds[:-1] // max(self.segment, 1)

    def grid(self):
        """(rank, segment) of every cell, arrays of shape (ranks, n)."""
        r = np.repeat(np.arange(self.ranks), self.n).reshape(self.ranks, self.n)
        return r, np.broadcast_to(self.segment_of(), r.shape)


@dataclass(frozen=True)
class Holding:
    """What the cells (rank, atom) hold at the end: ``checked`` (bool, (ranks, atoms)): the cells
    the collective defines; ``source`` (int): the rank whose input each holds, or ``ALL`` for the
    sum of every rank's; ``atom`` (int): the atom of that input (its own index unless data moves
    to another place, as in alltoall)."""

    checked: np.ndarray
    source: np.ndarray
    atom: np.ndarray


def _everywhere(a: Atoms, source) -> Holding:
    shape = (a.ranks, a.n)
    return Holding(np.ones(shape, bool), np.broadcast_to(np.asarray(source), shape),
                   np.broadcast_to(np.arange(a.n), shape))


def _own(a: Atoms) -> np.ndarray:
    return np.ones((a.ranks, a.n), bool)


def _alltoall_end(a: Atoms) -> Holding:
    rank, seg = a.grid()                 # rank k's segment r holds rank r's segment k
    moved = np.searchsorted(a.bounds, a.bounds[:-1] + (rank - seg) * a.segment)
    return Holding(np.ones(rank.shape, bool), seg, moved)


def _sendrecv_end(a: Atoms) -> Holding:
    rank = np.arange(a.ranks)[:, None]
    return _everywhere(a, (rank - 1) % a.ranks)


@dataclass(frozen=True)
class Collective:
    """One collective (module docstring). ``busbw(ranks)``: nccl-tests' bus bandwidth factor;
    ``start(atoms)``: bool (ranks, atoms), the cells that begin with their rank's input (the others
    begin empty); ``complete(atoms)``: the ``Holding`` at the end; ``reduces``: it sums inputs (a
    copy of a partial sum is then a mistake in an AllReduce's sense); ``segmented``: its buffer is
    cut in ``ranks`` segments, so ``count`` must be a multiple of ``ranks``."""

    name: str
    nccl_name: str
    nccl_func: str
    description: str
    busbw: Callable[[int], float]
    start: Callable[[Atoms], np.ndarray]
    complete: Callable[[Atoms], Holding]
    algorithms: tuple[str, ...] = ()
    reduces: bool = False
    segmented: bool = False
    redop: str = "none"
    rooted: bool = False

    def busbw_factor(self, ranks: int) -> float:
        """``busbw`` of a validated rank count (>= 1; 0 for one rank where data crosses no link)."""
        return float(self.busbw(require_int("ranks", ranks, 1)))

    def bandwidths(self, size: int, time_us: float, ranks: int) -> tuple[float, float]:
        """nccl-tests' (algbw, busbw) in GB/s (1e9 B/s) for ``size`` bytes (its size column) in
        ``time_us`` microseconds on ``ranks`` ranks: algbw = size / time (``algbw_GBps``: 0 for 0
        bytes, inf for a zero time, NaN for a negative one), busbw = algbw x ``busbw`` (NaN for
        ranks < 1, and for one rank with a zero time where the factor is 0)."""
        algbw = algbw_GBps(size, time_us / 1e6)
        return algbw, (algbw * self.busbw_factor(ranks) if ranks >= 1 else math.nan)

    def check_count(self, ranks: int, count: int) -> None:
        """One-line error when ``count`` elements cannot be cut in ``ranks`` equal segments."""
        if self.segmented and count % ranks:
            raise CollsimError(f"{self.name} cuts the buffer in one segment per rank: count "
                               f"{count} is not a multiple of {ranks} ranks")


def _ring_factor(n: int) -> float:
    return (n - 1) / n


ALLREDUCE = Collective(
    "all_reduce", "AllReduce", "ncclFuncAllReduce", "every rank ends with the elementwise sum",
    lambda n: 2 * (n - 1) / n, _own, lambda a: _everywhere(a, ALL),
    algorithms=("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"),
    reduces=True,
    redop="sum")
ALLGATHER = Collective(
    "all_gather", "AllGather", "ncclFuncAllGather",
    "rank r's segment r ends on every rank", _ring_factor,
    lambda a: a.grid()[0] == a.grid()[1], lambda a: _everywhere(a, a.grid()[1]),
    algorithms=("Ring", "PAT", "NVLS", "CollNetDirect"), segmented=True)
REDUCESCATTER = Collective(
    "reduce_scatter", "ReduceScatter", "ncclFuncReduceScatter",
    "segment r of rank r ends with the sum of every rank's segment r", _ring_factor, _own,
    lambda a: Holding(a.grid()[0] == a.grid()[1], np.full((a.ranks, a.n), ALL),
                      np.broadcast_to(np.arange(a.n), (a.ranks, a.n))),
    algorithms=("Ring", "PAT", "NVLS", "CollNetDirect"), reduces=True, segmented=True, redop="sum")
BROADCAST = Collective(
    "broadcast", "Broadcast", "ncclFuncBroadcast", "rank 0's buffer ends on every rank",
    lambda n: 1.0, lambda a: a.grid()[0] == 0, lambda a: _everywhere(a, 0), algorithms=("Ring",),
    rooted=True)
REDUCE = Collective(
    "reduce", "Reduce", "ncclFuncReduce", "rank 0 ends with the elementwise sum",
    lambda n: 1.0, _own,
    lambda a: Holding(a.grid()[0] == 0, np.full((a.ranks, a.n), ALL),
                      np.broadcast_to(np.arange(a.n), (a.ranks, a.n))),
    algorithms=("Ring",), reduces=True, redop="sum", rooted=True)
ALLTOALL = Collective(
    "alltoall", "AlltoAll", "ncclFuncAlltoAll", "rank k's segment r ends with rank r's segment k",
    _ring_factor, _own, _alltoall_end, segmented=True)
SENDRECV = Collective(
    "sendrecv", "SendRecv", "ncclFuncSendRecv", "rank r ends with rank r-1's buffer (a ring shift)",
    lambda n: 1.0, _own, _sendrecv_end, redop="sum")

COLLECTIVES: dict[str, Collective] = {c.name: c for c in (
    ALLREDUCE, ALLGATHER, REDUCESCATTER, BROADCAST, REDUCE, ALLTOALL, SENDRECV)}
_ALIASES = {alias.lower(): c for c in COLLECTIVES.values()
            for alias in (c.name, c.nccl_name, c.nccl_func, c.name.replace("_", ""))}


def named(value) -> str:
    """The nccl-tests name of a file's ``collective`` field in any of its spellings
    ("allreduce", "AllReduce"); None or empty: all_reduce (what every file without one holds)."""
    return get(value).name if value else ALLREDUCE.name


def get(name) -> Collective:
    """The record of ``name`` (nccl-tests', NCCL's or the ncclFunc spelling, any case), or the
    one-line "unknown collective" error."""
    if isinstance(name, Collective):
        return name
    c = _ALIASES.get(str(name).lower())
    if c is None:
        raise CollsimError(f"unknown collective {name!r}; choose from {', '.join(COLLECTIVES)}")
    return c


__all__ = ["ALL", "ALLGATHER", "ALLREDUCE", "ALLTOALL", "Atoms", "BROADCAST", "COLLECTIVES",
           "Collective", "Holding", "REDUCE", "REDUCESCATTER", "SENDRECV", "get", "named"]
