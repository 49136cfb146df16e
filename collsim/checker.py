"""Prove a schedule is an AllReduce by executing it, or name the first transfer that breaks it.

Execution follows the step semantics of ``collsim.schedule``: every send of a
step reads the sender's buffer as at the start of the step, then all receives
apply (reduce adds, copy overwrites).

Representation. The element axis is cut into *atoms*: the intervals between
consecutive transfer boundaries (every offset and offset + length, plus 0 and
count). Every transfer covers whole atoms, so all elements of an atom see the
same operations and one representative per atom stands for all of them. Per
rank and atom the checker keeps

* an int64 value: random integer input data, added and copied for real, and
* a contribution bitset (one bit per source rank, P/64 words): which ranks'
  inputs the value contains; a reduce whose two operands share a bit would
  count that contribution twice.

Hard errors stop the execution at once: a bad rank or an element range outside
[0, count), and two transfers of one step writing the same elements of a rank
where one is a copy (the result is undefined).

Other mistakes are only mistakes if they reach the end (a wrong value that is
later overwritten by the right one does no harm), so the checker records, per
rank and atom, the earliest transfer whose mistake the held value carries:

* ``twice``: a reduce whose operands share a contribution (counted twice);
  the value stays tainted through later copies and reduces;
* ``stale``: a copy of a partial sum, i.e. data sent before it was reduced
  (in an AllReduce copies only distribute finished sums).

At the end every rank must hold every contribution exactly once. If not, the
reported error is the earliest recorded mistake carried by a wrong final
value; without one, the first rank and element range lacking a contribution,
located at the transfer that last wrote it. When all bits are complete and
untainted the int64 values are compared with the true elementwise sum as an
independent check.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from collsim.errors import CollsimError
from collsim.schedule import COPY, REDUCE, Schedule


@dataclass
class CheckReport:
    """Outcome of ``check``. bytes_* are numpy arrays (bytes per rank); link_bytes maps
    (src, dst) -> bytes. step/transfer locate the first error (transfer = index within step)."""

    ok: bool
    error: str | None
    step: int | None
    transfer: int | None
    n_steps: int
    n_transfers: int
    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    link_bytes: dict = field(default_factory=dict)

    def summary(self) -> str:
        head = "OK: every rank ends with the elementwise sum" if self.ok else f"WRONG: {self.error}"
        sent = self.bytes_sent
        lines = [head, f"steps {self.n_steps}, transfers {self.n_transfers}, links {len(self.link_bytes)}",
                 f"bytes sent per rank: min {int(sent.min())}, max {int(sent.max())}, "
                 f"total {int(sent.sum())}"]
        return "\n".join(lines)


def _ranks_text(missing: np.ndarray) -> str:
    shown = ", ".join(str(r) for r in missing[:5])
    return shown + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")


def _bits(words: np.ndarray, ranks: int) -> np.ndarray:
    """Rank numbers whose bit is set in one bitset row."""
    return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[:ranks])


def static_error(s: Schedule) -> tuple[int, str] | None:
    """First transfer with a bad rank or element range, as (index, reason); None if there is none."""
    bad_rank = (s.src < 0) | (s.src >= s.ranks) | (s.dst < 0) | (s.dst >= s.ranks)
    bad_range = (s.offset < 0) | (s.length < 0) | (s.offset + s.length > s.count)
    bad = np.flatnonzero(bad_rank | bad_range)
    if not len(bad):
        return None
    i = int(bad[0])
    t = s.transfer(i)
    if bad_rank[i]:
        return i, f"bad rank: {t.src} -> {t.dst} with ranks 0..{s.ranks - 1}"
    return i, f"element range [{t.offset}, {t.offset + t.count}) outside the buffer [0, {s.count})"


def _traffic(s: Schedule):
    nbytes = (s.length * s.itemsize).astype(np.float64)
    ok = (s.src >= 0) & (s.src < s.ranks) & (s.dst >= 0) & (s.dst < s.ranks)
    sent = np.bincount(s.src[ok], nbytes[ok], minlength=s.ranks).astype(np.int64)
    recv = np.bincount(s.dst[ok], nbytes[ok], minlength=s.ranks).astype(np.int64)
    key, inv = np.unique(s.src[ok] * s.ranks + s.dst[ok], return_inverse=True)
    per = np.bincount(inv, nbytes[ok], minlength=len(key)).astype(np.int64)
    links = {(int(k) // s.ranks, int(k) % s.ranks): int(b) for k, b in zip(key, per)}
    return sent, recv, links


def check(schedule: Schedule, seed: int = 0) -> CheckReport:
    """Execute ``schedule`` on random int64 data; see the module docstring."""
    s = schedule
    sent, recv, links = _traffic(s)
    report = dict(n_steps=s.n_steps, n_transfers=s.n_transfers, bytes_sent=sent, bytes_recv=recv,
                  link_bytes=links)
    error = _run(s, seed)
    if error is None:
        return CheckReport(True, None, None, None, **report)
    step, pos, reason = error
    where = f"step {step} transfer {pos}: " if pos is not None else ""
    return CheckReport(False, where + reason, step, pos, **report)


NONE = np.iinfo(np.int64).max        # "no mistake recorded"
MAX_STATE_BYTES = 1 << 32            # execution state check() may allocate: larger schedules are refused


class _State:
    """Per (rank, atom): value, contribution bits, last writer, earliest carried mistakes."""

    def __init__(self, s: Schedule, atoms: int, seed: int):
        p, words = s.ranks, (s.ranks + 63) // 64
        self.data = np.random.default_rng(seed).integers(-2**40, 2**40, size=(p, atoms), dtype=np.int64)
        self.value = self.data.copy()
        self.bits = np.zeros((p, atoms, words), np.uint64)
        r = np.arange(p)
        one = np.uint64(1) << (r % 64).astype(np.uint64)
        self.bits[r, :, r // 64] = one[:, None]
        self.full = np.zeros(words, np.uint64)
        np.bitwise_or.at(self.full, r // 64, one)
        self.writer = np.full((p, atoms), -1, np.int64)
        self.twice = np.full((p, atoms), NONE, np.int64)
        self.stale = np.full((p, atoms), NONE, np.int64)
        n = s.n_transfers
        self.ev_atom = np.zeros(n, np.int64)      # for transfers that made a mistake:
        self.ev_bits = {}                         # transfer -> the bits doubled / missing


def _run(s: Schedule, seed: int):
    """Execute; return None or (step, index within step, reason)."""
    static = static_error(s)
    limit = static[0] if static else s.n_transfers
    bounds, a_lo, a_hi = atoms_of(s, limit)
    atoms = len(bounds) - 1
    need = s.ranks * atoms * (5 + (s.ranks + 63) // 64) * 8  # _State's arrays, bytes
    if need > MAX_STATE_BYTES:
        raise CollsimError(f"checking this schedule needs {need / 2**30:.1f} GiB of state ({s.ranks} ranks x "
                           f"{atoms} element ranges); the limit is collsim.checker.MAX_STATE_BYTES "
                           f"({MAX_STATE_BYTES / 2**30:g} GiB)")
    st = _State(s, atoms, seed)
    steps = s.step_index

    def locate(i):
        k = int(steps[i])
        return k, int(i - s.step_ptr[k])

    def span(a, b):
        return f"elements [{bounds[a]}, {bounds[b]})"

    for k in range(s.n_steps):
        lo, hi = int(s.step_ptr[k]), int(min(s.step_ptr[k + 1], limit))
        if hi > lo:
            bad = _apply_step(s, lo, hi, a_lo, a_hi, st)
            if bad is not None:
                i, atom = bad
                t = s.transfer(i)
                return (*locate(i), f"rank {t.src} -> {t.dst} {span(atom, atom + 1)}: a copy and "
                                    "another transfer write the same elements in one step")
        if limit < s.step_ptr[k + 1]:
            return (*locate(limit), static[1])
    complete = (st.bits == st.full).all(axis=2)
    tainted = st.twice < NONE
    wrong = ~complete | tainted
    if not wrong.any():
        if (st.value != st.data.sum(axis=0)[None, :]).any():
            rank, atom = map(int, np.argwhere(st.value != st.data.sum(axis=0)[None, :])[0])
            return None, None, f"rank {rank} {span(atom, atom + 1)} hold a wrong value"
        return None
    first = min(st.twice[tainted].min(initial=NONE), st.stale[~complete].min(initial=NONE))
    if first < NONE:
        t = s.transfer(int(first))
        where = f"rank {t.src} -> {t.dst} {span(st.ev_atom[first], st.ev_atom[first] + 1)}"
        ranks = _ranks_text(_bits(st.ev_bits[int(first)], s.ranks))
        if t.op == "reduce":
            reason = f"{where}: reduce counts the contribution of rank(s) {ranks} twice"
        else:
            reason = (f"{where}: copy of a partial sum lacking rank(s) {ranks} "
                      "(sent before it was reduced)")
        return (*locate(int(first)), reason)
    rank, atom = map(int, np.argwhere(~complete)[0])
    lacking = _bits(st.full & ~st.bits[rank, atom], s.ranks)
    end = atom + 1
    while end < atoms and np.array_equal(st.bits[rank, end], st.bits[rank, atom]):
        end += 1
    reason = (f"rank {rank} {span(atom, end)} end without the contribution of rank(s) "
              f"{_ranks_text(lacking)}")
    w = int(st.writer[rank, atom])
    if w < 0:
        return None, None, reason + " (never written)"
    return (*locate(w), reason + " (last written here)")


def atoms_of(s: Schedule, limit: int | None = None):
    """Atom boundaries in elements, and each transfer's first and end atom (first ``limit`` transfers)."""
    ok_t = slice(0, s.n_transfers if limit is None else limit)
    bounds = np.unique(np.r_[0, s.count, s.offset[ok_t], s.offset[ok_t] + s.length[ok_t]])
    return bounds, np.searchsorted(bounds, s.offset[ok_t]), np.searchsorted(bounds, s.offset[ok_t] + s.length[ok_t])


