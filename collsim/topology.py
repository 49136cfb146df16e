"""Machines as the simulator sees them: nodes of GPUs, two link classes, NICs.

A ``Topology`` has ``nodes`` nodes of ``gpus_per_node`` GPUs each. Rank ``r``
lives on node ``r // gpus_per_node`` at local index ``r % gpus_per_node``.
A transfer between two GPUs of one node uses the ``intra`` link, one between
nodes the ``inter`` link and, on both sides, a NIC: local GPU ``g`` uses NIC
``g % nics_per_node`` of its node. Every link follows the Hockney model: a
message of b bytes takes ``alpha + b * beta`` seconds (``Link.alpha`` in
seconds, ``Link.beta`` in seconds per byte). Ports are full duplex: a GPU
sends and receives at once (see ``collsim.simulate`` for contention).

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

Unknown keys are errors (they are usually typos). ``Topology.to_dict`` writes
this format (links as alpha_s / beta_s_per_byte), so ``load_topology`` reads
back what it writes.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from collsim.errors import CollsimError


@dataclass(frozen=True)
class Link:
    """A Hockney link: ``alpha`` seconds per message plus ``beta`` seconds per byte."""

    alpha: float
    beta: float

    def __post_init__(self):
        for name, v, lo in (("alpha", self.alpha, 0.0), ("beta", self.beta, None)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0 \
                    or (lo is None and v == 0):
                raise CollsimError(f"link {name} must be a finite number {'>= 0' if lo == 0 else '> 0'}, got {v!r}")

    @classmethod
    def from_GBps(cls, bandwidth_GBps: float, latency_us: float) -> "Link":
        """A link of ``bandwidth_GBps`` (1e9 bytes/s) and ``latency_us`` (microseconds)."""
        if not bandwidth_GBps > 0:
            raise CollsimError(f"link bandwidth must be > 0 GB/s, got {bandwidth_GBps!r}")
        return cls(float(latency_us) * 1e-6, 1.0 / (float(bandwidth_GBps) * 1e9))

    @property
    def bandwidth_GBps(self) -> float:
        return 1.0 / self.beta / 1e9

    @property
    def latency_us(self) -> float:
        return self.alpha * 1e6

    def time(self, nbytes) -> float:
        """Seconds to send ``nbytes`` bytes."""
        return self.alpha + nbytes * self.beta

    def to_dict(self) -> dict:
        return {"alpha_s": self.alpha, "beta_s_per_byte": self.beta}


@dataclass(frozen=True)
class Topology:
    """``nodes`` x ``gpus_per_node`` GPUs; ``intra``/``inter`` links; NICs per node."""

    nodes: int
    gpus_per_node: int
    intra: Link
    inter: Link
    nics_per_node: int = 1
    name: str = ""
    source: str = ""

    def __post_init__(self):
        for field in ("nodes", "gpus_per_node", "nics_per_node"):
            v = getattr(self, field)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise CollsimError(f"topology {field} must be an integer >= 1, got {v!r}")
        if self.nics_per_node > self.gpus_per_node:
            raise CollsimError(f"topology nics_per_node ({self.nics_per_node}) must not exceed "
                               f"gpus_per_node ({self.gpus_per_node})")

    @classmethod
    def uniform(cls, ranks: int, alpha: float, beta: float) -> "Topology":
        """One node of ``ranks`` GPUs, every pair linked by ``Link(alpha, beta)``."""
        link = Link(alpha, beta)
        return cls(1, int(ranks), link, link, 1, name=f"uniform-{ranks}",
                   source="uniform alpha-beta topology")

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    def node_of(self, rank):
        """Node index of ``rank`` (int or numpy array)."""
        return rank // self.gpus_per_node

    def local_of(self, rank):
        """Index of ``rank`` inside its node (int or numpy array)."""
        return rank % self.gpus_per_node

    def nic_of(self, rank):
        """Global NIC index (node * nics_per_node + local % nics_per_node) of ``rank``."""
        return self.node_of(rank) * self.nics_per_node + self.local_of(rank) % self.nics_per_node

    def to_dict(self) -> dict:
        return {"name": self.name, "source": self.source, "nodes": self.nodes,
                "gpus_per_node": self.gpus_per_node, "nics_per_node": self.nics_per_node,
                "intra": self.intra.to_dict(), "inter": self.inter.to_dict()}

    def describe(self) -> str:
        """One line: shape and links in GB/s and microseconds."""
        text = (f"{self.name or 'topology'}: {self.nodes} node(s) x {self.gpus_per_node} GPU(s), "
                f"intra {self.intra.bandwidth_GBps:.4g} GB/s {self.intra.latency_us:.3g} us")
        if self.nodes > 1:
            text += (f", inter {self.inter.bandwidth_GBps:.4g} GB/s {self.inter.latency_us:.3g} us, "
                     f"{self.nics_per_node} NIC(s)/node")
        return text

    @classmethod
    def from_dict(cls, d, where: str = "topology") -> "Topology":
        """Build from the file format above; errors name ``where`` and the field."""
        if not isinstance(d, dict):
            raise CollsimError(f"{where}: expected a mapping with nodes, gpus_per_node, intra, inter")
        known = {"name", "source", "nodes", "gpus_per_node", "nics_per_node", "intra", "inter"}
        for key in d:
            if key not in known:
                raise CollsimError(f"{where}: unknown field {key!r} (known: {', '.join(sorted(known))})")
        ints = {}
        for key, default in (("nodes", None), ("gpus_per_node", None), ("nics_per_node", 1)):
            v = d.get(key, default)
            if v is None:
                raise CollsimError(f"{where}: missing field {key!r}")
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise CollsimError(f"{where}: field {key!r} must be an integer >= 1, got {v!r}")
            ints[key] = v
        for key in ("name", "source"):
            if not isinstance(d.get(key, ""), str):
                raise CollsimError(f"{where}: field {key!r} must be a string, got {d[key]!r}")
        if "intra" not in d:
            raise CollsimError(f"{where}: missing field 'intra'")
        intra = _link_from_dict(d["intra"], f"{where}: field 'intra'")
        if "inter" in d:
            inter = _link_from_dict(d["inter"], f"{where}: field 'inter'")
        elif ints["nodes"] == 1:
            inter = intra
        else:
            raise CollsimError(f"{where}: missing field 'inter' (needed when nodes > 1)")
        if ints["nics_per_node"] > ints["gpus_per_node"]:
            raise CollsimError(f"{where}: field 'nics_per_node' ({ints['nics_per_node']}) must not "
                               f"exceed gpus_per_node ({ints['gpus_per_node']})")
        return cls(ints["nodes"], ints["gpus_per_node"], intra, inter, ints["nics_per_node"],
                   d.get("name", ""), d.get("source", ""))


_LINK_FORMS = ({"alpha_s", "beta_s_per_byte"}, {"bandwidth_GBps", "latency_us"})


def _link_from_dict(d, where: str) -> Link:
    if not isinstance(d, dict):
        raise CollsimError(f"{where} must be a mapping with bandwidth_GBps and latency_us "
                           f"(or alpha_s and beta_s_per_byte)")
    keys = set(d)
    form = next((f for f in _LINK_FORMS if keys == f), None)
    if form is None:
        raise CollsimError(f"{where} must have exactly bandwidth_GBps and latency_us, or alpha_s and "
                           f"beta_s_per_byte; got {', '.join(sorted(map(str, keys))) or 'nothing'}")
    for key in sorted(form):
        v = d[key]
        positive = key in ("beta_s_per_byte", "bandwidth_GBps")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0 \
                or (positive and v == 0):
            raise CollsimError(f"{where}.{key} must be a finite number {'> 0' if positive else '>= 0'}, "
                               f"got {v!r}")
    if "alpha_s" in form:
        return Link(float(d["alpha_s"]), float(d["beta_s_per_byte"]))
    return Link.from_GBps(d["bandwidth_GBps"], d["latency_us"])


def load_topology(path) -> Topology:
    """Read a topology file (format in the module docstring; without ``name`` it is named after the
    file); bad files raise ``CollsimError``."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        raise CollsimError(f"topology file {p}: unknown extension {p.suffix!r} (use .json, .yaml or .yml)")
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise CollsimError(f"topology file {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CollsimError(f"topology file {p}: cannot read it ({e.__class__.__name__})") from None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise CollsimError(f"topology file {p}: invalid JSON at line {e.lineno} column {e.colno}: "
                               f"{e.msg}") from None
    else:
        try:
            import yaml
        except ImportError:
            raise CollsimError(f"topology file {p}: reading YAML needs pyyaml (pip install pyyaml)") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
            raise CollsimError(f"topology file {p}: invalid YAML{at}") from None
    topo = Topology.from_dict(data, where=f"topology file {p}")
    return topo if topo.name else replace(topo, name=p.stem)  # an unnamed file is named after itself


