"""Event-driven simulation of a schedule on a topology (``simulated_us``; ``collsim.predictors``).

collsim predicts a time two ways. The event simulation (collsim simulate, simulated_us) runs a checked
schedule transfer by transfer on a described machine and shows where every byte goes and which resource
binds, for NCCL's schedules or your own. The fitted model (collsim predict-nccl, model_us) takes NCCL's own
choice of algorithm, protocol and channels and times it with collsim's NCCL-shaped model, fitted to real
measurements and rescaled to the machine; it knows NCCL's protocols, pipelining and launch costs, which the
simulation does not, so the two differ at small and mid sizes and for NCCL's trees on 4 or more nodes,
where the simulation's schedule-order contention under-serves them.

Timing semantics (shared with the closed forms in ``collsim.cost``; ``collsim.simulate.reference``
computes exactly this as one plain loop, the place to read it first):

* Link and duration. A transfer of b bytes (``length * itemsize``) on link L
  (intra-node between two GPUs of a node, inter-node between nodes, NVLS between
  a GPU and its node's NVSwitch endpoint) ends ``alpha_L + b * beta_L`` seconds
  after it starts, plus ``b * gamma`` if its op is reduce (the receiver's
  reduction, ``gamma`` in seconds per byte).
* Data readiness. A transfer is ready when every transfer of an *earlier
  step* that wrote an element range overlapping its own on its sender (and,
  for reduce, on its receiver) has ended. Transfers of one step never wait for
  each other's data (a step reads the buffers as at its start). So pipelined
  steps overlap wherever the data allows.
* Resources (``collsim.simulate.resources``). A transfer holds (a) its
  channel's send slot on the sender and receive slot on the receiver (keyed
  (rank, channel): NCCL runs a channel as one thread block that waits for its
  own flags) for its whole duration, so latency is paid per channel; and (b)
  the ports its bytes cross for ``b * beta_L`` only, so bandwidth is shared by
  all channels: the sender's link-out port and the receiver's link-in port
  inside a node ("gpuR.send"/"gpuR.recv"; on a board without NVSwitch the
  directed pair link "gpuA-gpuB"), the two NICs across nodes
  ("nodeN.nicK.out"/"in", ``Topology.nic_of``: a GPU reaches its NIC over PCIe,
  not through its NVLink ports). A transfer to or from a switch holds only the
  GPU side's slot and port, and needs the topology's ``nvls`` link. Ports are
  full duplex (send and receive are separate resources).
* Contention policy. Each resource serves its transfers one at a time in
  schedule order (step, then position in the step): first come in schedule
  order, first served, never reordered, no bandwidth sharing. A transfer
  starts at max(ready, the time every one of its resources is free).
* A topology's ``call_us`` (a real machine's fixed cost per collective call)
  is added to the completion time of every non-empty schedule.

With one channel a rank's slot is held longer than its ports, so the slots bind
and a ring or tree takes alpha + b beta per step as before; with C channels the
ports serialize the channels' bytes while each channel's alpha overlaps the
others' transfers (``collsim.cost`` gives the exact forms).

Speed: steps are processed in order with numpy (``collsim.simulate.engine``). Element
ranges are mapped to segments between the schedule's breakpoints (every offset
and end), and the latest write time of each (endpoint, segment) is kept, so
readiness is a gather and a max; where ranges span many segments (halving-
doubling) the latest write times live in per-endpoint segment trees
(``collsim.simulate.segment_tree``), O(log segments) per transfer, same result bit for bit.
A step whose transfers share no resource is one vectorized update; a step
whose transfers share resources is cut into its runs of one channel (each one
update), or solved by a cumulative max along one kind of FIFO chains, level by
level, or one loop in schedule order (``collsim.simulate.contention``,
``collsim.simulate.fifo``; within 1e-12 relative of the reference, the level and
loop forms bit for bit). Deterministic: no randomness,
fixed order of floating-point operations. Simulations of many transfers show a
tqdm progress bar on stderr when stderr is a terminal (``PROGRESS_TRANSFERS``).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.engine import Plan
from collsim.simulate.resources import Routes, port_names, route

BATCH_ELEMENTS = 1 << 24   # cap on ranks x segments x batched sizes (float64 data-readiness table)
PROGRESS_TRANSFERS = 4_000_000   # simulations of more transfers show a progress bar (a few seconds or more)


@dataclass(eq=False)
class SimResult:
    """Outcome of ``simulate``: times in seconds, one entry per transfer in schedule order."""

    schedule: Schedule
    topology: Topology
    gamma: float
    start: np.ndarray
    end: np.ndarray
    routes: Routes | None = None

    @property
    def time_s(self) -> float:
        """Completion time of the whole schedule plus the topology's ``call_us`` (seconds; 0 for an
        empty schedule)."""
        return float(self.end.max()) + self.topology.call_us * 1e-6 if len(self.end) else 0.0

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @cached_property
    def nbytes(self) -> np.ndarray:
        """Bytes of every transfer."""
        return self.schedule.length * self.schedule.itemsize

    @cached_property
    def _resources(self) -> dict[str, tuple[float, int]]:
        """name -> (seconds held, bytes) of every port, NIC and pair link (slots are per channel and
        not listed)."""
        s, topo = self.schedule, self.topology
        r = self.routes or route(s.src, s.dst, s.channel, s.ranks, topo)
        wire = durations(s, topo, self.gamma, r)[1]
        out = {}
        for kind, names in zip((2, 3), port_names(topo)):
            v = r.valid(kind)
            busy = np.bincount(r.keys[kind][v], weights=wire[v], minlength=len(names))
            nb = np.bincount(r.keys[kind][v], weights=self.nbytes[v], minlength=len(names)).astype(np.int64)
            out.update((name, (float(busy[i]), int(nb[i]))) for i, name in enumerate(names))
        return out

    @property
    def resource_busy_s(self) -> dict[str, float]:
        """Seconds each resource ("gpu3.send", "node1.nic0.out", ...) was held."""
        return {k: v[0] for k, v in self._resources.items()}

    @property
    def resource_bytes(self) -> dict[str, int]:
        """Bytes that went through each resource."""
        return {k: v[1] for k, v in self._resources.items()}

    def resource_table(self) -> list[dict]:
        """[{"name", "busy" (share of ``time_s`` held, 0..1), "busy_s", "bytes"}] of every resource that
        carried bytes, in the order of ``collsim.simulate.resources.port_names`` (GPU ports, NICs, pair links)."""
        t = self.time_s
        return [{"name": k, "busy": b / t if t > 0 else 0.0, "busy_s": b, "bytes": n}
                for k, (b, n) in self._resources.items() if n]

    @cached_property
    def link_bytes(self) -> dict[tuple[int, int], int]:
        """Bytes sent over each (src, dst) pair that carried any."""
        s = self.schedule
        pair = s.src * s.ranks + s.dst
        keys, inv = np.unique(pair, return_inverse=True)
        nb = np.bincount(inv, weights=self.nbytes).astype(np.int64)
        return {(int(k // s.ranks), int(k % s.ranks)): int(b) for k, b in zip(keys, nb)}

    def to_dict(self, transfers: bool = False) -> dict:
        """Compact JSON-ready summary; ``transfers=True`` adds per-transfer start/end (seconds)."""
        s, t = self.schedule, self.time_s
        d = {"time_s": t, "gamma": self.gamma,
             "schedule": {"name": s.name, "ranks": s.ranks, "count": s.count, "itemsize": s.itemsize,
                          "steps": s.n_steps, "transfers": s.n_transfers},
             "topology": self.topology.to_dict(),
             "resources": self.resource_table(),
             "links": [[a, b, n] for (a, b), n in self.link_bytes.items()]}
        if transfers:
            d["start_s"] = self.start.tolist()
            d["end_s"] = self.end.tolist()
        return d


def durations(schedule: Schedule, topology: Topology, gamma: float = 0.0,
              routes: Routes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(duration, wire) in seconds per transfer: duration = alpha_L + bytes * beta_L (+ bytes * gamma if it
    reduces), how long it holds its slots and when it ends after its start; wire = bytes * beta_L, how long
    it holds its ports. ``routes`` (``collsim.simulate.resources.route``) gives each transfer's link L."""
    if not (gamma >= 0 and np.isfinite(gamma)):
        raise CollsimError(f"gamma must be a finite number >= 0 (seconds per byte), got {gamma!r}")
    s = schedule
    r = routes or route(s.src, s.dst, s.channel, s.ranks, topology)
    nb = (s.length * s.itemsize).astype(np.float64)
    links = [topology.intra, topology.inter, topology.nvls or topology.intra]
    alpha = np.array([link.alpha for link in links])[r.link]
    wire = nb * np.array([link.beta for link in links])[r.link]
    dur = alpha + wire
    if gamma:
        dur += nb * gamma * (s.op == REDUCE)
    return dur, wire


