"""Event-driven simulation of a schedule on a topology.

Timing semantics (shared with the closed forms in ``collsim.cost``; ``collsim.simulate.reference``
computes exactly this as one plain loop, the place to read it first):

* Duration. A transfer of b bytes (``length * itemsize``) takes
  ``alpha_L + b * beta_L`` seconds on its link class L (intra-node if both
  ranks are on one node, else inter-node), plus ``b * gamma`` if its op is
  reduce (the receiver's reduction, ``gamma`` in seconds per byte).
* Data readiness. A transfer is ready when every transfer of an *earlier
  step* that wrote an element range overlapping its own on its sender (and,
  for reduce, on its receiver) has ended. Transfers of one step never wait for
  each other's data (a step reads the buffers as at its start). So pipelined
  steps overlap wherever the data allows.
* Resources and contention policy. A transfer holds, for its whole duration,
  the sender's send port ("gpuR.send"), the receiver's receive port
  ("gpuR.recv") and, if it crosses nodes, the sending node's NIC
  ("nodeN.nicK.out") and the receiving node's NIC ("nodeN.nicK.in"), where
  K = local GPU index % nics_per_node. Ports are full duplex (send and receive
  are separate resources). Each resource serves its transfers one at a time in
  schedule order (step, then position in the step): first come in schedule
  order, first served, never reordered, no bandwidth sharing. A transfer
  starts at max(ready, the time every one of its resources is free).

Speed: steps are processed in order with numpy (``collsim.simulate.engine``). Element
ranges are mapped to segments between the schedule's breakpoints (every offset
and end), and the latest write time of each (rank, segment) is kept, so
readiness is a gather and a max; where ranges span many segments (halving-
doubling) the latest write times live in per-rank segment trees
(``collsim.simulate.segment_tree``), O(log segments) per transfer, same result bit for bit.
A step whose transfers share no resource is one vectorized update; a step
whose transfers share resources is solved by cumulative maxima along each
resource's FIFO chain, swept over the resource kinds to the fixed point, or by
an exact per-transfer loop where that converges slowly (``collsim.simulate.fifo``;
results within 1e-12 relative of the loop). Deterministic: no randomness,
fixed order of floating-point operations.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

import numpy as np

from collsim.errors import CollsimError
from collsim.schedule import REDUCE, Schedule
from collsim.simulate.engine import Plan
from collsim.simulate.topology import Topology

BATCH_ELEMENTS = 1 << 24   # cap on ranks x segments x batched sizes (float64 data-readiness table)


@dataclass(eq=False)
class SimResult:
    """Outcome of ``simulate``: times in seconds, one entry per transfer in schedule order."""

    schedule: Schedule
    topology: Topology
    gamma: float
    start: np.ndarray
    end: np.ndarray

    @property
    def time_s(self) -> float:
        """Completion time of the whole schedule (seconds; 0 for an empty one)."""
        return float(self.end.max()) if len(self.end) else 0.0

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @cached_property
    def nbytes(self) -> np.ndarray:
        """Bytes of every transfer."""
        return self.schedule.length * self.schedule.itemsize

    def _per(self, keys: np.ndarray, size: int, mask=None) -> tuple[np.ndarray, np.ndarray]:
        if mask is not None:
            keys, dur, nb = keys[mask], self.duration[mask], self.nbytes[mask]
        else:
            dur, nb = self.duration, self.nbytes
        return (np.bincount(keys, weights=dur, minlength=size),
                np.bincount(keys, weights=nb, minlength=size).astype(np.int64))

    @cached_property
    def _resources(self) -> dict[str, tuple[float, int]]:
        s, topo, P = self.schedule, self.topology, self.schedule.ranks
        out = {}
        for kind, keys in (("send", s.src), ("recv", s.dst)):
            busy, nb = self._per(keys, P)
            for r in range(P):
                out[f"gpu{r}.{kind}"] = (float(busy[r]), int(nb[r]))
        if topo.nodes > 1:
            inter = topo.node_of(s.src) != topo.node_of(s.dst)
            nics = topo.nodes * topo.nics_per_node
            for kind, keys in (("out", topo.nic_of(s.src)), ("in", topo.nic_of(s.dst))):
                busy, nb = self._per(keys, nics, inter)
                for k in range(nics):
                    node, nic = divmod(k, topo.nics_per_node)
                    out[f"node{node}.nic{nic}.{kind}"] = (float(busy[k]), int(nb[k]))
        return out

    @property
    def resource_busy_s(self) -> dict[str, float]:
        """Seconds each resource ("gpu3.send", "node1.nic0.out", ...) was held."""
        return {k: v[0] for k, v in self._resources.items()}

    @property
    def resource_bytes(self) -> dict[str, int]:
        """Bytes that went through each resource."""
        return {k: v[1] for k, v in self._resources.items()}

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
             "resources": {k: {"busy_s": b, "bytes": n, "utilization": b / t if t > 0 else 0.0}
                           for k, (b, n) in self._resources.items() if n},
             "links": [[a, b, n] for (a, b), n in self.link_bytes.items()]}
        if transfers:
            d["start_s"] = self.start.tolist()
            d["end_s"] = self.end.tolist()
        return d


def durations(schedule: Schedule, topology: Topology, gamma: float = 0.0) -> np.ndarray:
    """Seconds each transfer holds its resources: alpha + bytes * (beta + gamma if reduce)."""
    if not (gamma >= 0 and np.isfinite(gamma)):
        raise CollsimError(f"gamma must be a finite number >= 0 (seconds per byte), got {gamma!r}")
    nb = (schedule.length * schedule.itemsize).astype(np.float64)
    intra, inter = topology.intra, topology.inter
    if topology.nodes == 1:
        alpha, beta = intra.alpha, intra.beta
    else:
        cross = topology.node_of(schedule.src) != topology.node_of(schedule.dst)
        alpha = np.where(cross, inter.alpha, intra.alpha)
        beta = np.where(cross, inter.beta, intra.beta)
    dur = alpha + nb * beta
    if gamma:
        dur += nb * gamma * (schedule.op == REDUCE)
    return dur


def _check_fit(schedule: Schedule, topology: Topology) -> None:
    if schedule.ranks > topology.ranks:
        raise CollsimError(f"schedule has {schedule.ranks} ranks but topology {topology.name or ''} has only "
                           f"{topology.ranks} ({topology.nodes} nodes x {topology.gpus_per_node} GPUs)")


def simulate(schedule: Schedule, topology: Topology, gamma: float = 0.0) -> SimResult:
    """Simulate ``schedule`` on ``topology`` (gamma: reduction seconds per byte).

    The topology may have more GPUs than the schedule has ranks (the job uses
    ranks 0..P-1 of it), never fewer.
    """
    _check_fit(schedule, topology)
    dur = durations(schedule, topology, gamma)
    start, end = Plan(schedule, topology).run(dur[None, :])
    return SimResult(schedule, topology, float(gamma), start[0], end[0])


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

    def flush():
        if batch:
            _, end = plan.run(np.stack(batch))
            times.extend(end.max(axis=1).tolist() if end.shape[1] else [0.0] * len(batch))
            batch.clear()

    for sched in schedules:
        _check_fit(sched, topology)
        new = Plan(sched, topology)
        if plan is None or not plan.same_structure(new) or \
                (len(batch) + 1) * plan.table_size > max(BATCH_ELEMENTS, plan.table_size):
            flush()
            plan = new
        batch.append(durations(sched, topology, gamma))
    flush()
    return np.array(times)
