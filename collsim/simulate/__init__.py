"""Event-driven simulation of a schedule on a machine (``simulated_us``; ``collsim.predictors``).

How it serves the other predictors: ``collsim.predictors.PREDICTORS``.

Semantics (``collsim.simulate.reference`` is the whole of it as one readable loop): a transfer waits
for the data it reads to arrive, for the transfer before it on its engine (its channel and lane on
its GPU) to end and for its connection's window; its bytes then hold the ports they cross (a GPU's
NVLink port, a NIC, a pair link, a leaf's or pod's uplinks and downlinks where the machine's fabric
oversubscribes them) at a fair share of each port's rate, and its channel's thread block at the
channel's own rate (shared by the channel's lanes); its engine spends a fixed overhead after them,
and its data arrives a latency later. Latency delays the arrival and holds nothing. Durations per
transfer come from the machine's links and, under one of NCCL's protocols, from its protocol costs
(``collsim.simulate.costs``, ``collsim.machine.protocols``). Contention policy "fair" (default):
each port shares its rate fairly among the transfers on it at every moment
(``collsim.simulate.fair``); "schedule": one at a time in schedule order. The run ends when the
receiver of the last transfer has taken it in (its arrival plus the step's overhead), plus the
machine's fixed cost per call (``call_us``).

Deterministic: no randomness, a fixed order of floating-point operations; the engine (``events``)
agrees with the reference loop. Modules: ``reference`` (the semantics), ``costs`` (durations),
``resources`` (routing), ``deps`` (what each transfer waits for), ``fair`` (a fairly shared port),
``events`` (the engine), ``ports`` (its ports' jobs: service, fair shares), ``heaps`` (its event
queues), ``jit`` (compiled by numba for large runs), ``symmetry`` (channels that repeat each other
simulated once, exactly), ``shift`` (a ring on ranks alike simulated on a few of them). Simulations
of many transfers show a tqdm progress bar on stderr when stderr is a terminal
(``PROGRESS_TRANSFERS``)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property
from typing import Iterable

import numpy as np

from collsim.core.schedule import Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.costs import port_share, transfer_costs
from collsim.simulate.deps import data_deps, ranges, structural
from collsim.simulate.events import held_jobs, run
from collsim.simulate.reference import POLICIES
from collsim.simulate.resources import NVLS, Routes, fabric_names, nic_factor, port_names, route

# simulations of more transfers show a progress bar (a few seconds or more)
PROGRESS_TRANSFERS = 4_000_000


@dataclass(eq=False)
class SimResult:
    """Outcome of ``simulate``: times in seconds, one entry per transfer in schedule order:
    ``start`` (its bytes start), ``end`` (its engine is done), ``arrive`` (its data is there) and
    ``taken`` (its receiver has taken it in: ``arrive`` plus the step's fixed cost, on the
    receiver's side; None: ``arrive``)."""

    schedule: Schedule
    topology: Topology
    gamma: float
    start: np.ndarray
    end: np.ndarray
    arrive: np.ndarray
    routes: Routes | None = None
    protocol: str | None = None
    policy: str = "fair"
    taken: np.ndarray | None = None

    @property
    def time_s(self) -> float:
        """Completion time of the whole schedule (when the last transfer is taken in) plus the
        topology's ``call_us`` (seconds; 0 for an empty schedule)."""
        last = self.arrive if self.taken is None else self.taken
        return float(last.max()) + self.topology.call_us * 1e-6 if len(last) else 0.0

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start

    @cached_property
    def nbytes(self) -> np.ndarray:
        """Bytes of every transfer."""
        return self.schedule.length * self.schedule.itemsize

    @cached_property
    def _resources(self) -> dict[str, tuple[float, int]]:
        """name -> (seconds held, bytes) of every port, NIC, pair link and fabric port (engines are
        per channel and not listed)."""
        s, topo = self.schedule, self.topology
        r = self.routes or _routes(s, topo)
        c = transfer_costs(s, topo, r, self.gamma, self.protocol)
        out = {}
        fabric = fabric_names(topo, r.merged)
        slow = [nic_factor(topo, r.keys[kind]) for kind in (2, 3)]
        tables = [(r.keys[kind], r.sizes[kind], c.port if f is None else c.port * f, names)
                  for kind, f, names in zip((2, 3), slow, port_names(topo, r.merged))]
        tables += [(col, r.fabric_size, c.fabric[:, t // 2], fabric)
                   for t, col in enumerate(r.fabric)]
        for keys, size, wire, names in tables:
            v = keys != size - 1
            busy = np.bincount(keys[v], weights=wire[v], minlength=len(names))
            nb = np.bincount(keys[v], weights=self.nbytes[v], minlength=len(names)).astype(np.int64)
            # merged rows share a name: only one carries bytes
            for i, name in enumerate(names):
                held, moved = out.get(name, (0.0, 0))
                out[name] = (held + float(busy[i]), moved + int(nb[i]))
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
        """[{"name", "busy" (share of ``time_s`` held, 0..1), "busy_s", "bytes"}] of every resource
        that carried bytes, in the order of ``collsim.simulate.resources.port_names`` (GPU ports,
        NICs, pair links), then ``fabric_names`` (the fabric's uplinks and downlinks)."""
        t = self.time_s
        return [{"name": k, "busy": b / t if t > 0 else 0.0, "busy_s": b, "bytes": n}
                for k, (b, n) in self._resources.items() if n]

    def busiest(self) -> dict | None:
        """The resource held longest (``resource_table``'s row), None when nothing moved."""
        rows = self.resource_table()
        return max(rows, key=lambda r: r["busy_s"]) if rows else None

    @cached_property
    def link_bytes(self) -> dict[tuple[int, int], int]:
        """Bytes sent over each (src, dst) pair that carried any."""
        s = self.schedule
        pair = s.src * s.endpoints + s.dst
        keys, inv = np.unique(pair, return_inverse=True)
        nb = np.bincount(inv, weights=self.nbytes).astype(np.int64)
        return {(int(k // s.endpoints), int(k % s.endpoints)): int(b) for k, b in zip(keys, nb)}

    def to_dict(self, transfers: bool = False) -> dict:
        """Compact JSON-ready summary; ``transfers=True`` adds per-transfer start/end/arrive
        (seconds)."""
        s, t = self.schedule, self.time_s
        d = {"time_s": t, "gamma": self.gamma, "protocol": self.protocol, "policy": self.policy,
             "schedule": {"name": s.name, "ranks": s.ranks, "count": s.count,
                          "itemsize": s.itemsize,
                          "steps": s.n_steps, "transfers": s.n_transfers},
             "topology": self.topology.to_dict(),
             "resources": self.resource_table(),
             "links": [[a, b, n] for (a, b), n in self.link_bytes.items()]}
        if transfers:
            d["start_s"] = self.start.tolist()
            d["end_s"] = self.end.tolist()
            d["arrive_s"] = self.arrive.tolist()
        return d


def jobs(s: Schedule, routes: Routes, c,
         topology: Topology) -> tuple[tuple[np.ndarray, ...], int]:
    """Every transfer's jobs (``collsim.simulate.events.run``): its out port and in port for its
    port time, across nodes its sender's and receiver's proxy for the proxy time (the network's
    switch has none), and its sender's channel for its time at the channel's rate (where the
    protocol limits a channel; not to or from an NVSwitch: NVLS's warp groups each move their own
    channel's rate; not out of the network's switch: its GPU's NIC writes the sum, no warp moves
    it); one table of rows, the last spare: (``held_jobs``' arrays, the rows)."""
    out, inn = routes.keys[2].astype(np.int64), routes.keys[3].astype(np.int64)
    n_out, n_in = routes.sizes[2], routes.sizes[3]
    # proxies after the out and in rows, one per endpoint
    base = n_out - 1 + n_in - 1
    blocks = base + s.endpoints                      # then the senders' channels
    fabric = blocks + routes.sizes[1] - 1            # then the fabric's uplinks and downlinks
    spare = fabric + routes.fabric_size - 1
    # (docstring)
    cross, capped = c.proxy > 0, (c.alone > 0) & (routes.link != NVLS) & (s.src < s.ranks)
    g = topology.gpus_per_node if routes.merged else 1
    src, dst = s.src // g * g, s.dst // g * g           # merged: a node's proxy is its first GPU's
    one = np.ones(s.n_transfers)
    up = [np.where(f == routes.fabric_size - 1, spare, fabric + f) for f in routes.fabric]
    rows = np.stack([np.where(out == n_out - 1, spare, out),
                     np.where(inn == n_in - 1, spare, inn + n_out - 1),
                     np.where(cross & (s.src < s.ranks), base + src, spare),
                     np.where(cross & (s.dst < s.ranks), base + dst, spare),
                     np.where(capped, blocks + routes.keys[1], spare), *up], axis=1)
    tiers, share = range(len(routes.fabric) // 2), c.fabric_share if routes.fabric else None
    ports = [c.port if f is None else c.port * f
             for f in (nic_factor(topology, out), nic_factor(topology, inn))]
    sizes = np.stack([*ports, c.proxy, c.proxy, c.alone,
                      *(c.fabric[:, t] for t in tiers for _ in (0, 1))], axis=1)
    caps = np.stack([*(c.share if p is c.port else port_share(p, c.alone) for p in ports), one, one,
                     one,
                     *(share[:, t] for t in tiers for _ in (0, 1))], axis=1)
    return held_jobs(rows, sizes, caps, spare), spare + 1


def _routes(s: Schedule, topology: Topology, merged: bool = False) -> Routes:
    return route(s.src, s.dst, s.channel, s.ranks, topology, lane=s.lane, merged=merged,
                 network=s.network_endpoint)


def _check_fit(schedule: Schedule, topology: Topology) -> None:
    if schedule.ranks > topology.ranks:
        raise CollsimError(f"schedule has {schedule.ranks} ranks but topology "
                           f"{topology.name or ''} has only "
                           f"{topology.ranks} ({topology.nodes} nodes x {topology.gpus_per_node} "
                           "GPUs)")


def _progress(total: int, wanted: bool = True):
    """A tqdm bar's update on stderr for a simulation of ``total`` transfers, or None (not wanted,
    small runs, no terminal, or tqdm missing)."""
    if not wanted or total < PROGRESS_TRANSFERS or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="transfer", unit_scale=True, file=sys.stderr, leave=False,
                desc="simulate").update


def _run(schedule: Schedule, routes: Routes, c, policy: str, progress, topology: Topology):
    """(start, end, arrive) of every transfer (``collsim.simulate.events``)."""
    s = schedule
    sa, sb, da, db, nseg = ranges(s)
    ptr, dep = data_deps(s, sa, sb, nseg, da, db)
    engine_pred, window_pred = structural(s, c.window)
    held, n_rows = jobs(s, routes, c, topology)
    return run(s.n_transfers, ptr, dep, engine_pred, window_pred, held, n_ports=n_rows, costs=c,
               policy=policy, progress=progress)


def simulate(schedule: Schedule, topology: Topology, gamma: float = 0.0, progress: bool = True,
             protocol: str | None = None, policy: str = "fair", merged: bool = False) -> SimResult:
    """Simulate ``schedule`` on ``topology`` (gamma: reduction seconds per byte) under ``protocol``
    (None: the links' Hockney costs; "LL", "LL128", "Simple": the topology's protocol costs) and
    contention ``policy``.

    The topology may have more GPUs than the schedule has ranks (the job uses ranks 0..P-1 of it),
    never fewer. ``progress``: allow the progress bar (big runs, terminal only). ``merged``: the
    GPUs of a node share one port, NIC and proxy each (the quotient of
    ``collsim.simulate.symmetry.permute_channels``). """
    _check_fit(schedule, topology)
    if policy not in POLICIES:
        raise CollsimError(f"contention policy {policy!r:.30} is not one of {', '.join(POLICIES)}")
    _plan_checks(schedule)
    routes = _routes(schedule, topology, merged)
    c = transfer_costs(schedule, topology, routes, gamma, protocol)
    start, end, arrive = _run(schedule, routes, c, policy,
                              _progress(schedule.n_transfers, progress), topology)
    return SimResult(schedule, topology, float(gamma), start=start, end=end, arrive=arrive,
                     routes=routes, protocol=protocol, policy=policy,
                     taken=arrive + c.overhead if c.overhead.any() else None)


def _plan_checks(s: Schedule) -> None:
    """The checks ``Plan`` makes of a schedule before it is timed (ranks and ranges inside the
    buffer)."""
    n, ends = s.n_transfers, s.offset + s.length
    if n and (s.src.min() < 0 or s.dst.min() < 0 or max(s.src.max(), s.dst.max()) >= s.endpoints):
        raise CollsimError(f"schedule names a rank outside 0..{s.endpoints - 1}")
    if n and (min(s.offset.min(), s.dst_offset.min()) < 0 or s.length.min() < 0
              or max(ends.max(), (s.dst_offset + s.length).max()) > s.count):
        raise CollsimError(f"schedule has an element range outside its buffer of {s.count} "
                           f"elements")


def simulate_times(schedules: Iterable[Schedule], topology: Topology, gamma: float = 0.0,
                   protocol: str | None = None, policy: str = "fair") -> np.ndarray:
    """Completion time (seconds) of each schedule (``simulate``'s ``time_s``); schedules are
    consumed one at a time (pass a generator for big ones)."""
    return np.array([simulate(s, topology, gamma, False, protocol, policy).time_s
                     for s in schedules])