# ---------------------------------------------------------------- presets
# Preset topologies, each with the source of its figures (``Topology.source``).
#
# Use ``get_preset(name, nodes=None, gpus_per_node=None)`` (also exported by
# ``collsim.topology``). Rules behind the numbers, so they can be checked:
#
# * beta (bandwidth): measured-level, not raw line rate. The ring AllReduce bus
#   bandwidth of the Hockney model tends to 1/beta, so an NVLink beta is the
#   measured ring busbw plateau. Network links use the measured/raw ratio of
#   NDR InfiniBand (46 of 50 GB/s = 0.92) for every InfiniBand speed, and an
#   assumed 0.8 for Ethernet through TCP sockets (NCCL's Socket transport).
# * alpha (per-message latency): the midpoint of NCCL's per-hop latencies for
#   its LL and Simple protocols on that link class (NVIDIA/nccl
#   src/graph/tuning.cc: NVLink 0.6 / 3.4 us, PCI 1.0 / 5.7 us, NET 2.7 / 14.0
#   us); Ethernet sockets get an assumed 15 us (kernel TCP path).
# These are starting points: ``collsim fit`` calibrates alpha and beta against
# measurements. GB/s = 1e9 bytes/s; Gb/s = 1e9 bits/s.


_TUNING = "NCCL per-hop latency midpoint of LL and Simple (src/graph/tuning.cc)"
IB_EFFICIENCY = 46.0 / 50.0   # NDR 400 Gb/s gives 46-48 GB/s per NIC with rings (nccl.md)
ETH_EFFICIENCY = 0.8          # assumption for TCP sockets: framing, TCP/IP and copies
ALPHA_NVLINK_US = (0.6 + 3.4) / 2
ALPHA_PCI_US = (1.0 + 5.7) / 2
ALPHA_IB_US = (2.7 + 14.0) / 2
ALPHA_ETH_US = 15.0           # assumption: kernel TCP round trip on 100-400 GbE

