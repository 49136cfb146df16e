"""A cluster description: one file (or preset name) that says what a machine is, for every command.

File format (YAML or JSON; extra keys are kept in ``Cluster.extra`` and otherwise ignored)::

    gpu: H100            # A100 | H100 | H200 | B200 (collsim.machine.hardware.GPUS)
    gpus_per_node: 8
    nodes: 2
    intra: nvswitch      # nvswitch | nvlink (direct links between GPUs) | pcie
    nvlink_GBps: 450     # optional: NVLink GB/s per GPU per direction (default: the GPU table)
    pcie_GBps: 32        # optional, intra: pcie only: PCIe GB/s per GPU per direction (default 32, Gen4 x16)
    nics_per_node: 8     # needed when nodes > 1
    nic_Gbps: 400        # needed when nodes > 1: line rate of one NIC, Gb/s
    net: ib              # ib | roce | tcp (collsim.machine.hardware.NETS)
    nvls: true           # optional: NVLink SHARP available (default: the GPU has it and intra is nvswitch)
    nccl: "2.28"         # optional: the NCCL version whose tuning logic to follow (default the newest;
                         #   2.18-2.28 are ported, another 2.x follows the closest and says so: nccl_asked)
    cpu: intel           # optional: intel | amd (NCCL's network overhead and multi-node LL caps use it)
    call_us: 25          # optional: fixed cost of every collective call, microseconds (default ``CALL_US``)

``collsim.machine.load_cluster(spec)`` takes a preset name (``collsim.machine.presets.CLUSTERS``) or a
file path; names in any case, and a device name holding one GPU name ("NVIDIA H100 80GB HBM3") means that
GPU; every bad value is one CollsimError naming the key. GPU g of a node uses NIC
g x nics_per_node // gpus_per_node (one NIC per GPU: rail g is NIC g).

``to_topology`` gives the simulator's view: links with their alphas and efficiencies, the NVLS link
where the machine has NVLink SHARP, per-pair links on boards without NVSwitch (intra: nvlink), and
``call_us``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from collsim.errors import CollsimError, require_int, require_number
from collsim.machine.hardware import GPU, GPUS, NETS, Net
from collsim.machine.topology import Link, Topology

INTRA = ("nvswitch", "nvlink", "pcie")
CPUS = ("intel", "amd")
NCCL_VERSIONS = ("2.18", "2.19", "2.20", "2.21", "2.22", "2.23", "2.24", "2.25", "2.26", "2.27", "2.28")
NEWEST_NCCL = NCCL_VERSIONS[-1]
PCIE_GBPS = 32.0     # PCIe Gen4 x16: 16 GT/s x 16 lanes x 128/130 / 8 bits, per direction
KEYS = ("name", "source", "gpu", "gpus_per_node", "nodes", "intra", "nvlink_GBps", "pcie_GBps", "nics_per_node",
        "nic_Gbps", "net", "nvls", "nccl", "cpu", "call_us")


def nearest_ported(version: str) -> str:
    """``version`` ("2.N") when its tuning logic is ported, else the closest ported 2.x (2.12 -> 2.18,
    2.30 -> 2.28); anything that is not 2.N comes back unchanged (and the cluster refuses it)."""
    m = re.fullmatch(r"2\.(\d{1,3})", version)
    if version in NCCL_VERSIONS or not m:
        return version
    minors = [int(v.split(".")[1]) for v in NCCL_VERSIONS]
    return f"2.{min(max(int(m.group(1)), minors[0]), minors[-1])}"


def gpu_name(text: str) -> str:
    """The GPU table's name for ``text``: any case, or a device name holding exactly one known name as
    a word ("NVIDIA H100 80GB HBM3", "A100-SXM4-80GB" -> H100, A100; "GH200" is not H200); else
    ``text`` in capitals (and the cluster refuses it by name)."""
    upper = text.upper()
    found = {g for g in GPUS if re.search(rf"(?<![A-Z0-9]){g}(?![A-Z0-9])", upper)}
    return found.pop() if len(found) == 1 else upper


@dataclass(frozen=True)
class Cluster:
    """``nodes`` x ``gpus_per_node`` GPUs of one generation; see the module docstring for the keys.

    Unset optional values are resolved at construction: ``nvlink_GBps`` from the GPU table,
    ``nvls`` from the GPU and the intra-node link, ``nics_per_node`` 0 and ``nic_Gbps`` 0 on one node
    when not given; ``call_us`` None means the default of ``per_call_us``."""

    gpu: str
    gpus_per_node: int
    nodes: int = 1
    intra: str = "nvswitch"
    nvlink_GBps: float | None = None
    pcie_GBps: float = PCIE_GBPS
    nics_per_node: int | None = None
    nic_Gbps: float | None = None
    net: str = "ib"
    nvls: bool | None = None
    nccl: str = NEWEST_NCCL
    cpu: str = "intel"
    call_us: float | None = None
    name: str = ""
    source: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if isinstance(self.gpu, str):
            object.__setattr__(self, "gpu", gpu_name(self.gpu))
        for key in ("intra", "net", "cpu"):
            if isinstance(getattr(self, key), str):
                object.__setattr__(self, key, getattr(self, key).lower())
        if self.gpu not in GPUS:
            raise CollsimError(f"cluster gpu {self.gpu!r:.40} is not known (known: {', '.join(GPUS)})")
        require_int("cluster gpus_per_node", self.gpus_per_node, 1, 1024)
        require_int("cluster nodes", self.nodes, 1, 1 << 16)
        object.__setattr__(self, "nccl", ".".join(str(self.nccl).split("-")[0].split(".")[:2]))  # 2.26.2-1 -> 2.26
        followed = nearest_ported(self.nccl)
        if followed != self.nccl:   # another 2.x: the closest version whose tuning logic is ported, said
            self.extra["nccl_asked"] = self.nccl
            object.__setattr__(self, "nccl", followed)
        for key, value, choices in (("intra", self.intra, INTRA), ("net", self.net, tuple(NETS)),
                                    ("cpu", self.cpu, CPUS), ("nccl", self.nccl, NCCL_VERSIONS)):
            if value not in choices:
                raise CollsimError(f"cluster {key} {value!r:.40} is not one of {', '.join(choices)}")
        info = GPUS[self.gpu]
        nvlink = info.nvlink_GBps if self.nvlink_GBps is None else self.nvlink_GBps
        object.__setattr__(self, "nvlink_GBps", require_number("cluster nvlink_GBps", nvlink, positive=True))
        require_number("cluster pcie_GBps", self.pcie_GBps, positive=True)
        if self.intra == "nvlink" and self.gpus_per_node > info.nvlinks + 1:
            raise CollsimError(f"cluster intra nvlink: {self.gpus_per_node} GPUs cannot all be linked directly "
                               f"with {info.nvlinks} NVLinks each (use nvswitch)")
        if self.nodes > 1:
            for key in ("nics_per_node", "nic_Gbps"):
                if getattr(self, key) is None:
                    raise CollsimError(f"cluster {key} is needed when nodes > 1")
        nics = require_int("cluster nics_per_node", self.nics_per_node or 0, 0)
        if nics > self.gpus_per_node:
            raise CollsimError(f"cluster nics_per_node ({nics}) exceeds gpus_per_node ({self.gpus_per_node})")
        if self.nodes > 1 and nics < 1:
            raise CollsimError("cluster nics_per_node must be >= 1 when nodes > 1")
        gbit = require_number("cluster nic_Gbps", self.nic_Gbps or 0.0, 0.0)
        if self.nodes > 1 and gbit <= 0:
            raise CollsimError("cluster nic_Gbps must be > 0 when nodes > 1")
        object.__setattr__(self, "nics_per_node", nics)
        object.__setattr__(self, "nic_Gbps", gbit)
        if self.call_us is not None:
            object.__setattr__(self, "call_us", require_number("cluster call_us", self.call_us, 0.0))
        possible = info.nvls and self.intra == "nvswitch"
        if self.nvls is None:
            object.__setattr__(self, "nvls", possible)
        elif not isinstance(self.nvls, bool):
            raise CollsimError(f"cluster nvls must be true or false, got {self.nvls!r:.40}")
        elif self.nvls and not possible:
            why = f"{self.gpu} has no NVLink SHARP" if not info.nvls else f"intra is {self.intra}, not nvswitch"
            raise CollsimError(f"cluster nvls: true needs an NVSwitch with NVLink SHARP ({why})")

    # ------------------------------------------------------------- derived facts
    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def gpu_info(self) -> GPU:
        return GPUS[self.gpu]

    @property
    def net_info(self) -> Net:
        return NETS[self.net]

    @property
    def nic_GBps(self) -> float:
        """Line rate of one NIC, GB/s (nic_Gbps / 8)."""
        return self.nic_Gbps / 8.0

    @property
    def intra_GBps(self) -> float:
        """Bandwidth per GPU per direction into the node's fabric (NVLink, or PCIe), GB/s."""
        return self.pcie_GBps if self.intra == "pcie" else self.nvlink_GBps

    def nic_of_local(self, local):
        """NIC index of local GPU ``local`` (int or array): local x nics_per_node // gpus_per_node."""
        return local * max(self.nics_per_node, 1) // self.gpus_per_node

    @property
    def per_call_us(self) -> float:
        """Fixed cost of one collective call, microseconds: ``call_us``, or by default ``CALL_US``."""
        if self.call_us is not None:
            return self.call_us
        return CALL_US[0] if self.nodes == 1 else CALL_US[1]

    def with_nodes(self, nodes: int) -> "Cluster":
        """The same machine with ``nodes`` nodes."""
        return replace(self, nodes=nodes)

    def resized(self, nodes: int | None = None, gpus_per_node: int | None = None) -> "Cluster":
        """The same machine with ``nodes`` nodes of ``gpus_per_node`` GPUs (None keeps the current). One
        NIC per GPU stays one per GPU; otherwise the NICs are capped at the new GPUs per node."""
        if gpus_per_node is None or gpus_per_node == self.gpus_per_node:
            return self if nodes is None else replace(self, nodes=nodes)
        nics = gpus_per_node if self.nics_per_node == self.gpus_per_node else min(self.nics_per_node, gpus_per_node)
        return replace(self, nodes=self.nodes if nodes is None else nodes, gpus_per_node=gpus_per_node,
                       nics_per_node=nics)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in KEYS}
        return {**d, **self.extra}

    def describe(self) -> str:
        """One line: shape, links, NVLS and NCCL version."""
        text = (f"{self.name or 'cluster'}: {self.nodes} node(s) x {self.gpus_per_node} {self.gpu}, {self.intra} "
                f"{self.intra_GBps:g} GB/s per GPU")
        if self.nodes > 1:
            text += f", {self.nics_per_node} x {self.nic_Gbps:g} Gb/s {self.net} NICs per node"
        asked = f" (asked {self.extra['nccl_asked']}: the closest ported)" if "nccl_asked" in self.extra else ""
        return text + f", NVLS {'on' if self.nvls else 'off'}, NCCL {self.nccl}{asked}"

    @classmethod
    def from_dict(cls, d, where: str = "cluster") -> "Cluster":
        """Build from the file format above; errors name ``where``."""
        if not isinstance(d, dict):
            raise CollsimError(f"{where}: expected a mapping with gpu, gpus_per_node, nodes, ...")
        if "gpu" not in d or "gpus_per_node" not in d:
            raise CollsimError(f"{where}: needs at least gpu and gpus_per_node")
        known = {k: d[k] for k in KEYS if k in d}
        for key in ("gpu", "intra", "net", "cpu", "nccl", "name", "source"):
            if key in known and not isinstance(known[key], str):
                if key == "nccl" and isinstance(known[key], float):
                    known[key] = f"{known[key]:.2f}"  # YAML reads 2.26 as a number (and 2.20 as 2.2)
                    continue
                raise CollsimError(f"{where}: {key} must be a string, got {known[key]!r:.40}")
        extra = {k: v for k, v in d.items() if k not in KEYS}
        try:
            return cls(**known, extra=extra)
        except CollsimError as e:
            raise CollsimError(f"{where}: {e}") from None


