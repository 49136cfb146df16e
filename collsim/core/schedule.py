"""One schedule representation for every part of collsim.

A schedule is a list of steps; a step is a list of transfers. A transfer moves ``count`` elements
starting at element ``offset`` from rank ``src`` to rank ``dst`` and applies them there, at element
``dst_offset`` (default: ``offset``, the same place), with ``op``:

* ``reduce``: the receiver adds the incoming elements to its own;
* ``copy``:   the receiver overwrites its own elements with the incoming ones.

Every transfer runs on a ``channel`` (an int >= 0, default 0) and a ``lane`` of it (0-255,
default 0): NCCL's channels are independent rings or trees, each on its own thread block, each
owning a contiguous part of the buffer; a lane is a group of the block's warps that works on its
own (NCCL's trees reduce up and broadcast down in separate warps, NVLS scatters, reduces and
gathers in three). Neither changes what a schedule computes; the simulator runs each (GPU, channel,
lane) as one engine (``collsim.simulate``).

Endpoints. Ranks 0..P-1 are GPUs. A schedule may also name ``switches`` extra
endpoints P..P+switches-1, one NVSwitch per node (the switch of node n is P + n):
a switch holds no input of its own (it starts at 0), a reduce into it
accumulates (NVLink SHARP's in-switch reduction, ``multimem.ld_reduce``) and a
copy out of it delivers what it holds (``multimem.st``); only GPUs are checked
at the end. ``network`` (0 or 1) adds one more endpoint after them, P + switches, shared by
every node: the network's switches that reduce (InfiniBand SHARP, NCCL's CollNet); it is a
switch like the others (starts at 0, reduces accumulate, copies deliver the sum), reached by
the GPUs of every node over their NICs (``collsim.simulate.resources``).

Semantics of a step: every send reads the sender's buffer *as it was at the
start of the step*; then all receives apply. Timing dependencies (used by the
simulator) are derived from this data flow, so a pipelined schedule may overlap
steps wherever the data allows.

Storage is columnar (numpy arrays, one entry per transfer, steps delimited by
``step_ptr`` as in CSR matrices) so that schedules of millions of transfers
(ring AllReduce on 1024 ranks has ~2.1 M) are cheap to build, check and
simulate. ``Schedule.steps`` gives the list-of-lists view of ``Transfer``.

The collective a schedule computes is ``Schedule.collective`` (a ``collsim.core.collective`` name,
default ``all_reduce``): it fixes what each rank holds at the start and must hold at the end.

JSON: ``Schedule.to_dict`` / ``Schedule.from_dict`` (schema and bounds: ``collsim.core.document``).
"""
from __future__ import annotations

import json
from typing import Iterable

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.core.document import OP_NAMES, ScheduleError, Transfer, check_document, transfer_rows
from collsim.errors import CollsimError
from collsim.inputs import parse_json, read_text

REDUCE = 0
COPY = 1
# src dst offset length op
DTYPES = (np.int64, np.int64, np.int64, np.int64, np.uint8, np.int32, np.uint8,
          np.int64)                                                        # channel lane dst_offset


