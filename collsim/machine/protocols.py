"""What one transfer costs on a machine under one of NCCL's protocols: the simulator's view of LL,
LL128 and Simple (``collsim.simulate``; the numbers for a described cluster come from
``collsim.machine.cluster``).

A transfer of ``b`` payload bytes on a link class (intra-node, inter-node, NVLS) under protocol
``p``:

- puts ``b / efficiency`` bytes on the wire (LL: 8 B of data in 16 B lines, 1/2; LL128: 120 B in 128
  B lines, 15/16; Simple: raw data, 1; NVIDIA/nccl src/device/prims_ll.h, prims_ll128.h,
  prims_simple.h);
- occupies its channel's engine (the sender's thread block) for its wire bytes at the rate of the
  link's port and at most ``1 / channel_beta`` bytes/s (what one channel moves by itself), then for
  ``overhead`` seconds (the step's fixed cost: flags, fences, barriers), which overlaps its latency;
  its receiver pays it again when it takes the data in (what the run's last transfer adds to the
  end);
- arrives ``latency`` seconds after that (NCCL's per-hop latency), plus ``fill`` times its bytes'
  time at the channel's rate (the receiver takes a whole slice in before its next step reads it;
  of a transfer that stands for several of NCCL's steps, pipelined, only the last step's
  ``fill_bytes``: NCCL's p2p sends): latency delays the arrival, it does not hold the channel;
- across nodes, needs ``proxy`` seconds of its sender's and of its receiver's proxy thread (NCCL's
  proxy posts every network send and receive of all of a GPU's channels, src/proxy.cc progressOps: a
  queue of its own, shared fairly like a port);
- may have at most ``window`` transfers in flight on one connection (NCCL_STEPS slots of the
  receiver's buffer, ``window`` = NCCL_STEPS / slots per transfer): it starts only after the
  transfer ``window`` places before it on the same connection (sender, receiver, channel) has
  arrived.

``generic(link)`` is the protocol-free cost of a Hockney link (latency alpha, no overhead, no
per-channel cap, efficiency 1, no window): what ``--alpha/--beta`` topologies and schedules without
a protocol use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from collsim.errors import CollsimError

PROTOCOLS = ("LL", "LL128", "Simple")
NO_WINDOW = 0


@dataclass(frozen=True)
class PathCosts:
    """One protocol on one link class: latency, overhead and proxy in seconds, channel_beta in
    seconds per wire byte (0: no per-channel limit), fill a share of a transfer's time at the
    channel's rate (dimensionless), of at most its first ``fill_bytes`` payload bytes (0: all)."""

    latency: float
    overhead: float = 0.0
    channel_beta: float = 0.0
    proxy: float = 0.0
    fill: float = 0.0
    fill_bytes: float = 0.0

    def __post_init__(self):
        for name in ("latency", "overhead", "channel_beta", "proxy", "fill", "fill_bytes"):
            v = getattr(self, name)
            if (not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v)
                    or v < 0):
                raise CollsimError(f"path cost {name} must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True)
class ProtocolCosts:
    """One protocol on a machine: payload share of the wire, transfers in flight per connection (0:
    no limit) and the costs on each link class (``nvls`` None where the machine has no NVLink
    SHARP)."""

    name: str
    efficiency: float
    window: int
    intra: PathCosts
    inter: PathCosts
    nvls: PathCosts | None = None

    def __post_init__(self):
        if not 0 < self.efficiency <= 1:
            raise CollsimError(f"protocol {self.name}: efficiency must be in (0, 1], got "
                               f"{self.efficiency!r}")
        if not isinstance(self.window, int) or self.window < 0:
            raise CollsimError(f"protocol {self.name}: window must be an integer >= 0, got "
                               f"{self.window!r}")

    def path(self, link_class: int) -> PathCosts:
        """Costs of link class 0 (intra), 1 (inter) or 2 (NVLS)."""
        return (self.intra, self.inter, self.nvls or self.intra)[link_class]


def generic(intra_alpha: float, inter_alpha: float,
            nvls_alpha: float | None = None) -> ProtocolCosts:
    """The protocol-free costs of Hockney links with these alphas (seconds)."""
    return ProtocolCosts("generic", 1.0, NO_WINDOW, PathCosts(intra_alpha), PathCosts(inter_alpha),
                         None if nvls_alpha is None else PathCosts(nvls_alpha))