def expand_atoms(lo: int, hi: int, a_lo, a_hi) -> tuple[np.ndarray, np.ndarray]:
    """(transfer index, atom index) of every atom that transfers ``lo``..``hi`` - 1 move.

    ``a_lo``/``a_hi`` are each transfer's first and end atom as returned by
    ``atoms_of``; a transfer spanning n atoms appears n times, with its atoms in order.
    """
    n_atoms = a_hi[lo:hi] - a_lo[lo:hi]
    t = np.repeat(np.arange(lo, hi), n_atoms)
    return t, a_lo[t] + np.arange(len(t)) - np.repeat(np.cumsum(n_atoms) - n_atoms, n_atoms)


def run_steps(schedule: Schedule, data):
    """Execute the step semantics on ``data`` without checking anything; yield the buffers at the
    start of every step and after the last (``n_steps + 1`` arrays).

    ``data`` has shape (ranks, atoms, ...) with atoms as in ``atoms_of`` (trailing axes move
    along, e.g. one-hot contribution vectors for pictures). Reduces add, copies overwrite; a
    schedule with a bad rank or range raises ``CollsimError``.
    """
    from collsim.errors import CollsimError

    static = static_error(schedule)
    if static:
        raise CollsimError(f"transfer {static[0]}: {static[1]}")
    s, (_, a_lo, a_hi) = schedule, atoms_of(schedule)
    value = np.array(data, copy=True)
    yield value.copy()
    for k in range(s.n_steps):
        t, atom = expand_atoms(int(s.step_ptr[k]), int(s.step_ptr[k + 1]), a_lo, a_hi)
        dst, cp = s.dst[t], s.op[t] == COPY
        moved = value[s.src[t], atom]                 # every send reads the start-of-step buffer
        np.add.at(value, (dst[~cp], atom[~cp]), moved[~cp])
        value[dst[cp], atom[cp]] = moved[cp]
        yield value.copy()