# Per-message latency of the simulator's links (alpha, microseconds), per channel and step. NVLink and
# PCIe: the midpoint of NCCL's per-hop latencies for LL and Simple rings on that link class (NVIDIA/nccl
# src/graph/tuning.cc:149-168, v2.28.9-1: NVLink 0.6 / 3.4, PCI 1.0 / 5.7). InfiniBand and RoCE (NCCL's
# IB verbs transport): NCCL's NET per-hop latency of a Ring LL128, 4.0 us (same table), which with
# CALL_US[1] fits the 2-node ring log L15 from 1 MiB up (README "Calibration"). TCP sockets: an assumed
# 15 us (kernel TCP path).
ALPHA_US = {"nvswitch": (0.6 + 3.4) / 2, "nvlink": (0.6 + 3.4) / 2, "pcie": (1.0 + 5.7) / 2,
            "ib": 4.0, "roce": 4.0, "tcp": 15.0}
# Fixed cost of one collective call (microseconds, ``Topology.call_us``): NCCL's own base latency of a
# Simple ring is 8.4 us (baseLat, src/graph/tuning.cc:143-144: the kernel launch and setup NCCL models);
# a host-timed nccl-tests loop pays more per call (one process launching 8 GPUs' kernels; across nodes
# NCCL's proxy threads and MPI ranks). CALL_US[0] for one node, CALL_US[1] across nodes, calibrated on
# the ring logs L01 (1 x 8 H100) and L15 (2 x 8 H100, 8 x 400G IB): the time the pipelined ring leaves
# unexplained from 1 MiB to 1 GiB.
CALL_US = (25.0, 60.0)


