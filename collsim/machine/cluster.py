"""A cluster description: one file (or preset name) that says what a machine is, for every command.

File format (YAML or JSON; every key below, nothing else: an unknown key is refused naming the
closest known one; free text goes under ``notes``)::

    gpu: H100            # collsim.machine.gpus.GPUS: A100 A100-PCIE A800 H100 H100-PCIE H100-NVL
                         #   H800 H20 H200 B200 GB200 GH200 L40S L4 A10 RTX3080 RTX3090 RTX4080
                         #   RTX4090 (device names work too)
    gpus_per_node: 8     # GPUs of one host
    nodes: 2
    intra: nvswitch      # nvswitch | nvlink (direct links or a PCIe card's NVLink bridge) | pcie
                         #   (default: pcie for PCIe cards and GPUs without NVLink, else nvswitch)
    p2p: true            # optional, intra pcie: peer-to-peer over PCIe (default: the GPU's driver
                         #   allows it; GeForce: false, and NCCL goes through host memory, its SHM
                         #   transport)
    pcie_gen: 4          # optional: PCIe generation of the GPUs' x16 links (default: the GPU table)
    nvlink_GBps: 450     # optional: NVLink GB/s per GPU per direction (default: the GPU table)
    pcie_GBps: 32        # optional: PCIe GB/s per GPU per direction (default: pcie_gen's x16)
    nvlink_domain: 72    # optional: GPUs joined by one NVLink fabric across hosts (GB200 NVL72: 72;
                         #   default gpus_per_node); NCCL then sees each domain as one node (MNNVL)
    nics_per_node: 8     # needed when nodes > 1; more than gpus_per_node only for efa (p5: 32)
    nic_Gbps: 400        # needed when nodes > 1: line rate of one NIC, Gb/s
    net: ib              # ib | roce | tcp | efa | tcpx | slingshot (collsim.machine.networks.NETS)
    sharp: false         # optional: the InfiniBand switches reduce (SHARP, NCCL's CollNet; net ib
                         #   only)
    fabric_efficiency: 1 # optional: share of the NICs' line rate the fabric delivers, 0 < x <= 1
    fabric:              # optional: the switches above the NICs (collsim.machine.fabric; default:
                         #   non-blocking, only the NICs limit): leaf groups, rails,
      nodes_per_leaf: 32 #   oversubscription per tier, pods
      oversubscription: 2
    degraded_nics:       # optional: NICs slower than nic_Gbps (a link trained down, a bad cable):
      - {node: 3, nic: 2, nic_Gbps: 200}   # node and NIC index from 0; the simulation then runs
                                           #   the machine whole
    nvls: true           # optional: NVLink SHARP available (default: the GPU has it and intra is
                         #   nvswitch)
    nccl: "2.28"         # optional: the NCCL version whose tuning logic to follow (default the
                         #   newest; 2.18-2.30 are ported, another 2.x follows the closest,
                         #   nccl_asked)
    cpu: intel           # optional: intel | amd | arm (NCCL's network overhead, multi-node LL
                         #   caps and, from 2.29, NVLSTree's x86 size correction use it; default
                         #   arm for superchips)
    call_us: 25          # optional: fixed cost of every collective call, microseconds (default
                         #   ``CALL_US``)
    calibrated: {...}    # optional: inputs fitted on a run of the machine (collsim fit --cluster;
                         #   provenance)
    name: ..., source: ..., notes: ...   # optional free text (notes: any text, list or mapping)

``sharp: true`` describes switches that reduce with NCCL's SHARP plugin set up as NVIDIA's SHARP
guide says (NCCL_COLLNET_ENABLE=1): NCCL may then run CollNetDirect/CollNetChain; ``--env
NCCL_COLLNET_ENABLE=0`` turns it off as it would. ``collsim.machine.load_cluster(spec)`` takes a
preset name or a file path; every bad value is one CollsimError naming the key, every number within
``collsim.machine.bounds``. GPU g of a node uses NIC g x nics_per_node // gpus_per_node (one NIC per
GPU: rail g is NIC g).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from collsim.errors import CollsimError
from collsim.machine.bounds import MAX_GPUS_PER_NODE, MAX_NODES, check, check_int
from collsim.machine.cluster_file import KEYS, as_dict, checked_fields
from collsim.machine.fabric import Fabric
from collsim.machine.gpus import GPU, GPUS, gpu_name
from collsim.machine.hardware import PCIE_RING_EFFICIENCY, SHM_RING_EFFICIENCY
from collsim.machine.linkview import CALL_US, to_topology
from collsim.machine.networks import NETS, Net
from collsim.machine.provenance import calibrated_record, inputs
from collsim.machine.rules import check_intra, check_network, view_degraded
from collsim.machine.versions import NCCL_VERSIONS, NEWEST_NCCL, nearest_ported

INTRA = ("nvswitch", "nvlink", "pcie")
CPUS = ("intel", "amd", "arm")
_BOOLS = ("p2p", "sharp", "nvls")


@dataclass(frozen=True)
class Cluster:
    """``nodes`` x ``gpus_per_node`` GPUs of one part; see the module docstring for the keys.

    Unset optional values are resolved at construction (intra, p2p, pcie_gen, nvlink_GBps,
    pcie_GBps, nvlink_domain, nvls from the GPU table and the layout; nics_per_node and nic_Gbps 0
    on one node); ``call_us`` None means the default of ``per_call_us``."""

    gpu: str
    gpus_per_node: int
    nodes: int = 1
    intra: str | None = None
    nvlink_GBps: float | None = None
    pcie_GBps: float | None = None
    nics_per_node: int | None = None
    nic_Gbps: float | None = None
    net: str = "ib"
    nvls: bool | None = None
    nccl: str = NEWEST_NCCL
    cpu: str | None = None
    call_us: float | None = None
    name: str = ""
    source: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    p2p: bool | None = None
    pcie_gen: int | None = None
    sharp: bool = False
    nvlink_domain: int | None = None
    fabric_efficiency: float = 1.0
    notes: object = field(default=None, compare=False)
    fabric: Fabric | None = None
    degraded_nics: tuple = ()
    calibrated: dict | None = field(default=None, compare=False)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "gpu", gpu_name(self.gpu) if isinstance(self.gpu, str) else self.gpu)
        if self.gpu not in GPUS:
            raise CollsimError(f"cluster gpu {self.gpu!r:.40} is not known (known: "
                               f"{', '.join(GPUS)})")
        info = GPUS[self.gpu]
        if self.cpu is None:                      # Grace beside the GPU; x86 hosts otherwise
            set_(self, "cpu", "arm" if info.form == "superchip" else "intel")
        for key in ("intra", "net", "cpu"):
            if isinstance(getattr(self, key), str):
                set_(self, key, getattr(self, key).lower())
        if self.intra is None:
            set_(self, "intra", "pcie" if info.form == "pcie" or not info.nvlinks else "nvswitch")
        g = check_int("gpus_per_node", self.gpus_per_node, 1, MAX_GPUS_PER_NODE)
        check_int("nodes", self.nodes, 1, MAX_NODES)
        # 2.26.2-1 -> 2.26
        set_(self, "nccl", ".".join(str(self.nccl).split("-")[0].split(".")[:2]))
        followed = nearest_ported(self.nccl)
        # another 2.x: the closest version whose tuning logic is ported, said
        if followed != self.nccl:
            self.extra["nccl_asked"] = self.nccl
            set_(self, "nccl", followed)
        for key, value, choices in (("intra", self.intra, INTRA), ("net", self.net, tuple(NETS)),
                                    ("cpu", self.cpu, CPUS), ("nccl", self.nccl, NCCL_VERSIONS)):
            if value not in choices:
                raise CollsimError(f"cluster {key} {value!r:.40} is not one of "
                                   f"{', '.join(choices)}")
        for key in _BOOLS:
            if getattr(self, key) is not None and not isinstance(getattr(self, key), bool):
                raise CollsimError(f"cluster {key} must be true or false, got "
                                   f"{getattr(self, key)!r:.40}")
        set_(self, "calibrated", calibrated_record(self.calibrated))
        check_intra(self, info, g)
        check_network(self, g)
        if self.call_us is not None:
            set_(self, "call_us", check("call_us", self.call_us))
        possible = info.nvls and self.intra == "nvswitch" and self.nvlink_domain > 1
        if self.nvls is None:
            set_(self, "nvls", possible)
        elif self.nvls and not possible:
            why = (f"{self.gpu} has no NVLink SHARP" if not info.nvls
                   else f"intra is {self.intra}, not nvswitch"
                   if self.intra != "nvswitch" else "one GPU per NVLink domain")
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

    @property
    def intra_efficiency(self) -> float:
        """Ring busbw plateau / ``intra_GBps``: calibrated, or the GPU's NVLink ring efficiency, or
        PCIe's with and without peer-to-peer (``collsim.machine.hardware``)."""
        if "intra_efficiency" in (self.calibrated or {}):
            return self.calibrated["intra_efficiency"]
        if self.intra != "pcie":
            return self.gpu_info.ring_efficiency
        return PCIE_RING_EFFICIENCY if self.p2p else SHM_RING_EFFICIENCY

    @property
    def nic_efficiency(self) -> float:
        """Share of a NIC's line rate NCCL's ring moves: net efficiency x ``fabric_efficiency``, or
        calibrated."""
        return (self.calibrated or {}).get("nic_efficiency",
                                           self.net_info.efficiency * self.fabric_efficiency)

    @property
    def hop_us(self) -> float | None:
        """A small message's network step (us): calibrated, else ``Net.hop_us`` (None: NCCL's NET
        latency)."""
        return (self.calibrated or {}).get("hop_us", self.net_info.hop_us)

    @property
    def step_scale(self) -> float:
        """The GPU-side per-step costs x this (1 unless ``calibrated``)."""
        return (self.calibrated or {}).get("step_scale", 1.0)

    inputs = property(inputs,
                      doc="Where each uncertain input comes from "
                          "(``collsim.machine.provenance.inputs``).")

    def nic_of_local(self, local):
        """NIC index of local GPU ``local`` (int or array): local x nics_per_node //
        gpus_per_node."""
        return local * max(self.nics_per_node, 1) // self.gpus_per_node

    @property
    def per_call_us(self) -> float:
        """Fixed cost of one collective call, microseconds: ``call_us``, or by default
        ``CALL_US``."""
        if self.call_us is not None:
            return self.call_us
        return CALL_US[0] if self.nodes == 1 else CALL_US[1]

    def nccl_view(self) -> "Cluster":
        """The machine as NCCL's init sees it: an NVLink domain larger than a host is one node
        (MNNVL fuses the topologies of the clique, NVIDIA/nccl src/graph/topo.cc:1493-1528@v2.28.9,
        so nNodes counts domains; the fabric's groups and degraded NICs count domains too); a plugin
        that groups NICs (efa) shows one device per GPU of their summed speed."""
        c = self
        if self.nvlink_domain > self.gpus_per_node:
            per = min(self.nvlink_domain, self.ranks)
            hosts = per // self.gpus_per_node
            c = replace(c, gpus_per_node=per, nodes=self.ranks // per, nvlink_domain=per,
                        nics_per_node=self.nics_per_node * hosts,
                        fabric=self.fabric and self.fabric.seen_as(hosts, self.nics_per_node),
                        degraded_nics=view_degraded(self.degraded_nics, hosts,
                                                    self.nics_per_node, 1, 0.0))
        if c.net_info.groups_nics and c.nics_per_node > c.gpus_per_node:
            group = c.nics_per_node // c.gpus_per_node
            c = replace(c, nic_Gbps=c.nic_Gbps * group, nics_per_node=c.gpus_per_node,
                        degraded_nics=view_degraded(c.degraded_nics, 1, c.nics_per_node, group,
                                                    c.nic_Gbps))
        return c

    def with_nodes(self, nodes: int) -> "Cluster":
        """The same machine with ``nodes`` nodes."""
        return replace(self, nodes=nodes)

    def resized(self, nodes: int | None = None, gpus_per_node: int | None = None) -> "Cluster":
        """The same machine with ``nodes`` nodes of ``gpus_per_node`` GPUs (None keeps the current).
        One NIC per GPU stays one per GPU; otherwise the NICs are capped at the new GPUs per
        node."""
        if gpus_per_node is None or gpus_per_node == self.gpus_per_node:
            return self if nodes is None else replace(self, nodes=nodes)
        nics = (gpus_per_node if self.nics_per_node == self.gpus_per_node
                else min(self.nics_per_node, gpus_per_node))
        return replace(self, nodes=self.nodes if nodes is None else nodes,
                       gpus_per_node=gpus_per_node, nics_per_node=nics, nvlink_domain=None)

    def to_dict(self) -> dict:
        """The mapping of this cluster's file (``collsim.machine.cluster_file.as_dict``)."""
        return as_dict(self)

    def describe(self) -> str:
        """One line: shape, links, network, NVLS and NCCL version."""
        shm = "" if self.p2p else " without P2P (SHM)"
        link = {"pcie": f"PCIe Gen{self.pcie_gen}{shm}"}.get(self.intra, self.intra)
        text = (f"{self.name or 'cluster'}: {self.nodes} node(s) x {self.gpus_per_node} "
                f"{self.gpu}, {link} {self.intra_GBps:g} GB/s per GPU")
        if self.nvlink_domain != self.gpus_per_node:
            text += f", NVLink domain of {self.nvlink_domain} GPUs"
        if self.nodes > 1:
            text += f", {self.nics_per_node} x {self.nic_Gbps:g} Gb/s {self.net} NICs per node"
            text += (f" (fabric efficiency {self.fabric_efficiency:g})"
                     if self.fabric_efficiency != 1 else "")
            text += ", SHARP" if self.sharp else ""
            text += (f", fabric: {self.fabric.describe()}" if self.fabric
                     else ", non-blocking fabric")
            text += "".join(f", node{n}.nic{k} at {r:g} Gb/s" for n, k, r in self.degraded_nics)
        asked = (f" (asked {self.extra['nccl_asked']}: the closest ported)"
                 if "nccl_asked" in self.extra else "")
        return text + f", NVLS {'on' if self.nvls else 'off'}, NCCL {self.nccl}{asked}"

    @classmethod
    def from_dict(cls, d, where: str = "cluster") -> "Cluster":
        """Build from the file format above; errors name ``where`` and the key."""
        known = checked_fields(d, where)
        try:
            return cls(**known)
        except CollsimError as e:
            raise CollsimError(f"{where}: {e}") from None


__all__ = ["Cluster", "KEYS", "NCCL_VERSIONS", "to_topology"]
