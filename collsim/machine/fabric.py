"""The switches above the NICs: a cluster's ``fabric`` key (``Fabric``) and the simulator's view of
it (``Tier``).

Cluster key (optional; absent: a non-blocking fabric, only the NICs limit, as before)::

    fabric:
      nodes_per_leaf: 32        # nodes under one leaf switch (per rail when rail_optimized): a leaf
                                #   group
      rail_optimized: true      # NIC k of every node of a group on the group's leaf k (rail k, the
                                #   DGX SuperPOD layout; the default); false: one leaf (top of rack)
                                #   takes all of its nodes' NICs
      oversubscription: 1       # a leaf's downlink / uplink capacity (1: non-blocking; 2: 2:1)
      nodes_per_pod: 256        # optional third tier: leaf groups joined by one pod's spines (a
                                #   multiple of nodes_per_leaf); absent: the spines join every leaf
                                #   (two tiers)
      pod_oversubscription: 1   # a pod's downlink / uplink capacity to the core

What the simulation makes of it (``collsim.simulate.resources``): a transfer between NICs under
different leaves (another leaf group, or in a rail-optimised fabric another rail) crosses its leaf's
uplinks and the other leaf's downlinks; between pods also both pods' uplinks. A leaf's uplinks are
one port each way whose rate is the leaf's downlink capacity (its NICs' rate, as the simulation
moves them) over its oversubscription; a pod's, its leaves' uplink capacity over
``pod_oversubscription``. Every flow is spread over all uplinks (InfiniBand's adaptive routing; hash
collisions of static ECMP are not modelled); the tier above the last (spine or core) switches
without limit, as a fat tree's does. A leaf's uplinks are those of a full group, also where the last
group is not. A tier that oversubscribes nothing (1:1, and 1:1 below it) adds no port: whatever the
NICs send it carries, and the NICs already bound that. Each fabric port shares its rate on its own,
as the NICs' ports do (``collsim.simulate.fair``): a transfer slowed at its NIC still takes an equal
share of an uplink.

``SUPERPOD``: NVIDIA's DGX SuperPOD reference architecture (DGX H100, RA-11333-001: scalable units
of 32 DGX H100, a leaf switch per rail, one rail per NIC; DGX B200 RA, "Larger DGX SuperPOD
component counts": as many leaf-spine as node-leaf cables, 1:1, and as many spine-core cables from
16 scalable units on: non-blocking).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from collsim.errors import CollsimError, require_int, require_number

MAX_NODES = 1 << 16
MAX_OVERSUBSCRIPTION = 64.0    # one uplink port for 64 NIC ports: more is no fabric anyone builds
KEYS = ("nodes_per_leaf", "rail_optimized", "oversubscription", "nodes_per_pod",
        "pod_oversubscription")
SUPERPOD_SOURCE = ("NVIDIA DGX SuperPOD reference architecture (DGX H100, RA-11333-001: scalable "
                   "units of 32 nodes, a leaf switch per rail; DGX B200 RA table 'Larger DGX "
                   "SuperPOD component counts': as many leaf-spine as node-leaf cables, 1:1)")


@dataclass(frozen=True)
class Fabric:
    """Leaf groups of ``nodes_per_leaf`` nodes (one leaf per rail where ``rail_optimized``), their
    uplinks ``oversubscription``:1, and optionally pods of ``nodes_per_pod`` nodes whose uplinks are
    ``pod_oversubscription``:1 (module docstring)."""

    nodes_per_leaf: int
    rail_optimized: bool = True
    oversubscription: float = 1.0
    nodes_per_pod: int | None = None
    pod_oversubscription: float = 1.0
    rails: int = 0              # not a key: rails per node where not one per NIC (``seen_as``)

    def __post_init__(self):
        set_ = object.__setattr__
        require_int("cluster fabric nodes_per_leaf", self.nodes_per_leaf, 1, MAX_NODES)
        if not isinstance(self.rail_optimized, bool):
            raise CollsimError("cluster fabric rail_optimized must be true or false, got "
                               f"{self.rail_optimized!r:.40}")
        for key in ("oversubscription", "pod_oversubscription"):
            set_(self, key, require_number(f"cluster fabric {key}", getattr(self, key), 1.0, False,
                                           MAX_OVERSUBSCRIPTION))
        if self.nodes_per_pod is not None:
            require_int("cluster fabric nodes_per_pod", self.nodes_per_pod, 1, MAX_NODES)
            if (self.nodes_per_pod % self.nodes_per_leaf
                    or self.nodes_per_pod == self.nodes_per_leaf):
                raise CollsimError(f"cluster fabric nodes_per_pod ({self.nodes_per_pod}) must be a "
                                   f"multiple of nodes_per_leaf ({self.nodes_per_leaf}) larger "
                                   "than it: a pod joins leaf groups")
        elif self.pod_oversubscription != 1:
            raise CollsimError("cluster fabric pod_oversubscription needs nodes_per_pod (the pods "
                               "it describes)")

    @classmethod
    def from_dict(cls, d) -> "Fabric":
        """A fabric from the cluster file's mapping (module docstring); unknown keys are refused."""
        if isinstance(d, Fabric):
            return d
        if not isinstance(d, dict):
            raise CollsimError("cluster fabric must be a mapping (nodes_per_leaf, rail_optimized, "
                               "oversubscription, nodes_per_pod, pod_oversubscription)")
        for key in d:
            if key not in KEYS:
                close = difflib.get_close_matches(str(key), KEYS, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}?" if close else "known: " + ", ".join(KEYS)
                raise CollsimError(f"cluster fabric: unknown key {str(key)!r:.40} ({hint})")
        if "nodes_per_leaf" not in d:
            raise CollsimError("cluster fabric needs nodes_per_leaf (the nodes under one leaf "
                               "switch)")
        return cls(**d)

    def to_dict(self) -> dict:
        d = {"nodes_per_leaf": self.nodes_per_leaf, "rail_optimized": self.rail_optimized,
             "oversubscription": self.oversubscription}
        if self.nodes_per_pod is not None:
            d.update(nodes_per_pod=self.nodes_per_pod,
                     pod_oversubscription=self.pod_oversubscription)
        return d

    def describe(self) -> str:
        """A few words: leaf groups, rails, oversubscription per tier."""
        text = (f"{'rail-optimised ' if self.rail_optimized else ''}leaves of "
                f"{self.nodes_per_leaf} nodes {self.oversubscription:g}:1")
        if self.nodes_per_pod is not None:
            text += f", pods of {self.nodes_per_pod} nodes {self.pod_oversubscription:g}:1"
        return text

    def seen_as(self, hosts_per_node: int, rails: int) -> "Fabric":
        """The fabric of nodes of ``hosts_per_node`` hosts with ``rails`` NICs each (NCCL sees an
        NVLink domain as one node: ``Cluster.nccl_view``)."""
        if hosts_per_node == 1:
            return self
        for key in ("nodes_per_leaf", "nodes_per_pod"):
            n = getattr(self, key)
            if n is not None and n % hosts_per_node:
                raise CollsimError(f"cluster fabric {key} ({n}) must be a multiple of the hosts of "
                                   f"one NVLink domain ({hosts_per_node}): NCCL sees a domain as "
                                   "one node")
        pod = None if self.nodes_per_pod is None else self.nodes_per_pod // hosts_per_node
        return Fabric(self.nodes_per_leaf // hosts_per_node, self.rail_optimized,
                      self.oversubscription, pod, self.pod_oversubscription, rails)

    def tiers(self, nics_per_node: int) -> tuple["Tier", ...]:
        """The simulator's tiers for nodes of ``nics_per_node`` NICs (a rail per NIC, or ``rails``,
        when rail-optimised); a tier that oversubscribes nothing (1:1 up to it) adds no port (module
        docstring)."""
        planes = (self.rails or nics_per_node) if self.rail_optimized else 1
        out = [Tier(self.nodes_per_leaf, max(planes, 1), self.oversubscription, "leaf")]
        if self.nodes_per_pod is not None:
            out.append(Tier(self.nodes_per_pod, 1,
                            self.oversubscription * self.pod_oversubscription, "pod"))
        return tuple(t for t in out if t.oversubscription > 1)


