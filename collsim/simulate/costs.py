"""What every transfer of a schedule costs on a topology under one protocol: the simulator's
durations.

For transfer i of ``b`` payload bytes on link class L (``collsim.simulate.resources.route``) under
protocol p (``Topology.costs``: ``collsim.machine.protocols``), ``wire`` = b / efficiency bytes:

- ``port[i]`` (s): its bytes' time on each port they cross at the port's full rate (wire x beta_L);
- ``alone[i]`` (s): its bytes' time at the rate one channel reaches by itself (wire x channel_beta;
  0: no limit): on a port it never moves faster than port[i] / alone[i] of the port's rate;
- ``compute[i]`` (s): the reduction after the bytes (b x gamma if it reduces);
- ``overhead[i]`` (s): the engine's fixed time after that (it overlaps the latency), and the
  receiver's when it takes the data in;
- ``latency[i]`` (s): from then to its arrival: the path's latency plus ``fill`` x alone[i] (the
  receiver takes the whole transfer in at its channel's rate before the next step can use it), plus
  ``Topology.sharp_us`` into the network's switch (``Schedule.network``: its reduction);
- ``proxy[i]`` (s): across nodes, the time it needs of its sender's and of its receiver's proxy
thread;
- ``window``: transfers in flight per connection (0: no limit);
- ``fabric[i, t]`` (s): across nodes, its bytes' time on an uplink (or downlink) port of fabric tier
  t at the port's full rate (port[i] x ``Tier.uplink_ratio``: the tier's oversubscription over the
  NICs under a switch); on it the transfer never moves faster than through its NIC
  (``fabric_share``).

Times in seconds, one entry per transfer in schedule order.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.schedule import REDUCE, Schedule
from collsim.errors import CollsimError
from collsim.machine.topology import Topology
from collsim.simulate.resources import Routes


@dataclass(frozen=True)
class Costs:
    """Per-transfer durations (module docstring): arrays of seconds, and the connection window."""

    port: np.ndarray
    alone: np.ndarray
    compute: np.ndarray
    overhead: np.ndarray
    latency: np.ndarray
    proxy: np.ndarray
    window: int
    fabric: np.ndarray | None = None

    @property
    def fabric_share(self) -> np.ndarray:
        """The most of a fabric port's rate each transfer takes: its rate through its NIC (port /
        max(port, alone)) over the fabric port's, at most 1."""
        limit = np.maximum(self.port, self.alone)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(limit > 0,
                            np.minimum(1.0, self.fabric / np.where(limit > 0, limit, 1.0)), 1.0)

    @property
    def share(self) -> np.ndarray:
        """The most of a port's rate each transfer takes (port / alone, at most 1)."""
        return port_share(self.port, self.alone)


def port_share(size: np.ndarray, alone: np.ndarray) -> np.ndarray:
    """The most of a port's rate transfers take that need ``size`` seconds of it and move at most
    one channel's rate (``alone`` seconds for all their bytes): size / alone, at most 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(alone > size, size / np.where(alone > 0, alone, 1.0), 1.0)


def transfer_costs(schedule: Schedule, topology: Topology, routes: Routes, gamma: float = 0.0,
                   protocol: str | None = None) -> Costs:
    """The durations of every transfer of ``schedule`` on ``topology`` under ``protocol`` (None: the
    links' own Hockney costs) with ``gamma`` seconds per reduced byte."""
    if not (gamma >= 0 and np.isfinite(gamma)):
        raise CollsimError(f"gamma must be a finite number >= 0 (seconds per byte), got {gamma!r}")
    p = topology.costs(protocol)
    s = schedule
    nb = (s.length * s.itemsize).astype(np.float64)
    wire = nb / p.efficiency
    links = [topology.intra, topology.inter, topology.nvls or topology.intra]
    paths = [p.path(k) for k in range(3)]
    port = wire * np.array([link.beta for link in links])[routes.link]
    alone = wire * np.array([c.channel_beta for c in paths])[routes.link]
    compute = nb * gamma * (s.op == REDUCE) if gamma else np.zeros(s.n_transfers)
    overhead = np.array([c.overhead for c in paths])[routes.link]
    # a transfer of several pipelined steps: the receiver's fill is its last step's
    step = np.array([c.fill_bytes for c in paths])[routes.link]
    filled = np.where((step > 0) & (nb > step), step / np.where(nb > 0, nb, 1.0), 1.0)
    latency = (np.array([c.latency for c in paths])[routes.link]
               + np.array([c.fill for c in paths])[routes.link] * alone * filled)
    proxy = np.where(routes.link == 1, p.inter.proxy, 0.0)
    # the network's switch reduces, then the sum is ready
    if s.network and topology.sharp_us:
        latency = latency + np.where(s.dst == s.network_endpoint, topology.sharp_us * 1e-6, 0.0)
    ratios = np.array([t.uplink_ratio(topology.nics_per_node) for t in topology.fabric])
    return Costs(port, alone, compute, overhead=overhead, latency=latency, proxy=proxy,
                 window=p.window, fabric=port[:, None] * ratios[None, :])
