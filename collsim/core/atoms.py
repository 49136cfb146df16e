"""A schedule's atoms and the plain executor (semantics and representation:
``collsim.core.checker``).

* ``atoms_of``, ``expand_atoms``, ``dst_atoms``: the atoms (segments between all transfer
  boundaries, in elements), the atoms each transfer reads and those it writes.
* ``static_error``: the first transfer with a bad rank or element range.
* ``run_steps``: the plain executor: any per-atom data, reduces add, copies overwrite, nothing
  checked (the grid's multiplicities, one-hot data). The checker's executor is
  ``collsim.core.execution.Execution``.
"""
from __future__ import annotations

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.core.schedule import COPY, Schedule
from collsim.errors import CollsimError

MAX_SHIFT_ROUNDS = 64           # rounds of carrying atom boundaries across dst_offset shifts


def atoms_of(s: Schedule, limit: int | None = None):
    """Atom boundaries in elements, and each transfer's
    first and end atom (first ``limit`` transfers).

    The boundaries are every transfer's, 0 and count, the segment boundaries of a segmented
    collective, and, where transfers write elsewhere than they read (``dst_offset``), closed under
    their shifts so that a moved range covers as many atoms as it reads (a one-line error where
    the shifts never align)."""
    ok_t = slice(0, s.n_transfers if limit is None else limit)
    off, ln = s.offset[ok_t], s.length[ok_t]
    parts = [[0, s.count], off, off + ln]
    if get_collective(s.collective).segmented and s.count:
        parts.append(np.arange(s.ranks + 1) * (s.count // s.ranks))
    if s.shifted:
        to = s.dst_offset[ok_t]
        parts += [to, to + ln]
    bounds = np.unique(np.concatenate([np.asarray(p, np.int64) for p in parts]))
    if s.shifted:
        bounds = _closed(bounds, off, s.dst_offset[ok_t], ln)
    return bounds, np.searchsorted(bounds, off), np.searchsorted(bounds, off + ln)


def _closed(bounds: np.ndarray, off: np.ndarray, to: np.ndarray, ln: np.ndarray) -> np.ndarray:
    """``bounds`` with every boundary inside a shifted transfer's read range carried to its write
    range and back, until nothing new appears (at most ``MAX_SHIFT_ROUNDS`` rounds)."""
    moved = np.flatnonzero(off != to)
    off, to, ln = off[moved], to[moved], ln[moved]
    for _ in range(MAX_SHIFT_ROUNDS):
        new = [bounds]
        for a, b in ((off, to), (to, off)):          # read range -> write range, and back
            lo, hi = np.searchsorted(bounds, a, "right"), np.searchsorted(bounds, a + ln, "left")
            n = np.maximum(hi - lo, 0)
            t = np.repeat(np.arange(len(a)), n)
            inner = lo[t] + np.arange(len(t)) - np.repeat(np.cumsum(n) - n, n)
            new.append(bounds[inner] - a[t] + b[t])
        grown = np.unique(np.concatenate(new))
        if len(grown) == len(bounds):
            return bounds
        bounds = grown
    raise CollsimError(f"the element ranges of transfers with dst_offset do not align after "
                       f"{MAX_SHIFT_ROUNDS} rounds (collsim.core.atoms.MAX_SHIFT_ROUNDS)")


def dst_atoms(s: Schedule, bounds: np.ndarray, t: np.ndarray, atom: np.ndarray,
              a_lo: np.ndarray) -> np.ndarray:
    """The atom each (transfer ``t``, read atom ``atom``) writes at its destination (``atom`` itself
    unless the transfer has a ``dst_offset``)."""
    if not s.shifted:
        return atom
    return atom - a_lo[t] + np.searchsorted(bounds, s.dst_offset[t])


def expand_atoms(lo: int, hi: int, a_lo, a_hi) -> tuple[np.ndarray, np.ndarray]:
    """(transfer index, atom index) of every atom that transfers ``lo``..``hi`` - 1 move.

    ``a_lo``/``a_hi`` are each transfer's first and end atom as returned by
    ``atoms_of``; a transfer spanning n atoms appears n times, with its atoms in order.
    """
    n_atoms = a_hi[lo:hi] - a_lo[lo:hi]
    t = np.repeat(np.arange(lo, hi), n_atoms)
    return t, a_lo[t] + np.arange(len(t)) - np.repeat(np.cumsum(n_atoms) - n_atoms, n_atoms)


def static_error(s: Schedule) -> tuple[int, str] | None:
    """First transfer with a bad rank or element range, as
    (index, reason); None if there is none."""
    bad_rank = (s.src < 0) | (s.src >= s.endpoints) | (s.dst < 0) | (s.dst >= s.endpoints)
    bad_range = ((s.offset < 0) | (s.length < 0) | (s.offset + s.length > s.count)
                 | (s.dst_offset < 0) | (s.dst_offset + s.length > s.count))
    bad = np.flatnonzero(bad_rank | bad_range)
    if not len(bad):
        return None
    i = int(bad[0])
    t = s.transfer(i)
    if bad_rank[i]:
        more = f" and switches {s.ranks}..{s.endpoints - 1}" if s.endpoints > s.ranks else ""
        return i, f"bad rank: {t.src} -> {t.dst} with ranks 0..{s.ranks - 1}{more}"
    read_ok = t.count >= 0 and 0 <= t.offset <= s.count - t.count
    at, what = ((t.offset, "element range") if not read_ok
                else (t.dst_offset, "written element range"))
    return i, f"{what} [{at}, {at + t.count}) outside the buffer [0, {s.count})"


def run_steps(schedule: Schedule, data):
    """Execute the step semantics on ``data`` without checking anything; yield the buffers at the
    start of every step and after the last (``n_steps + 1`` arrays).

    ``data`` has shape (ranks, atoms, ...) with atoms as in ``atoms_of`` (trailing axes move
    along, e.g. one-hot contribution vectors for pictures). Reduces add, copies overwrite; switch
    endpoints start at zero and are not yielded (the arrays have ``ranks`` rows); a schedule with a
    bad rank or range raises ``CollsimError``.
    """
    static = static_error(schedule)
    if static:
        raise CollsimError(f"transfer {static[0]}: {static[1]}")
    s, (bounds, a_lo, a_hi) = schedule, atoms_of(schedule)
    data = np.asarray(data)
    value = np.concatenate([data, np.zeros((s.endpoints - s.ranks,) + data.shape[1:], data.dtype)])
    yield value[:s.ranks].copy()
    for k in range(s.n_steps):
        t, atom = expand_atoms(int(s.step_ptr[k]), int(s.step_ptr[k + 1]), a_lo, a_hi)
        dst, cp, to = s.dst[t], s.op[t] == COPY, dst_atoms(s, bounds, t, atom, a_lo)
        moved = value[s.src[t], atom]                 # every send reads the start-of-step buffer
        np.add.at(value, (dst[~cp], to[~cp]), moved[~cp])
        value[dst[cp], to[cp]] = moved[cp]
        yield value[:s.ranks].copy()