class Schedule:
    """A columnar schedule of one collective.

    Attributes (numpy int64 arrays of length ``n_transfers`` unless said):
        src, dst, offset, length: who sends to whom, which element range
            (``length`` is the transfer's element count; ``count`` is the
            buffer's).
        dst_offset: where each transfer writes at ``dst`` (the ``offset`` array itself when every
            transfer writes where it reads; ``shifted`` says whether one does not).
        op: uint8, ``REDUCE`` (0) or ``COPY`` (1).
        channel: int32, the channel each transfer runs on (>= 0).
        lane: uint8, the lane of its channel (0-255).
        step_ptr: length ``n_steps + 1``; step ``s`` holds transfers
            ``step_ptr[s]:step_ptr[s+1]``.
        ranks, count, itemsize: buffer geometry (count in elements, itemsize
            in bytes per element).
        switches: switch endpoints after the ranks, one per node (0: none).
        network: 1 when endpoint ``ranks + switches`` is the network's reducing switch (0: none).
        name: free text (the algorithm's name).
        meta: free dict (algorithm parameters, e.g. slices, gpus_per_node).
        collective: the collective's name (``collsim.core.collective``; default ``all_reduce``).
    """

    def __init__(self, ranks: int, count: int, itemsize: int, src, dst, offset, length, op,
                 step_ptr, name: str = "", meta: dict | None = None, channel=None,
                 switches: int = 0, lane=None, network: int = 0, *, dst_offset=None,
                 collective: str = "all_reduce"):
        self.ranks = int(ranks)
        self.count = int(count)
        self.itemsize = int(itemsize)
        self.src = np.ascontiguousarray(src, dtype=np.int64)
        self.dst = np.ascontiguousarray(dst, dtype=np.int64)
        self.offset = np.ascontiguousarray(offset, dtype=np.int64)
        self.dst_offset = self.offset
        if dst_offset is not None:
            moved = np.ascontiguousarray(dst_offset, dtype=np.int64)
            if len(moved) != len(self.offset) or np.any(moved != self.offset):
                self.dst_offset = moved
        self.collective = get_collective(collective).name
        self.length = np.ascontiguousarray(length, dtype=np.int64)
        self.op = np.ascontiguousarray(op, dtype=np.uint8)
        self.channel = (np.zeros(len(self.src), np.int32) if channel is None
                        else np.ascontiguousarray(channel, dtype=np.int32))
        self.lane = (np.zeros(len(self.src), np.uint8) if lane is None
                     else np.ascontiguousarray(lane, dtype=np.uint8))
        self.switches = int(switches)
        self.network = int(network)
        self.step_ptr = np.ascontiguousarray(step_ptr, dtype=np.int64)
        self.name = name
        self.meta = dict(meta or {})
        self._validate_shape()

    # ------------------------------------------------------------------ shape
    def _validate_shape(self) -> None:
        if self.ranks < 1:
            raise ScheduleError(f"ranks must be >= 1, got {self.ranks}")
        if self.count < 0:
            raise ScheduleError(f"count must be >= 0, got {self.count}")
        if self.itemsize < 1:
            raise ScheduleError(f"itemsize must be >= 1, got {self.itemsize}")
        if self.switches < 0:
            raise ScheduleError(f"switches must be >= 0, got {self.switches}")
        if self.network not in (0, 1):
            raise ScheduleError(f"network must be 0 or 1, got {self.network}")
        n = len(self.src)
        for name in ("dst", "offset", "dst_offset", "length", "op", "channel", "lane"):
            if len(getattr(self, name)) != n:
                raise ScheduleError(f"column {name} has {len(getattr(self, name))} entries, src "
                                    f"has {n}")
        sp = self.step_ptr
        if len(sp) < 1 or sp[0] != 0 or sp[-1] != n or np.any(np.diff(sp) < 0):
            raise ScheduleError("step_ptr must start at 0, end at the transfer count and never "
                                "decrease")
        if n and (self.op.max() > COPY):
            raise ScheduleError("op codes must be 0 (reduce) or 1 (copy)")
        if n and self.channel.min() < 0:
            raise ScheduleError("channels must be >= 0")

    @property
    def shifted(self) -> bool:
        """True when some transfer writes elsewhere than it reads (``dst_offset``)."""
        return self.dst_offset is not self.offset

    def take(self, index, step_ptr, **changes) -> "Schedule":
        """The schedule of transfers ``index`` (an index or mask array), in that order, cut in steps
        by ``step_ptr``; ``changes`` replace the channel column or the keyword attributes."""
        cols = {k: getattr(self, k)[index]
                for k in ("src", "dst", "offset", "length", "op", "channel", "lane")}
        if self.shifted:
            cols["dst_offset"] = self.dst_offset[index]
        keep = dict(name=self.name, meta=self.meta, switches=self.switches, network=self.network,
                    collective=self.collective)
        return Schedule(self.ranks, self.count, self.itemsize, step_ptr=step_ptr,
                        **{**cols, **keep, **changes})

    @property
    def n_steps(self) -> int:
        return len(self.step_ptr) - 1

    @property
    def n_transfers(self) -> int:
        return len(self.src)

    @property
    def endpoints(self) -> int:
        """GPUs and switches: ranks + switches + network."""
        return self.ranks + self.switches + self.network

    @property
    def network_endpoint(self) -> int | None:
        """The network's switch endpoint (ranks + switches), None without one."""
        return self.ranks + self.switches if self.network else None

    @property
    def n_channels(self) -> int:
        """1 + the highest channel used (1 for an empty schedule)."""
        return int(self.channel.max()) + 1 if len(self.channel) else 1

    @property
    def nbytes(self) -> int:
        """Bytes of one rank's buffer."""
        return self.count * self.itemsize

    @property
    def step_index(self) -> np.ndarray:
        """Step number of every transfer (int64, length n_transfers)."""
        return np.repeat(np.arange(self.n_steps, dtype=np.int64), np.diff(self.step_ptr))

    def step_slice(self, s: int) -> slice:
        return slice(int(self.step_ptr[s]), int(self.step_ptr[s + 1]))

    def place(self, i: int) -> str:
        """Where transfer ``i`` (a global index) stands, as messages say it, counted from 1:
        "step k of n, transfer t of m"."""
        step = int(np.searchsorted(self.step_ptr, i, side="right")) - 1
        lo, hi = int(self.step_ptr[step]), int(self.step_ptr[step + 1])
        return f"step {step + 1} of {self.n_steps}, transfer {i - lo + 1} of {hi - lo}"

    def transfer(self, i: int) -> Transfer:
        return Transfer(int(self.src[i]), int(self.dst[i]), int(self.offset[i]),
                        int(self.length[i]), OP_NAMES[int(self.op[i])], int(self.channel[i]),
                        int(self.lane[i]),
                        dst_offset=int(self.dst_offset[i]) if self.shifted else None)

    @property
    def steps(self) -> list[list[Transfer]]:
        """The list-of-steps view (builds Python objects: small schedules only)."""
        return [[self.transfer(i) for i in range(self.step_ptr[s], self.step_ptr[s + 1])]
                for s in range(self.n_steps)]

    def __len__(self) -> int:
        return self.n_steps

    def __repr__(self) -> str:
        more = f", channels={self.n_channels}" if self.n_channels > 1 else ""
        more += f", switches={self.switches}" if self.switches else ""
        more += ", network" if self.network else ""
        more += f", {self.collective}" if self.collective != "all_reduce" else ""
        return (f"Schedule({self.name or 'unnamed'}, ranks={self.ranks}, count={self.count}, "
                f"itemsize={self.itemsize}, steps={self.n_steps}, "
                f"transfers={self.n_transfers}{more})")

    # ---------------------------------------------------------- constructors
    @classmethod
    def from_steps(cls, ranks: int, count: int, steps: Iterable[Iterable], itemsize: int = 4,
                   name: str = "", meta: dict | None = None, switches: int = 0, network: int = 0,
                   collective: str = "all_reduce") -> "Schedule":
        """Build from a list of steps of ``Transfer``s, dicts or (src, dst, offset, count[, op[,
        channel[, lane]]]) tuples (op default "reduce", channel and lane default 0, dst_offset
        default offset)."""
        a, ptr = transfer_rows(steps)
        return cls(ranks, count, itemsize, *a[:, :5].T, ptr, name=name, meta=meta, channel=a[:, 5],
                   switches=switches, lane=a[:, 6], network=network, dst_offset=a[:, 7],
                   collective=collective)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        ops = [OP_NAMES[o] for o in self.op.tolist()]
        src, dst, off, ln, ch, la = (a.tolist()
                                     for a in (self.src, self.dst, self.offset, self.length,
                                               self.channel, self.lane))
        to = self.dst_offset.tolist() if self.shifted else off
        steps = []
        for s in range(self.n_steps):
            lo, hi = int(self.step_ptr[s]), int(self.step_ptr[s + 1])
            steps.append([{"src": src[i], "dst": dst[i], "offset": off[i], "count": ln[i],
                           "op": ops[i], "channel": ch[i], **({"lane": la[i]} if la[i] else {}),
                           **({"dst_offset": to[i]} if to[i] != off[i] else {})}
                          for i in range(lo, hi)])
        d = {"ranks": self.ranks, "count": self.count, "itemsize": self.itemsize, "steps": steps}
        if self.collective != "all_reduce":
            d["collective"] = self.collective
        if self.switches:
            d["switches"] = self.switches
        if self.network:
            d["network"] = self.network
        if self.name:
            d["name"] = self.name
        if self.meta:
            d["meta"] = self.meta
        return d

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d) -> "Schedule":
        """A schedule from the JSON schema above; ``ScheduleError`` (one line) for a document
        that is not one (module docstring)."""
        check_document(d)
        return cls.from_steps(d["ranks"], d["count"], d["steps"], itemsize=d.get("itemsize", 4),
                              name=d.get("name", ""), meta=d.get("meta"),
                              switches=d.get("switches", 0), network=d.get("network", 0),
                              collective=d.get("collective", "all_reduce"))

    @classmethod
    def from_json(cls, text: str, where: str = "schedule") -> "Schedule":
        """``from_dict`` of JSON ``text``; errors name ``where`` when the text is not JSON."""
        try:
            d = parse_json(text, where)
        except CollsimError as e:
            raise ScheduleError(str(e)) from None
        return cls.from_dict(d)


def read_schedule(path) -> Schedule:
    """A schedule JSON file (``collsim schedule --json`` or hand-written), read through
    ``collsim.inputs.read_text``; one-line errors naming the file."""
    return Schedule.from_json(read_text(path, "schedule file"), f"schedule file {path}")