NVLINK4 = Link.from_GBps(360.0, ALPHA_NVLINK_US)
NVLINK4_SOURCE = ("H100/H200 SXM NVLink4: raw 18 links x 26.6 GB/s = ~478 GB/s per direction; measured "
                  "ring AllReduce busbw plateaus at 350-370 GB/s on 2-8 GPUs (nccl-tests), so 360 GB/s; "
                  f"alpha {ALPHA_NVLINK_US:.2f} us = {_TUNING}")
NVLINK3 = Link.from_GBps(230.0, ALPHA_NVLINK_US)
NVLINK3_SOURCE = ("A100 SXM NVLink3: raw 12 links x 25 GB/s = 300 GB/s per direction; published nccl-tests "
                  "ring AllReduce busbw on 8 x A100 is ~230 GB/s (the same ~77% of raw as H100); "
                  f"alpha {ALPHA_NVLINK_US:.2f} us = {_TUNING}")
PCIE4 = Link.from_GBps(24.0, ALPHA_PCI_US)
PCIE4_SOURCE = ("PCIe Gen4 x16: raw 31.5 GB/s per direction; 24 GB/s assumes the ~77% of raw that NVLink "
                f"rings reach; alpha {ALPHA_PCI_US:.2f} us = {_TUNING}")


def ib(gbit: int) -> tuple[Link, str]:
    """InfiniBand link of ``gbit`` Gb/s line rate at NDR's measured efficiency."""
    gbps = gbit / 8 * IB_EFFICIENCY
    return Link.from_GBps(gbps, ALPHA_IB_US), (
        f"InfiniBand {gbit} Gb/s = {gbit / 8:g} GB/s raw x {IB_EFFICIENCY:.2f} (NDR measures 46-48 GB/s "
        f"per NIC, nccl.md) = {gbps:.3g} GB/s; alpha {ALPHA_IB_US:.2f} us = {_TUNING}")