def _record(st: _State, t: np.ndarray, atom: np.ndarray, which: np.ndarray, bits: np.ndarray) -> None:
    """Remember, for each transfer with a mistake, its first atom and the bits concerned."""
    for j in np.flatnonzero(which):
        i = int(t[j])
        if i not in st.ev_bits:
            st.ev_atom[i], st.ev_bits[i] = atom[j], bits[j]


def _apply_step(s: Schedule, lo: int, hi: int, a_lo, a_hi, st: _State):
    """Apply transfers lo..hi (one step). Returns None or (transfer, atom) of a write conflict."""
    t, atom = expand_atoms(lo, hi, a_lo, a_hi)
    if not len(t):
        return None
    src, dst, op = s.src[t], s.dst[t], s.op[t]
    # every send reads the buffer as at the start of the step
    in_bits, in_val = st.bits[src, atom], st.value[src, atom]
    in_twice, in_stale = st.twice[src, atom], st.stale[src, atom]
    key = dst * st.bits.shape[1] + atom
    order = np.argsort(key, kind="stable")
    ks = key[order]
    gid = np.cumsum(np.r_[True, ks[1:] != ks[:-1]]) - 1
    conflict = np.zeros(len(t), bool)
    conflict[order] = (np.bincount(gid)[gid] > 1) & (op[order] == COPY)
    if conflict.any():
        j = int(np.flatnonzero(conflict)[0])
        return int(t[j]), int(atom[j])
    cp = op == COPY
    partial = cp & ~(in_bits == st.full).all(axis=1)
    _record(st, t, atom, partial, st.full & ~in_bits)
    red = order[op[order] == REDUCE]
    if len(red):
        rk = key[red]
        heads = np.flatnonzero(np.r_[True, rk[1:] != rk[:-1]])
        have = st.bits[dst[red[heads]], atom[red[heads]]]
        merged = np.bitwise_or.reduceat(in_bits[red], heads, axis=0) | have
        count_in = np.add.reduceat(np.bitwise_count(in_bits[red]).sum(axis=1, dtype=np.int64), heads)
        clash = count_in + np.bitwise_count(have).sum(axis=1) != np.bitwise_count(merged).sum(axis=1)
        twice = np.zeros(len(t), bool)
        doubled = np.zeros_like(in_bits)
        for g in np.flatnonzero(clash):        # find which reduce of the group overlaps
            run = have[g].copy()
            for j in red[heads[g]:(heads[g + 1] if g + 1 < len(heads) else len(red))]:
                if (run & in_bits[j]).any():
                    twice[j], doubled[j] = True, run & in_bits[j]
                run |= in_bits[j]
        _record(st, t, atom, twice, doubled)
        cells = (dst[red], atom[red])
        new_twice = np.where(twice[red], t[red], in_twice[red])
        if len(heads) == len(red):               # one reduce per cell: plain indexing is faster
            st.value[cells] += in_val[red]
            st.twice[cells] = np.minimum(st.twice[cells], new_twice)
            st.stale[cells] = np.minimum(st.stale[cells], in_stale[red])
        else:
            np.add.at(st.value, cells, in_val[red])
            np.minimum.at(st.twice, cells, new_twice)
            np.minimum.at(st.stale, cells, in_stale[red])
        st.bits[dst[red[heads]], atom[red[heads]]] = merged
    cells = (dst[cp], atom[cp])
    st.value[cells] = in_val[cp]
    st.bits[cells] = in_bits[cp]
    st.twice[cells] = in_twice[cp]
    st.stale[cells] = np.where(partial[cp], np.minimum(in_stale[cp], t[cp]), in_stale[cp])
    st.writer[dst, atom] = t
    return None