@dataclass(frozen=True)
class Tier:
    """One tier of switches as the simulator sees it: groups of ``nodes`` nodes, ``planes`` switches
    per group (NIC v of a node on plane v mod planes: rails), each switch's uplinks one port each
    way moving its NICs' rate over ``oversubscription`` (the product of the tiers' up to this one).
    ``name`` names its ports."""

    nodes: int
    planes: int = 1
    oversubscription: float = 1.0
    name: str = "leaf"

    def __post_init__(self):
        require_int("fabric tier nodes", self.nodes, 1, MAX_NODES)
        require_int("fabric tier planes", self.planes, 1, MAX_NODES)
        # (the product of the tiers', and a quotient's merged NICs)
        object.__setattr__(self, "oversubscription",
                           require_number("fabric tier oversubscription", self.oversubscription,
                                          1.0, False, 1e9))

    def uplink_ratio(self, nics_per_node: int) -> float:
        """An uplink port's time per byte over a NIC's: oversubscription / (the NICs under one
        switch)."""
        return self.oversubscription * self.planes / (self.nodes * nics_per_node)

    def port_name(self, group, plane, up: bool, merged: bool = False) -> str:
        rail = "" if self.planes == 1 else f".rail{'*' if merged else plane}"
        return f"{self.name}{group}{rail}.{'up' if up else 'down'}"