def to_topology(cluster: Cluster):
    """The simulator's view of ``cluster`` (``collsim.machine.topology.Topology``): intra-node links
    at the GPU's ring efficiency of its NVLink (or PCIe) bandwidth, NICs at the network class's
    efficiency of their line rate, alphas from ``ALPHA_US``; ``source`` says where each number is from."""
    info, net = cluster.gpu_info, cluster.net_info
    g = cluster.gpus_per_node
    pairs = info.nvlinks // (g - 1) if cluster.intra == "nvlink" and g > 1 else 0
    share = pairs * info.link_GBps / cluster.intra_GBps if pairs else 1.0   # a pair link's part of the GPU's NVLink
    intra_GBps = cluster.intra_GBps * share * info.ring_efficiency
    intra = Link.from_GBps(intra_GBps, ALPHA_US[cluster.intra])
    source = (f"{g} x {cluster.gpu} ({cluster.intra}): {cluster.intra_GBps * share:g} GB/s per "
              f"{'pair (' + str(pairs) + ' NVLinks)' if pairs else 'GPU'} x ring efficiency "
              f"{info.ring_efficiency:.3f} = {intra_GBps:.4g} GB/s, alpha {ALPHA_US[cluster.intra]:.3g} us "
              f"[{info.source}]")
    nvls = None
    if cluster.nvls:
        nvls = Link.from_GBps(intra_GBps * info.nvls_efficiency, ALPHA_US[cluster.intra])
        source += (f". NVLS: {intra_GBps:.4g} GB/s x nvlsEfficiency {info.nvls_efficiency:g} = "
                   f"{intra_GBps * info.nvls_efficiency:.4g} GB/s")
    if cluster.nodes > 1 or cluster.nic_Gbps > 0:
        inter_GBps = cluster.nic_GBps * net.efficiency
        inter = Link.from_GBps(inter_GBps, ALPHA_US[cluster.net])
        source += (f". Inter: {cluster.nic_Gbps:g} Gb/s {cluster.net} = {cluster.nic_GBps:g} GB/s x "
                   f"{net.efficiency:.3f} = {inter_GBps:.4g} GB/s, alpha {ALPHA_US[cluster.net]:.3g} us [{net.source}]")
    else:
        inter = intra
    source += f". {cluster.per_call_us:g} us per call"
    if cluster.source:
        source = f"{cluster.source}. {source}"
    return Topology(cluster.nodes, g, intra, inter, max(cluster.nics_per_node, 1), cluster.name, source, nvls,
                    cluster.per_call_us, pairs)
