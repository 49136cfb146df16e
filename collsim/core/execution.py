"""The checker's executor (semantics and representation: ``collsim.core.checker``):
``Execution`` holds per cell (rank, atom) an int64 value and a contribution bitset, the earliest
mistake the cell carries; ``steps()`` yields it after every step and stops at a hard error. The
atoms, and the plain executor that checks nothing, are ``collsim.core.atoms``.
"""
from __future__ import annotations

import numpy as np

from collsim.core.atoms import atoms_of, dst_atoms, expand_atoms, static_error
from collsim.core.budget import check_bytes
from collsim.core.collective import Atoms, get as get_collective
from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.inputs import check_memory

NONE = np.iinfo(np.int64).max   # "no mistake recorded"
MAX_STATE_BYTES = 1 << 32       # execution state check() may allocate: larger schedules are refused


class Execution:
    """The checker's execution of ``s`` on random int64 data (``seed``), one step at a time.

    State per cell (index endpoint * atoms + atom; the ranks' cells first, then the switches'
    and the network's, which start with value 0 and no bits): ``value``, ``bits`` (contribution
    bitset, one bit per rank, P/64 uint64 words), ``writer`` (last transfer, -1),
    ``twice`` and ``stale`` (earliest carried mistake, ``NONE`` if none); per
    transfer with a mistake ``ev_atom[i]`` (its first such atom) and ``ev_bits[i]``
    (a dict: the bits doubled or missing). ``error``: the hard error (step, index within
    step, reason) that ended the execution, else None; ``written``: the cells the last
    step wrote (the state of no other cell changed).
    """

    def __init__(self, s: Schedule, seed: int = 0, extra_bytes: int = 0):
        static = static_error(s)
        self.s, self.static = s, static
        self.limit = static[0] if static else s.n_transfers
        self.bounds, a_lo, a_hi = atoms_of(s, self.limit)
        p, self.atoms, words = s.ranks, len(self.bounds) - 1, (s.ranks + 63) // 64
        self.gpu_cells, cells = p * self.atoms, s.endpoints * self.atoms
        # then the network's switch (must hold the sum)
        self.nvswitch_cells = (p + s.switches) * self.atoms
        need = cells * (5 + words) * 8      # data, value, writer, twice, stale and bits, bytes
        if need > MAX_STATE_BYTES:
            raise CollsimError(f"checking this schedule needs {need / 2**30:.1f} GiB of state ({p} "
                               f"ranks x {self.atoms} element ranges); the limit is "
                               f"collsim.core.execution.MAX_STATE_BYTES "
                               f"({MAX_STATE_BYTES / 2**30:g} GiB)")
        moved = a_hi - a_lo                 # atoms each transfer moves
        per_step = (np.bincount(s.step_index[:self.limit], weights=moved, minlength=1) if self.limit
                    else [0])
        check_memory(check_bytes(int(moved.sum()), need,
                                 int(max(per_step)) * (5 + words) * 8) + extra_bytes,
                     f"checking this schedule ({p} ranks x {self.atoms} element ranges, "
                     f"{s.n_transfers} transfers)")
        self.collective = get_collective(s.collective)
        self.data = np.random.default_rng(seed).integers(-2**40, 2**40, size=self.gpu_cells,
                                                         dtype=np.int64)
        # cells with input
        held = np.flatnonzero(self.collective.start(Atoms(p, self.bounds)).ravel())
        self.value = np.zeros(cells, np.int64)
        self.value[held] = self.data[held]
        one, r = np.uint64(1) << (np.arange(p) % 64).astype(np.uint64), held // self.atoms
        self.bits = np.zeros((cells, words), np.uint64)
        self.bits[held, r // 64] = one[r]
        self.full = np.zeros(words, np.uint64)
        np.bitwise_or.at(self.full, np.arange(p) // 64, one)
        self.writer = np.full(cells, -1, np.int64)
        self.twice = np.full(cells, NONE, np.int64)
        self.stale = np.full(cells, NONE, np.int64)
        self.ev_atom = np.zeros(s.n_transfers, np.int64)
        self.ev_bits: dict[int, np.ndarray] = {}
        self.error, self.written = None, np.zeros(0, np.int64)
        t, atom = expand_atoms(0, self.limit, a_lo, a_hi)
        self._plan(t, atom, dst_atoms(s, self.bounds, t, atom, a_lo))

    def _plan(self, t: np.ndarray, atom: np.ndarray, to: np.ndarray) -> None:
        """Every transfer cut into its atoms: step k's copies at ptr[k]..mid[k] and its reduces
        at mid[k]..ptr[k + 1] (each in transfer order), src/dst as cells; per step the first
        copy that shares its cell with another write (``conflict``, -1 if none) and whether
        several reduces go into one cell (``shared``)."""
        s = self.s
        step, red = s.step_index[t], s.op[t] == REDUCE
        order = np.lexsort((red, step))
        t, atom, to, step, red = t[order], atom[order], to[order], step[order], red[order]
        self.t, self.atom = t, to                  # messages name the elements a transfer writes
        self.src, self.dst = s.src[t] * self.atoms + atom, s.dst[t] * self.atoms + to
        k = np.arange(s.n_steps + 1)
        self.ptr, self.mid = (np.searchsorted(step, k),
                              np.searchsorted(2 * step + red, 2 * k[:-1] + 1))
        by_cell = np.lexsort((self.dst, step))
        key = step[by_cell] * (s.endpoints * self.atoms) + self.dst[by_cell]
        again = np.zeros(len(t) + 1, bool)       # in key order: the cell of the one before
        again[1:-1] = key[1:] == key[:-1]
        shared = np.zeros(len(t), bool)
        shared[by_cell] = again[:-1] | again[1:]
        copies = np.flatnonzero(shared & ~red)
        with_copy, first = np.unique(step[copies], return_index=True)
        self.conflict = np.full(s.n_steps, -1)
        self.conflict[with_copy] = copies[first]
        self.shared = np.bincount(step[shared], minlength=s.n_steps) > 0

    def steps(self):
        """Yield this object at the start and after every step (updated in place); a hard
        error stops the execution early, after setting ``error``."""
        s = self.s
        yield self
        for k in range(s.n_steps):
            j = self.conflict[k]
            if j >= 0:
                t = s.transfer(int(self.t[j]))
                self.error = (*self.locate(int(self.t[j])), f"rank {t.src} -> {t.dst} "
                              f"{self.span(self.atom[j], self.atom[j] + 1)}: a copy and another "
                              "transfer write the same elements in one step")
                return
            self._apply(k)
            if self.limit < s.step_ptr[k + 1]:
                self.error = (*self.locate(self.limit), self.static[1])
                return
            yield self

    def held(self, cells=slice(None)) -> np.ndarray:
        """How many ranks' contributions each cell (of ``cells``) holds."""
        return _count(self.bits[cells])

    def locate(self, i: int) -> tuple[int, int]:
        """(step, index within the step) of transfer ``i``."""
        k = int(self.s.step_index[i])
        return k, int(i - self.s.step_ptr[k])

    def span(self, a: int, b: int) -> str:
        """Text of the elements of atoms ``a``..``b`` - 1."""
        return f"elements [{self.bounds[a]}, {self.bounds[b]})"

    def _record(self, t: np.ndarray, atom: np.ndarray, which: np.ndarray, bits: np.ndarray) -> None:
        """Remember, for each transfer with a mistake, its first atom and the bits concerned."""
        j = np.flatnonzero(which)
        if len(j):
            i, first = np.unique(t[j], return_index=True)
            self.ev_atom[i] = atom[j[first]]
            self.ev_bits.update(zip(i.tolist(), bits[j[first]]))

    def _apply(self, k: int) -> None:
        """Apply step ``k`` (free of write conflicts): reduces, then copies."""
        lo, mid, hi = self.ptr[k], self.mid[k], self.ptr[k + 1]
        src, dst, t, atom = (a[lo:hi] for a in (self.src, self.dst, self.t, self.atom))
        # every send reads the buffer as at the start of the step
        in_bits, in_val, in_twice, in_stale = (self.bits[src], self.value[src], self.twice[src],
                                               self.stale[src])
        c, r = slice(0, mid - lo), slice(mid - lo, hi - lo)
        if mid < hi:
            if self.shared[k]:       # several reduces into one cell: group them (in transfer order)
                r = mid - lo + np.argsort(dst[r], kind="stable")
                cells = dst[r]
                heads = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
                twice, doubled, merged = _merge(self.bits[cells[heads]], in_bits[r], heads)
                self.bits[cells[heads]] = merged
            else:
                cells = dst[r]
                have = self.bits[cells]
                doubled = have & in_bits[r]
                twice = doubled.any(axis=1)
                self.bits[cells] = have | in_bits[r]
            self._record(t[r], atom[r], twice, doubled)
            np.add.at(self.value, cells, in_val[r])
            np.minimum.at(self.twice, cells, np.where(twice, t[r], in_twice[r]))
            np.minimum.at(self.stale, cells, in_stale[r])
        if lo < mid:            # a copy out of an NVSwitch is its own reduction: never a stale copy
            nvswitch = (src[c] >= self.gpu_cells) & (src[c] < self.nvswitch_cells)
            partial = (in_bits[c] != self.full).any(axis=1) & ~nvswitch & self.collective.reduces
            self._record(t[c], atom[c], partial, self.full & ~in_bits[c])
            cells = dst[c]
            self.value[cells], self.bits[cells], self.twice[cells] = (in_val[c], in_bits[c],
                                                                      in_twice[c])
            self.stale[cells] = np.where(partial, np.minimum(in_stale[c], t[c]), in_stale[c])
        self.writer[dst] = t
        self.written = dst


def _count(bits: np.ndarray) -> np.ndarray:
    """Set bits per bitset (last axis: uint64 words)."""
    return np.bitwise_count(bits).sum(axis=-1, dtype=np.int32)


def _merge(have: np.ndarray, in_bits: np.ndarray, heads: np.ndarray):
    """Groups of reduces into one cell each (group g: rows heads[g] up to the next head of
    ``in_bits``, into a cell holding ``have[g]``): (twice, doubled, merged). A reduce is twice
    when its bits meet the cell's or an earlier reduce's of its group; doubled: those bits."""
    merged = np.bitwise_or.reduceat(in_bits, heads, axis=0) | have
    clash = np.add.reduceat(_count(in_bits), heads) + _count(have) != _count(merged)
    twice, doubled = np.zeros(len(in_bits), bool), np.zeros_like(in_bits)
    ends = np.append(heads[1:], len(in_bits))
    for g in np.flatnonzero(clash):        # find which reduce of the group overlaps
        run = have[g].copy()
        for j in range(heads[g], ends[g]):
            if (run & in_bits[j]).any():
                twice[j], doubled[j] = True, run & in_bits[j]
            run |= in_bits[j]
    return twice, doubled, merged
