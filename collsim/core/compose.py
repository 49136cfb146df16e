"""Building schedules: ``ScheduleBuilder`` (append steps as arrays), even splits of a buffer
(``split_even``, ``split_ranges``) and composition of schedules (``concat`` one after another,
``wavefront`` pipelining, ``interleave`` side by side). Every algorithm in
``collsim.algorithms`` and every hand-written schedule in the notebooks is built with these; the
representation itself is ``collsim.core.schedule``."""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from collsim.core.document import op_code
from collsim.core.schedule import DTYPES, Schedule, ScheduleError


def concat(parts: Sequence[Schedule], name: str = "", meta: dict | None = None) -> Schedule:
    """Run schedules one after another (their steps are appended in order, channels kept)."""
    if not parts:
        raise ScheduleError("concat needs at least one schedule")
    first = parts[0]
    shape = lambda p: (p.ranks, p.count, p.itemsize, p.switches, p.network,  # noqa: E731
                       p.collective)
    for p in parts[1:]:
        if shape(p) != shape(first):
            raise ScheduleError("concat: schedules differ in ranks, count, itemsize, switches, "
                                "network or collective")
    ptrs, base = [np.zeros(1, np.int64)], 0
    for p in parts:
        ptrs.append(p.step_ptr[1:] + base)
        base += p.n_transfers
    cat = lambda attr: np.concatenate([getattr(p, attr) for p in parts])  # noqa: E731
    return Schedule(first.ranks, first.count, first.itemsize, src=cat("src"), dst=cat("dst"),
                    offset=cat("offset"), length=cat("length"), op=cat("op"),
                    step_ptr=np.concatenate(ptrs), name=name or first.name,
                    meta=meta if meta is not None else first.meta, channel=cat("channel"),
                    switches=first.switches, lane=cat("lane"), network=first.network,
                    dst_offset=cat("dst_offset") if any(p.shifted for p in parts) else None,
                    collective=first.collective)


class ScheduleBuilder:
    """Append steps as arrays; ``build()`` returns the ``Schedule``.

    >>> b = ScheduleBuilder(ranks=2, count=4)
    >>> b.add_step([0, 1], [1, 0], [0, 2], [2, 2], REDUCE)
    >>> b.add_step([1, 0], [0, 1], [0, 2], [2, 2], COPY)
    >>> b.build().n_transfers
    4

    Zero-length transfers are dropped (they move nothing); a step left empty is
    kept only if ``keep_empty`` is true. ``channel`` and ``lane`` broadcast like the other
    columns (default 0), ``dst_offset`` too (default: ``offset``, where the transfer reads).
    """

    def __init__(self, ranks: int, count: int, itemsize: int = 4, name: str = "",
                 meta: dict | None = None, switches: int = 0, network: int = 0,
                 collective: str = "all_reduce"):
        self.ranks, self.count, self.itemsize = int(ranks), int(count), int(itemsize)
        self.name, self.meta, self.switches, self.network = name, meta, int(switches), int(network)
        self.collective = collective
        self._cols: list[list[np.ndarray]] = [[], [], [], [], [], [], [], []]
        self._ptr = [0]

    def add_step(self, src, dst, offset, length, op, keep_empty: bool = False, channel=0, lane=0,
                 dst_offset=None) -> None:
        src = np.atleast_1d(np.asarray(src, dtype=np.int64))
        n = len(src)
        op = op_code(op) if isinstance(op, str) else op
        to = offset if dst_offset is None else dst_offset
        cols = [src] + [np.broadcast_to(np.asarray(x, dtype=t), (n,))
                        for x, t in zip((dst, offset, length, op, channel, lane, to), DTYPES[1:])]
        keep = cols[3] > 0
        if not keep.all():
            cols = [c[keep] for c in cols]
        if len(cols[0]) == 0 and not keep_empty:
            return
        for store, c in zip(self._cols, cols):
            store.append(c)
        self._ptr.append(self._ptr[-1] + len(cols[0]))

    def add_steps(self, src, dst, offset, length, op, channel=0, lane=0, dst_offset=None) -> None:
        """Append many steps at once: 2-D arrays (steps x transfers per step), broadcastable
        to one shape; zero-length transfers are dropped and steps left empty skipped."""
        to = offset if dst_offset is None else dst_offset
        cols = [np.asarray(x, dtype=t)
                for x, t in zip((src, dst, offset, length, op, channel, lane, to), DTYPES)]
        shape = np.broadcast_shapes(*(c.shape for c in cols))
        if len(shape) != 2:
            raise ScheduleError("add_steps needs 2-D arrays (steps x transfers)")
        keep = np.broadcast_to(cols[3] > 0, shape)
        sizes = keep.sum(axis=1)
        every = bool(sizes.sum() == keep.size)
        for store, c in zip(self._cols, cols):
            c = np.broadcast_to(c, shape)
            store.append(c.ravel() if every else c[keep])      # ravel of a broadcast: one fast copy
        self._ptr.extend((self._ptr[-1] + np.cumsum(sizes[sizes > 0])).tolist())

    def build(self) -> Schedule:
        cols = [(np.concatenate(c) if len(c) > 1 else c[0]) if c else np.zeros(0, t)
                for c, t in zip(self._cols, DTYPES)]
        return Schedule(self.ranks, self.count, self.itemsize, *cols[:5], np.array(self._ptr),
                        name=self.name, meta=self.meta, channel=cols[5], switches=self.switches,
                        lane=cols[6], network=self.network, dst_offset=cols[7],
                        collective=self.collective)


