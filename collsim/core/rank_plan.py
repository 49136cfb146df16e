"""A schedule as one rank runs it on a real backend: per step, its sends and its receives.

``rank_plan(schedule, rank)`` cuts a ``Schedule`` into what rank ``rank`` does in every step:

* ``sends``: (dst, offset, count) in schedule order: elements [offset, offset + count) of its own
  buffer go to rank dst;
* ``recvs``: (src, offset, count, op, slot) in schedule order: count elements arrive from rank src
  into a scratch buffer at element ``slot``, then are added to (op ``REDUCE``) or written over
  (op ``COPY``) elements [offset, offset + count) of its buffer. src == rank is a transfer to
  itself: its slot is filled from its own buffer, no message.

A rank runs step k in three parts (``execute`` below does exactly this with numpy for every rank;
``runners/schedule_bench.py`` does it with torch.distributed):

1. fill the slots of its transfers to itself from its buffer;
2. post every send (the buffer itself: nothing changes it before the step's messages are done, so
   every send reads the buffer as at the start of the step) and every receive (into its slot) as
   one batch, and wait for all of them;
3. apply the receives in schedule order: add or overwrite.

Messages from one rank to another are matched in the order they were posted, and both sides list
them in the schedule's order (step, then position in the step), so the n-th send from a to b is the
n-th receive of b from a: no tags, and no barrier between steps (a rank starts step k + 1 when its
own step k is done; what it sends then is what the schedule sends). Element offsets and counts are
in elements of the buffer's dtype. This module does not import torch.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from collsim.core.atoms import static_error
from collsim.core.schedule import COPY, REDUCE, Schedule
from collsim.errors import CollsimError


@dataclass(frozen=True)
class StepPlan:
    """One rank's part of one step: ``sends`` (dst, offset, count), ``recvs`` (src, offset, count,
    op, slot) and ``scratch``, the elements of scratch the step's receives need."""

    sends: tuple[tuple[int, int, int], ...]
    recvs: tuple[tuple[int, int, int, int, int], ...]
    scratch: int


@dataclass(frozen=True)
class RankPlan:
    """Rank ``rank``'s part of every step of a schedule of ``count`` elements per rank."""

    rank: int
    count: int
    steps: tuple[StepPlan, ...]

    @property
    def scratch(self) -> int:
        """Elements of scratch buffer the busiest step needs."""
        return max((s.scratch for s in self.steps), default=0)


def fit_error(schedule: Schedule, world: int) -> str | None:
    """Why ``schedule`` cannot run on ``world`` ranks of a
    real backend, in one line; None if it can.

    Refused: a transfer to or from an endpoint past the schedule's ranks (an NVSwitch: no backend
    here has one), a schedule for another rank count, a negative rank, an element range outside
    the buffer.
    """
    s = schedule
    beyond = np.flatnonzero((s.src >= s.ranks) | (s.dst >= s.ranks))
    if len(beyond):
        i = int(beyond[0])
        t = s.transfer(i)
        return (f"{s.place(i)}: {t.src} -> {t.dst} goes through a switch endpoint (ranks are "
                f"0..{s.ranks - 1}); no backend here has an NVSwitch to run it")
    if s.ranks != world:
        return f"the schedule is for {s.ranks} ranks, the run has {world}"
    static = static_error(s)
    if static:
        return f"{s.place(static[0])}: {static[1]}"
    return None


def rank_plan(schedule: Schedule, rank: int) -> RankPlan:
    """Rank ``rank``'s sends and receives in every step (module docstring); every step is listed,
    empty where the rank does nothing. The schedule must fit (``fit_error``)."""
    s = schedule
    rows = list(zip(*(a.tolist() for a in (s.src, s.dst, s.offset, s.length, s.op))))
    steps = []
    for k in range(s.n_steps):
        step = rows[s.step_ptr[k]:s.step_ptr[k + 1]]
        sends = tuple((d, o, n) for a, d, o, n, _ in step if a == rank != d)
        recvs, slot = [], 0
        for a, d, o, n, op in step:
            if d == rank:
                recvs.append((a, o, n, op, slot))
                slot += n
        steps.append(StepPlan(sends, tuple(recvs), slot))
    return RankPlan(rank, s.count, tuple(steps))


def execute(plans: list[RankPlan], data) -> np.ndarray:
    """Run every rank's plan on ``data`` (ranks x count, any numeric dtype) as the ranks would:
    each message taken from its sender's buffer at the start of the step, matched to its receive
    in posting order per (sender, receiver); returns the buffers after the last step. A plan
    whose receives do not match the sends (count or sender) raises ``CollsimError``."""
    buf = np.array(data, copy=True)
    if buf.ndim != 2 or buf.shape[0] != len(plans) or any(p.count != buf.shape[1] for p in plans):
        raise CollsimError(f"data of shape {buf.shape} does not fit {len(plans)} plans")
    queues: dict[tuple[int, int], deque] = {}
    for k in range(len(plans[0].steps) if plans else 0):
        start = buf.copy()
        for p in plans:
            for dst, off, n in p.steps[k].sends:
                queues.setdefault((p.rank, dst), deque()).append(start[p.rank, off:off + n])
        for p in plans:
            scratch = np.zeros(p.steps[k].scratch, buf.dtype)
            for src, off, n, _, slot in p.steps[k].recvs:
                pending = queues.get((src, p.rank))
                msg = (start[p.rank, off:off + n] if src == p.rank
                       else pending.popleft() if pending else None)
                if msg is None or len(msg) != n:
                    raise CollsimError(f"step {k + 1} of {len(p.steps)}: rank {p.rank} expects {n} "
                                       f"elements from rank {src}, "
                                       f"{'none were sent' if msg is None else f'{len(msg)} were'}")
                scratch[slot:slot + n] = msg
            for src, off, n, op, slot in p.steps[k].recvs:
                if op == REDUCE:
                    buf[p.rank, off:off + n] += scratch[slot:slot + n]
                elif op == COPY:
                    buf[p.rank, off:off + n] = scratch[slot:slot + n]
    unmatched = [pair for pair, q in queues.items() if q]
    if unmatched:
        raise CollsimError(f"rank {unmatched[0][0]} sends to rank {unmatched[0][1]} more than it "
                           f"receives")
    return buf