def check_tiers(tiers, nics_per_node: int, where: str = "topology") -> tuple[Tier, ...]:
    """``tiers`` (Tier or mappings of its fields) checked against the NICs: planes divide the NICs,
    each tier's groups hold whole groups of the one below, its planes divide that one's."""
    out = tuple(t if isinstance(t, Tier) else _tier(t, where) for t in tiers)
    if len({t.name for t in out}) < len(out):
        raise CollsimError(f"{where}: fabric tiers need names of their own (they name their ports)")
    for i, t in enumerate(out):
        if nics_per_node % t.planes:
            raise CollsimError(f"{where}: fabric tier {i} has {t.planes} planes, which do not "
                               f"divide the {nics_per_node} NICs of a node")
        if i and (t.nodes % out[i - 1].nodes or out[i - 1].planes % t.planes):
            raise CollsimError(f"{where}: fabric tier {i} must join whole groups of tier {i - 1} "
                               "(nodes a multiple, planes a divisor of its)")
    return out


def _tier(d, where: str) -> Tier:
    fields = ("nodes", "planes", "oversubscription", "name")
    if not isinstance(d, dict) or set(d) - set(fields) or "nodes" not in d:
        raise CollsimError(f"{where}: a fabric tier is a mapping with nodes and optionally planes, "
                           f"oversubscription, name; got {str(d)[:60]!r}")
    if not isinstance(d.get("name", "leaf"), str) or not str(d.get("name", "leaf")).isalpha():
        raise CollsimError(f"{where}: a fabric tier's name must be letters only, got "
                           f"{str(d.get('name'))[:40]!r}")
    return Tier(**d)


def tier_dict(t: Tier) -> dict:
    return {"nodes": t.nodes, "planes": t.planes, "oversubscription": t.oversubscription,
            "name": t.name}


def check_slow_nics(items, nics: int, where: str = "topology") -> tuple:
    """``items`` ([global NIC, factor] pairs) as sorted (int, float) tuples, each NIC of the
    ``nics`` once and factor >= 1 (a slow NIC of a topology: ``Topology.slow_nics``), or one-line
    CollsimError."""
    out = {}
    for x in items if isinstance(items, (list, tuple)) else [items]:
        if not isinstance(x, (list, tuple)) or len(x) != 2:
            raise CollsimError(f"{where}: slow_nics holds [NIC, factor] pairs, got {str(x)[:40]!r}")
        nic = require_int(f"{where}: slow NIC", x[0], 0, max(nics - 1, 0))
        if nic in out:
            raise CollsimError(f"{where}: slow NIC {nic} is listed twice")
        out[nic] = require_number(f"{where}: slow NIC {nic}'s factor", x[1], 1.0, False, 1e6)
    return tuple(sorted(out.items()))
