"""Prove a schedule computes its collective by executing it,
or name the first transfer that breaks it.

The collective (``Schedule.collective``, ``collsim.core.collective``) says which cells start with
their rank's input (the others start empty: no contribution, value 0) and what every checked cell
must hold at the end; the AllReduce's terms below (every rank ends with the sum) are the
general rule's first case: a cell ends complete when it holds exactly the contributions the
collective puts there, each once, and its value is their sum at the place they came from.

Execution follows the step semantics of ``collsim.core.schedule``: every send of a
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

Switch endpoints (endpoints P.. of the schedule: ``Schedule.switches``, one NVSwitch per node,
then the network's switch shared by every node, ``Schedule.network``) take part
like ranks without an input: value 0 and no contribution bits at the start, a
reduce into a switch accumulates, a copy out of it delivers what it holds; the
end check covers GPUs (ranks 0..P-1) only. The network's switch proves CollNet's
sum across nodes as an NVSwitch proves NVLS's inside a node: each node's heads reduce
into it, and a copy out of it is the sum of every node only if every node reduced first.

Hard errors stop the execution at once: a bad rank or an element range outside
[0, count), and two transfers of one step writing the same elements of a rank
where one is a copy (the result is undefined).

Other mistakes are only mistakes if they reach the end (a wrong value that is
later overwritten by the right one does no harm), so the checker records, per
rank and atom, the earliest transfer whose mistake the held value carries:

* ``twice``: a reduce whose operands share a contribution (counted twice);
  the value stays tainted through later copies and reduces;
* ``stale``: a copy of a partial sum, i.e. data sent before it was reduced
  (in an AllReduce copies only distribute finished sums; a copy out of an NVSwitch
  is exempt: it delivers the switch's own reduction, which in NVLSTree is a
  node's partial sum on its way across nodes; a copy out of the network's switch
  is not: it must deliver every node's sum).

At the end every rank must hold every contribution exactly once. If not, the
reported error is the earliest recorded mistake carried by a wrong final
value; without one, the first rank and element range lacking a contribution,
located at the transfer that last wrote it. When all bits are complete and
untainted the int64 values are compared with the true elementwise sum as an
independent check.

Steps and transfers are counted from 1 in messages ("step 2 of 6, transfer 1 of 4: ..."): the
mistake happens in step 2, and the grid (``collsim.viz.grid``) shows it "after 2 of 6 steps".
``CheckReport.step``/``transfer`` are the 0-based indices (``Schedule.step_slice(step)``).

The execution itself is ``collsim.core.execution.Execution``; ``contribution_states``
counts its bitsets after every step (what ``collsim.viz.grid`` draws).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from collsim.core.collective import ALL, Atoms
from collsim.core.execution import NONE, Execution
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError

LINK_BYTES = 200   # one (src, dst) -> bytes entry of the report: a tuple, two ints and a dict slot


@dataclass
class CheckReport:
    """Outcome of ``check``. bytes_* are numpy arrays (bytes per rank, GPUs only: traffic to and
    from a switch counts on the GPU's side); link_bytes maps (src, dst) -> bytes (switch endpoints
    included). step/transfer locate the first error as 0-based indices (transfer = index within
    step); the message counts both from 1, as every picture does ("step 2 of 6, transfer 1 of 4:
    ...")."""

    ok: bool
    error: str | None
    step: int | None
    transfer: int | None
    n_steps: int
    n_transfers: int
    bytes_sent: np.ndarray
    bytes_recv: np.ndarray
    link_bytes: dict = field(default_factory=dict)
    done: str = "every rank ends with the elementwise sum"   # what the collective computes

    def summary(self) -> str:
        head = f"OK: {self.done}" if self.ok else f"WRONG: {self.error}"
        sent = self.bytes_sent
        lines = [head,
                 f"steps {self.n_steps}, transfers {self.n_transfers}, links "
                 f"{len(self.link_bytes)}",
                 f"bytes sent per rank: min {int(sent.min())}, max {int(sent.max())}, total "
                 f"{int(sent.sum())}"]
        return "\n".join(lines)


def _ranks_text(missing: np.ndarray) -> str:
    shown = ", ".join(str(r) for r in missing[:5])
    return shown + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")


def _bits(words: np.ndarray, ranks: int) -> np.ndarray:
    """Rank numbers whose bit is set in one bitset row."""
    return np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")[:ranks])


def _traffic(s: Schedule):
    """Bytes sent and received per rank, and per link as arrays (keys src * endpoints + dst)."""
    nbytes = (s.length * s.itemsize).astype(np.float64)
    e = s.endpoints
    ok = (s.src >= 0) & (s.src < e) & (s.dst >= 0) & (s.dst < e)
    sent = np.bincount(s.src[ok], nbytes[ok], minlength=e)[:s.ranks].astype(np.int64)
    recv = np.bincount(s.dst[ok], nbytes[ok], minlength=e)[:s.ranks].astype(np.int64)
    key, inv = np.unique(s.src[ok] * e + s.dst[ok], return_inverse=True)
    per = np.bincount(inv, nbytes[ok], minlength=len(key)).astype(np.int64)
    return sent, recv, (key, per)


def check(schedule: Schedule, seed: int = 0) -> CheckReport:
    """Execute ``schedule`` on random int64 data; see the module docstring."""
    s = schedule
    links_bound = min(s.n_transfers, s.endpoints ** 2)     # distinct (src, dst) pairs of the report
    # refuses what will not fit, first
    execution = Execution(s, seed, extra_bytes=LINK_BYTES * links_bound)
    sent, recv, (key, per) = _traffic(s)
    e = s.endpoints
    links = {(int(k) // e, int(k) % e): int(b) for k, b in zip(key, per)}
    report = dict(n_steps=s.n_steps, n_transfers=s.n_transfers, bytes_sent=sent, bytes_recv=recv,
                  link_bytes=links, done=execution.collective.description)
    for st in execution.steps():
        pass
    error = st.error or _final_error(st)
    if error is None:
        return CheckReport(True, None, None, None, **report)
    step, pos, reason = error
    return CheckReport(False, _message(s, step, pos, reason), step, pos, **report)


def _message(s: Schedule, step: int | None, pos: int | None, reason: str) -> str:
    """``reason`` located as "step k of n, transfer t of m: " (counted from 1)."""
    if pos is None:
        return reason
    return f"{s.place(int(s.step_ptr[step]) + pos)}: {reason}"


@dataclass
class ContributionStates:
    """Which contributions every (rank, atom) holds at the start of each step and after the last.

    Attributes:
        bounds: atom boundaries in elements (length n_atoms + 1, as ``atoms_of``).
        distinct: int array (n_steps + 1, ranks, n_atoms): how many ranks' contributions the
            cell holds (index k: the state at the start of step k, n_steps: the end).
        over: bool array, same shape: some contribution is held more than once (a reduce
            counted it twice, here or in the data it was sent).
    """

    bounds: np.ndarray
    distinct: np.ndarray
    over: np.ndarray

    def complete(self) -> bool:
        """True when every cell ends holding each
        contribution exactly once (then ``check`` is ok)."""
        return bool(np.all(self.distinct[-1] == self.distinct.shape[1]) and not self.over[-1].any())


def contribution_states(schedule: Schedule) -> ContributionStates:
    """The contribution bitsets ``check`` executes, counted after every step.

    ``distinct`` is the number of bits set, ``over`` whether the cell carries a
    "counted twice" mistake. A schedule the checker stops early (bad rank or
    range, a copy and another transfer writing the same elements in one step)
    raises ``CollsimError`` with the checker's message.
    """
    s = schedule
    run = Execution(s).steps()
    st = next(run)
    shape = (s.n_steps + 1, s.ranks * st.atoms)
    distinct = np.empty(shape, np.uint8 if s.ranks < 256 else np.int32)
    over = np.empty(shape, bool)
    distinct[0], over[0] = st.held(slice(0, st.gpu_cells)), False
    for k, st in enumerate(run, start=1):
        cells = st.written[st.written < st.gpu_cells]         # the ranks' cells (not the switches')
        distinct[k], over[k] = distinct[k - 1], over[k - 1]
        distinct[k, cells], over[k, cells] = st.held(cells), st.twice[cells] < NONE
    if st.error:
        raise CollsimError(_message(s, *st.error))
    shape = (s.n_steps + 1, s.ranks, st.atoms)
    return ContributionStates(st.bounds, distinct.reshape(shape), over.reshape(shape))


def _final_error(st: Execution):
    """None if every checked cell ends as the collective defines (all_reduce: every rank with the
    sum), else (step, index within step, reason)."""
    s, gpus = st.s, slice(0, st.gpu_cells)                 # the end check covers the ranks only
    end = st.collective.complete(Atoms(s.ranks, st.bounds))
    checked = end.checked.ravel()
    source, atom = end.source.ravel(), end.atom.ravel()
    one = np.uint64(1) << (source % 64).astype(np.uint64)
    target = np.where((source == ALL)[:, None], st.full, 0).astype(np.uint64)
    single = np.flatnonzero(source != ALL)
    target[single, source[single] // 64] = one[single]
    bits = st.bits[gpus]
    complete = (bits == target).all(axis=1) | ~checked
    tainted = (st.twice[gpus] < NONE) & checked
    if complete.all() and not tainted.any():
        data = st.data.reshape(s.ranks, -1)
        want = np.where(source == ALL, data.sum(axis=0)[atom], data[np.maximum(source, 0), atom])
        wrong = np.flatnonzero((st.value[gpus] != want) & checked)
        if len(wrong):
            rank, atom = divmod(int(wrong[0]), st.atoms)
            return None, None, f"rank {rank} {st.span(atom, atom + 1)} hold a wrong value"
        return None
    first = min(st.twice[gpus][tainted].min(initial=NONE),
                st.stale[gpus][~complete].min(initial=NONE))
    if first < NONE:
        t = s.transfer(int(first))
        where = f"rank {t.src} -> {t.dst} {st.span(st.ev_atom[first], st.ev_atom[first] + 1)}"
        ranks = _ranks_text(_bits(st.ev_bits[int(first)], s.ranks))
        if t.op == "reduce":
            reason = f"{where}: reduce counts the contribution of rank(s) {ranks} twice"
        else:
            reason = (f"{where}: copy of a partial sum lacking rank(s) {ranks} "
                      "(sent before it was reduced)")
        return (*st.locate(int(first)), reason)
    cell = int(np.flatnonzero(~complete)[0])
    rank, atom = divmod(cell, st.atoms)
    end = atom + 1
    while end < st.atoms and np.array_equal(bits[cell + end - atom], bits[cell]) \
            and np.array_equal(target[cell + end - atom], target[cell]):
        end += 1
    lacking, extra = (_bits(target[cell] & ~bits[cell], s.ranks),
                      _bits(bits[cell] & ~target[cell], s.ranks))
    what = []
    if len(lacking):
        what.append(f"without the contribution of rank(s) {_ranks_text(lacking)}")
    if len(extra):
        what.append(f"with data of rank(s) {_ranks_text(extra)} that {st.collective.name} does not "
                    f"put there")
    reason = f"rank {rank} {st.span(atom, end)} end {' and '.join(what)}"
    w = int(st.writer[cell])
    if w < 0:
        return None, None, reason + " (never written)"
    return (*st.locate(w), reason + " (last written here)")