def eth(gbit: int) -> tuple[Link, str]:
    """Ethernet link (TCP sockets) of ``gbit`` Gb/s line rate."""
    gbps = gbit / 8 * ETH_EFFICIENCY
    return Link.from_GBps(gbps, ALPHA_ETH_US), (
        f"Ethernet {gbit} Gb/s = {gbit / 8:g} GB/s raw x {ETH_EFFICIENCY} (assumed TCP socket efficiency) "
        f"= {gbps:.3g} GB/s; alpha {ALPHA_ETH_US:g} us (assumed kernel TCP latency)")


def _make() -> dict[str, Topology]:
    ib400, ib400_src = ib(400)
    ib200, ib200_src = ib(200)
    eth100, eth100_src = eth(100)
    presets = {
        "h100-nvlink": Topology(1, 8, NVLINK4, ib400, 8, "h100-nvlink",
                                f"8 x H100 SXM node (DGX H100 layout, 8 NICs). Intra: {NVLINK4_SOURCE}. "
                                f"Inter: {ib400_src}"),
        "h200-nvlink": Topology(1, 8, NVLINK4, ib400, 8, "h200-nvlink",
                                f"8 x H200 SXM node (same NVLink4 as H100, 8 NICs). Intra: {NVLINK4_SOURCE}. "
                                f"Inter: {ib400_src}"),
        "a100-nvlink": Topology(1, 8, NVLINK3, ib200, 8, "a100-nvlink",
                                f"8 x A100 SXM node (DGX A100 layout, 8 HDR NICs). Intra: {NVLINK3_SOURCE}. "
                                f"Inter: {ib200_src}"),
        "pcie-box": Topology(1, 8, PCIE4, eth100, 1, "pcie-box",
                             f"8 GPUs on PCIe Gen4 without NVLink, one 100 GbE NIC. Intra: {PCIE4_SOURCE}. "
                             f"Inter: {eth100_src}"),
    }
    for gbit in (100, 200, 400):
        for kind, make, nics, what in (("ib", ib, 8, "one NIC per GPU (rail-optimised, DGX/SuperPOD style)"),
                                       ("eth", eth, 1, "one NIC per node shared by its 8 GPUs")):
            link, src = make(gbit)
            name = f"{kind}-{gbit}g"
            presets[name] = Topology(4, 8, NVLINK4, link, nics, name,
                                     f"4 nodes of 8 H100 GPUs, {what}. Intra: {NVLINK4_SOURCE}. Inter: {src}")
    return presets


PRESETS: dict[str, Topology] = _make()


def get_preset(name: str, nodes: int | None = None, gpus_per_node: int | None = None) -> Topology:
    """Preset ``name`` resized to ``nodes`` x ``gpus_per_node`` (None keeps the preset's).

    A preset with one NIC per GPU keeps one NIC per GPU; otherwise the NIC count
    is capped at the new ``gpus_per_node``.
    """
    if name not in PRESETS:
        raise CollsimError(f"unknown topology preset {name!r} (known: {', '.join(PRESETS)})")
    base = PRESETS[name]
    nodes = base.nodes if nodes is None else nodes
    gpn = base.gpus_per_node if gpus_per_node is None else gpus_per_node
    for field, v in (("nodes", nodes), ("gpus_per_node", gpn)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise CollsimError(f"preset {name}: {field} must be an integer >= 1, got {v!r}")
    nics = gpn if base.nics_per_node == base.gpus_per_node else min(base.nics_per_node, gpn)
    return replace(base, nodes=nodes, gpus_per_node=gpn, nics_per_node=nics)
