"""Machines as the simulator sees them: nodes of GPUs, three link classes, NICs.

A ``Topology`` has ``nodes`` nodes of ``gpus_per_node`` GPUs each. Rank ``r``
lives on node ``r // gpus_per_node`` at local index ``r % gpus_per_node``.
A transfer between two GPUs of one node uses the ``intra`` link, one between
nodes the ``inter`` link and, on both sides, a NIC: local GPU ``g`` uses NIC
``g x nics_per_node // gpus_per_node`` of its node (one NIC per GPU: rail g is
NIC g; as ``collsim.machine.cluster.Cluster.nic_of_local``). A transfer between
a GPU and its node's NVSwitch (a switch endpoint of the schedule) uses the
``nvls`` link (NVLink SHARP); ``nvls`` None means the machine has none. Every
link follows the Hockney model: a message of b bytes takes ``alpha + b * beta``
seconds (``Link.alpha`` in seconds, ``Link.beta`` in seconds per byte). Ports
are full duplex: a GPU sends and receives at once (see ``collsim.simulate`` for
contention). ``links_per_pair`` > 0 describes a board whose GPUs are linked
directly (no NVSwitch): each ordered GPU pair has its own link of that many
NVLinks (the ``intra`` link's bandwidth) instead of one port per GPU.
``call_us`` is a fixed cost of every collective call on the machine (kernel
launch and setup), added to every simulated time; 0 for a uniform topology.
``sharp_us``: the network's switches reduce (SHARP, the schedule's network
endpoint, reached over each GPU's NIC) and add this latency to every reduction
into them; None: they do not (0 for a uniform topology).
``fabric``: the tiers of switches above the NICs (``collsim.machine.fabric.Tier``:
leaf groups, rails, oversubscription; empty: non-blocking, only the NICs limit).
``slow_nics``: (global NIC, factor) of NICs whose ports take ``factor`` times the
``inter`` link's time (degraded NICs; empty: every NIC alike).

Topology file (JSON or YAML, chosen by the extension .json, .yaml or .yml)::

    name: my-cluster            # optional, free text
    source: "where the figures come from"   # optional, free text
    nodes: 4                    # int >= 1
    gpus_per_node: 8            # int >= 1
    nics_per_node: 1            # optional, 1 <= int <= gpus_per_node (default 1)
    intra:                      # link between GPUs of one node, either form:
      bandwidth_GBps: 360       #   GB/s = 1e9 bytes/s, > 0
      latency_us: 2.0           #   microseconds, >= 0
    inter:                      # link between nodes; required when nodes > 1
      alpha_s: 8.0e-6           #   or: seconds, >= 0
      beta_s_per_byte: 2.17e-11 #   and seconds per byte, > 0
    nvls:                       # optional: GPU <-> NVSwitch link of NVLink SHARP (either form)
      bandwidth_GBps: 313
      latency_us: 2.0
    links_per_pair: 0           # optional: > 0 for GPUs linked directly (NVLinks per pair)
    call_us: 0                  # optional: fixed cost per collective call, microseconds >= 0
    sharp_us: 2.83              # optional: the switches reduce (SHARP), adding this latency,
                                #   microseconds
    fabric:                     # optional: tiers of switches above the NICs, lowest first
      - {nodes: 32, planes: 8, oversubscription: 2, name: leaf}   # planes: rails (divide the NICs)
    slow_nics: [[26, 2.0]]      # optional: [global NIC, factor >= 1]: NICs taking factor x inter's
                                #   time

Unknown keys are errors (they are usually typos). Counts are at most
``collsim.inputs.MAX_RANKS``; latencies at most ``MAX_SECONDS`` (3.6e9 us), seconds
per byte at most ``MAX_SECONDS_PER_BYTE`` (bandwidth at least 1e-9 GB/s). YAML is
read with PyYAML's safe loader (no tags run code) without aliases (``*name``: a few
nested ones expand to gigabytes). ``Topology.to_dict`` writes this format (links as
alpha_s / beta_s_per_byte), so ``load_topology`` reads back what it writes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_RANKS, MAX_SECONDS, parse_json, parse_yaml, read_text
from collsim.machine.fabric import check_slow_nics, check_tiers, tier_dict
from collsim.machine.links import Link, link_from_dict
from collsim.machine.protocols import ProtocolCosts, generic


@dataclass(frozen=True)
class Topology:
    """``nodes`` x ``gpus_per_node`` GPUs; ``intra``/``inter``/``nvls`` links; NICs per node;
    ``links_per_pair`` (0: GPUs behind a switch); ``call_us`` per collective call (microseconds);
    ``protocols``: what a transfer costs under each of NCCL's protocols on this machine
    (``collsim.machine.protocols``; empty: only the protocol-free Hockney costs of the links);
    ``fabric``: the switch tiers above the NICs (``collsim.machine.fabric.Tier``; empty:
    non-blocking)."""

    nodes: int
    gpus_per_node: int
    intra: Link
    inter: Link
    nics_per_node: int = 1
    name: str = ""
    source: str = ""
    nvls: Link | None = None
    call_us: float = 0.0
    links_per_pair: int = 0
    protocols: tuple = ()
    sharp_us: float | None = None
    fabric: tuple = ()
    slow_nics: tuple = ()

    def __post_init__(self):
        for field in ("nodes", "gpus_per_node", "nics_per_node"):
            v = getattr(self, field)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise CollsimError(f"topology {field} must be an integer >= 1, got {v!r}")
        if self.nics_per_node > self.gpus_per_node:
            raise CollsimError(f"topology nics_per_node ({self.nics_per_node}) must not exceed "
                               f"gpus_per_node ({self.gpus_per_node})")
        v = self.links_per_pair
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise CollsimError(f"topology links_per_pair must be an integer >= 0, got {v!r}")
        if not isinstance(self.call_us, (int, float)) or isinstance(self.call_us, bool) \
                or not math.isfinite(self.call_us) or self.call_us < 0:
            raise CollsimError("topology call_us must be a finite number >= 0, got "
                               f"{self.call_us!r}")
        if (self.sharp_us is not None
                and not (isinstance(self.sharp_us, (int, float)) and 0 <= self.sharp_us < 1e9)):
            raise CollsimError("topology sharp_us must be a finite number >= 0 or None, got "
                               f"{self.sharp_us!r}")
        if self.nvls is not None and self.links_per_pair:
            raise CollsimError("topology: an nvls link needs an NVSwitch, but links_per_pair says "
                               "the GPUs are linked directly")
        object.__setattr__(self, "fabric", check_tiers(self.fabric, self.nics_per_node))
        object.__setattr__(self, "slow_nics",
                           check_slow_nics(self.slow_nics, self.nodes * self.nics_per_node))

    @classmethod
    def uniform(cls, ranks: int, alpha: float, beta: float) -> "Topology":
        """One node of ``ranks`` GPUs, every pair linked by ``Link(alpha, beta)``, and each GPU to
        the node's switch by the same link (``nvls``), to the network's switch too (``sharp_us`` 0);
        no per-call cost."""
        link = Link(alpha, beta)
        return cls(1, int(ranks), link, link, 1, name=f"uniform-{ranks}",
                   source="uniform alpha-beta topology", nvls=link, sharp_us=0.0)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    def node_of(self, rank):           # node index of ``rank`` (int or numpy array)
        return rank // self.gpus_per_node

    def local_of(self, rank):          # index of ``rank`` inside its node (int or numpy array)
        return rank % self.gpus_per_node

    def nic_of(self, rank):
        """Global NIC index of ``rank``: node x nics_per_node + local x nics_per_node //
        gpus_per_node."""
        return (self.node_of(rank) * self.nics_per_node + self.local_of(rank) * self.nics_per_node
                // self.gpus_per_node)

    def costs(self, protocol: str | None = None) -> ProtocolCosts:
        """The transfer costs under ``protocol`` (None: the links' own Hockney costs); one-line
        CollsimError for a protocol this machine does not describe."""
        if protocol is None:
            return generic(self.intra.alpha, self.inter.alpha,
                           None if self.nvls is None else self.nvls.alpha)
        for p in self.protocols:
            if p.name == protocol:
                return p
        raise CollsimError(f"topology {self.name or ''} describes no costs for protocol "
                           f"{protocol!r} (it has: "
                           f"{', '.join(p.name for p in self.protocols) or 'none'})")

    def to_dict(self) -> dict:
        d = {"name": self.name, "source": self.source, "nodes": self.nodes,
             "gpus_per_node": self.gpus_per_node, "nics_per_node": self.nics_per_node,
             "intra": self.intra.to_dict(), "inter": self.inter.to_dict()}
        extra = {"nvls": self.nvls and self.nvls.to_dict(), "links_per_pair": self.links_per_pair,
                 "call_us": self.call_us, "fabric": [tier_dict(t) for t in self.fabric],
                 "slow_nics": [list(x) for x in self.slow_nics]}
        d = {**d, **{k: v for k, v in extra.items() if v}}
        if self.sharp_us is not None:
            d["sharp_us"] = self.sharp_us
        return d

    def describe(self) -> str:
        """One line: shape and links in GB/s and microseconds."""
        text = (f"{self.name or 'topology'}: {self.nodes} node(s) x {self.gpus_per_node} GPU(s), "
                f"intra {self.intra.bandwidth_GBps:.4g} GB/s {self.intra.latency_us:.3g} us")
        if self.nodes > 1:
            text += (f", inter {self.inter.bandwidth_GBps:.4g} GB/s {self.inter.latency_us:.3g} "
                     f"us, {self.nics_per_node} NIC(s)/node")
        if self.links_per_pair:
            text += f", direct links ({self.links_per_pair} NVLinks a pair)"
        if self.nvls is not None:
            text += f", NVLS {self.nvls.bandwidth_GBps:.4g} GB/s"
        if self.call_us:
            text += f", {self.call_us:.3g} us per call"
        if self.sharp_us is not None:
            text += f", SHARP {self.sharp_us:.3g} us"
        rails = lambda t: f" x {t.planes} rails" if t.planes > 1 else ""   # noqa: E731
        return text + "".join(f", {t.name} groups of {t.nodes} nodes{rails(t)} "
                              f"{t.oversubscription:g}:1"
                              for t in self.fabric)

    @classmethod
    def from_dict(cls, d, where: str = "topology") -> "Topology":
        """Build from the file format above; errors name ``where`` and the field."""
        if not isinstance(d, dict):
            raise CollsimError(f"{where}: expected a mapping with nodes, gpus_per_node, intra, "
                               "inter")
        known = {"name", "source", "nodes", "gpus_per_node", "nics_per_node", "intra",
                 "inter", "nvls", "links_per_pair", "call_us", "sharp_us", "fabric", "slow_nics"}
        for key in d:
            if key not in known:
                raise CollsimError(f"{where}: unknown field {key!r} (known: "
                                   f"{', '.join(sorted(known))})")
        ints = {}
        for key, default, low in (("nodes", None, 1), ("gpus_per_node", None, 1),
                                  ("nics_per_node", 1, 1), ("links_per_pair", 0, 0)):
            v = d.get(key, default)
            if v is None:
                raise CollsimError(f"{where}: missing field {key!r}")
            if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= MAX_RANKS:
                raise CollsimError(f"{where}: field {key!r} must be an integer from {low} to "
                                   f"{MAX_RANKS}, got {describe(v)}")
            ints[key] = v
        for key in ("call_us", "sharp_us"):
            v = d.get(key, 0.0)
            if (not isinstance(v, (int, float)) or isinstance(v, bool)
                    or not 0 <= v <= MAX_SECONDS * 1e6):
                raise CollsimError(f"{where}: field {key!r} must be a number from 0 to "
                                   f"{MAX_SECONDS * 1e6:g}, got {describe(v)}")
        call, sharp = d.get("call_us", 0.0), d.get("sharp_us")
        for key in ("name", "source"):
            if not isinstance(d.get(key, ""), str):
                raise CollsimError(f"{where}: field {key!r} must be a string, got "
                                   f"{describe(d[key])}")
        if "intra" not in d:
            raise CollsimError(f"{where}: missing field 'intra'")
        intra = link_from_dict(d["intra"], f"{where}: field 'intra'")
        if "inter" in d:
            inter = link_from_dict(d["inter"], f"{where}: field 'inter'")
        elif ints["nodes"] == 1:
            inter = intra
        else:
            raise CollsimError(f"{where}: missing field 'inter' (needed when nodes > 1)")
        if ints["nics_per_node"] > ints["gpus_per_node"]:
            raise CollsimError(f"{where}: field 'nics_per_node' ({ints['nics_per_node']}) must not "
                               f"exceed gpus_per_node ({ints['gpus_per_node']})")
        nvls = (link_from_dict(d["nvls"], f"{where}: field 'nvls'") if d.get("nvls") is not None
                else None)
        if nvls is not None and ints["links_per_pair"]:
            raise CollsimError(f"{where}: field 'nvls' needs an NVSwitch, but links_per_pair says "
                               "the GPUs are linked directly")
        if not isinstance(d.get("fabric", []), list):
            raise CollsimError(f"{where}: field 'fabric' must be a list of tiers (nodes, planes, "
                               "oversubscription)")
        fabric = check_tiers(d.get("fabric", []), ints["nics_per_node"], where)
        slow = check_slow_nics(d.get("slow_nics", []), ints["nodes"] * ints["nics_per_node"], where)
        return cls(nodes=ints["nodes"], gpus_per_node=ints["gpus_per_node"], intra=intra,
                   inter=inter, nics_per_node=ints["nics_per_node"],
                   name=d.get("name", ""), source=d.get("source", ""), nvls=nvls,
                   call_us=float(call), links_per_pair=ints["links_per_pair"],
                   sharp_us=None if sharp is None else float(sharp),
                   fabric=fabric, slow_nics=slow)


def read_spec_file(path, what: str):
    """The value in a JSON or YAML file (by extension: .json, .yaml, .yml), read through
    ``collsim.inputs`` (UTF-8 text of bounded size, JSON of bounded depth, YAML by the safe loader
    without aliases), or a one-line CollsimError naming ``what`` and the file: no such file,
    unreadable, bad extension, invalid."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise CollsimError(f"{what} file {p}: unknown extension {p.suffix!r} (use .json, .yaml or "
                           ".yml)")
    text = read_text(p, f"{what} file")
    return (parse_json if suffix == ".json" else parse_yaml)(text, f"{what} file {p}")


def load_topology(path) -> Topology:
    """Read a topology file (format in the module docstring; without ``name`` it is named after the
    file); bad files raise ``CollsimError``."""
    p = Path(path)
    topo = Topology.from_dict(read_spec_file(p, "topology"), where=f"topology file {p}")
    # an unnamed file is named after itself
    return topo if topo.name else replace(topo, name=p.stem)
