"""What every transfer of a schedule costs on a topology under one protocol: the simulator's durations.

For transfer i of ``b`` payload bytes on link class L (``collsim.simulate.resources.route``) under protocol p
(``Topology.costs``: ``collsim.machine.protocols``):

- ``overhead[i]`` (s): the engine's fixed time after the bytes (it overlaps the latency);
- ``work[i]`` (s): the engine's time for the bytes, max(wire x beta_L, wire x channel_beta) + b x gamma if it
  reduces (``wire`` = b / efficiency): the port's rate, at most the rate one channel reaches;
- ``port[i]`` (s): how long the bytes hold each port they cross (wire x beta_L);
- ``latency[i]`` (s): from its last byte sent to its arrival;
- ``window``: transfers in flight per connection (0: no limit).

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

    overhead: np.ndarray
    work: np.ndarray
    port: np.ndarray
    latency: np.ndarray
    window: int


def transfer_costs(schedule: Schedule, topology: Topology, routes: Routes, gamma: float = 0.0,
                   protocol: str | None = None) -> Costs:
    """The durations of every transfer of ``schedule`` on ``topology`` under ``protocol`` (None: the links'
    own Hockney costs) with ``gamma`` seconds per reduced byte."""
    if not (gamma >= 0 and np.isfinite(gamma)):
        raise CollsimError(f"gamma must be a finite number >= 0 (seconds per byte), got {gamma!r}")
    p = topology.costs(protocol)
    s = schedule
    nb = (s.length * s.itemsize).astype(np.float64)
    wire = nb / p.efficiency
    links = [topology.intra, topology.inter, topology.nvls or topology.intra]
    paths = [p.path(k) for k in range(3)]
    beta = np.array([link.beta for link in links])[routes.link]
    port = wire * beta
    cap = np.array([c.channel_beta for c in paths])[routes.link]
    work = np.maximum(port, wire * cap)
    if gamma:
        work = work + nb * gamma * (s.op == REDUCE)
    overhead = np.array([c.overhead for c in paths])[routes.link]
    latency = np.array([c.latency for c in paths])[routes.link]
    return Costs(overhead, work, port, latency, p.window)