def split_even(count: int, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``count`` elements into ``parts`` contiguous chunks as evenly as possible.

    Returns (offsets, lengths), each of length ``parts``; the first
    ``count % parts`` chunks are one element longer. Works for count < parts
    (some chunks are empty) and count == 0.
    """
    parts = int(parts)
    q, r = divmod(int(count), parts)
    lengths = np.full(parts, q, dtype=np.int64)
    lengths[:r] += 1
    offsets = np.zeros(parts, dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return offsets, lengths


def split_ranges(offset: np.ndarray, length: np.ndarray,
                 parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Split every range (offset[g], length[g]) into ``parts`` even pieces.

    Vectorized ``split_even``: returns (offsets, lengths) of shape (G, parts),
    the first ``length % parts`` pieces one element longer.
    """
    offset, length = np.asarray(offset, np.int64), np.asarray(length, np.int64)
    q, r = np.divmod(length, parts)
    j = np.arange(parts, dtype=np.int64)
    lens = q[..., None] + (j < r[..., None])
    offs = offset[..., None] + q[..., None] * j + np.minimum(j, r[..., None])
    return offs, lens


def wavefront(schedule: Schedule, lag, oldest_first: bool = True) -> Schedule:
    """The schedule with transfer i moved ``lag[i]`` steps later (an int per transfer; negative
    moves earlier, never before step 0), each new step in channel order (then schedule order):
    pipelining of independent pieces that start one after another, or pieces built apart run side by
    side (``interleave``). ``oldest_first``: within a new step the transfers of later old steps come
    first (with lags that grow piece by piece: the piece begun earlier, further along), each old
    step's in channel order; else the whole step in channel order (ties in schedule order). Only
    valid when transfers whose relative order changes touch disjoint elements (e.g. pieces of a
    buffer that never meet), which the caller guarantees and the checker proves."""
    s = schedule
    old = s.step_index
    new_step = old + np.asarray(lag, np.int64)
    keys = (np.arange(s.n_transfers), s.channel) + ((-old,) if oldest_first else ()) + (new_step,)
    order = np.lexsort(keys)
    sizes = np.bincount(new_step, minlength=1)
    ptr = np.r_[0, np.cumsum(sizes[sizes > 0])]
    return s.take(order, ptr)


def interleave(parts: Iterable[Schedule], name: str = "", meta: dict | None = None) -> Schedule:
    """Schedules over disjoint elements run side by side: step k holds every part's step k, in
    channel order (``wavefront`` of their ``concat``). Parts given by a generator are freed once
    concatenated, before the reordering (a large schedule's peak)."""
    parts = list(parts)
    first = np.cumsum([0] + [p.n_steps for p in parts[:-1]])
    lag = -np.repeat(first, [p.n_transfers for p in parts])
    whole = concat(parts, name=name, meta=meta)
    del parts
    return wavefront(whole, lag, oldest_first=False)