def _check_fit(schedule: Schedule, topology: Topology) -> None:
    if schedule.ranks > topology.ranks:
        raise CollsimError(f"schedule has {schedule.ranks} ranks but topology {topology.name or ''} has only "
                           f"{topology.ranks} ({topology.nodes} nodes x {topology.gpus_per_node} GPUs)")


def _progress(total: int, wanted: bool = True):
    """A tqdm bar's update on stderr for a simulation of ``total`` transfers, or None (not wanted, small
    runs, no terminal, or tqdm missing)."""
    if not wanted or total < PROGRESS_TRANSFERS or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="transfer", unit_scale=True, file=sys.stderr, leave=False, desc="simulate").update


def simulate(schedule: Schedule, topology: Topology, gamma: float = 0.0, progress: bool = True) -> SimResult:
    """Simulate ``schedule`` on ``topology`` (gamma: reduction seconds per byte).

    The topology may have more GPUs than the schedule has ranks (the job uses
    ranks 0..P-1 of it), never fewer. ``progress``: allow the progress bar (big runs, terminal only).
    """
    _check_fit(schedule, topology)
    plan = Plan(schedule, topology)
    dur, wire = durations(schedule, topology, gamma, plan.routes)
    start, end = plan.run(dur[None, :], wire[None, :], _progress(schedule.n_transfers, progress))
    return SimResult(schedule, topology, float(gamma), start[0], end[0], plan.routes)


def simulate_times(schedules: Iterable[Schedule], topology: Topology, gamma: float = 0.0) -> np.ndarray:
    """Completion time (seconds) of each schedule, simulating alike schedules together.

    Consecutive schedules with the same structure (same transfers between the
    same ranks over the same segments, only element counts differ, as for one
    algorithm at growing sizes) share one plan and are simulated in one pass
    with a column of durations each: exactly what ``simulate`` gives, cheaper.
    Schedules are consumed one at a time (pass a generator for big ones).
    """
    times: list[float] = []
    plan, batch = None, []

    call_s = topology.call_us * 1e-6

    def flush():
        if batch:
            _, end = plan.run(np.stack([d for d, _ in batch]), np.stack([w for _, w in batch]))
            times.extend((end.max(axis=1) + call_s).tolist() if end.shape[1] else [0.0] * len(batch))
            batch.clear()

    for sched in schedules:
        _check_fit(sched, topology)
        new = Plan(sched, topology)
        if plan is None or not plan.same_structure(new) or \
                (len(batch) + 1) * plan.table_size > max(BATCH_ELEMENTS, plan.table_size):
            flush()
            plan = new
        batch.append(durations(sched, topology, gamma, new.routes))
    flush()
    return np.array(times)
