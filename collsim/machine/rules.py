"""The layout rules of a cluster description, applied by ``Cluster.__post_init__``: which intra-node
links a GPU part can have (NVSwitch for SXM parts and superchips, an NVLink bridge joins 2 PCIe
cards, peer-to-peer only matters on PCIe), NVLink domains across hosts (GB200, GH200), NICs per node
(more than GPUs only through a plugin that groups them, aws-ofi-nccl on EFA), NICs slower than the
rest (``degraded_nics``, each on a node and NIC of the cluster) and SHARP (InfiniBand only). Each
broken rule is one CollsimError naming the key.
"""
from __future__ import annotations

from collsim.errors import CollsimError
from collsim.machine.bounds import MAX_NICS_PER_GPU, MAX_NVLINK_DOMAIN, check, check_int
from collsim.machine.fabric import Fabric
from collsim.machine.hardware import GPU, NETS, PCIE


def check_intra(self, info: GPU, g: int) -> None:
    """Intra-node layout of cluster ``self`` (``g`` GPUs of ``info``): resolves p2p, pcie_gen,
    pcie_GBps, nvlink_GBps and nvlink_domain, or one-line CollsimError naming the key."""
    set_ = object.__setattr__
    if self.intra != "pcie" and not info.nvlinks and g > 1:
        raise CollsimError(f"cluster intra {self.intra}: {self.gpu} has no NVLink (use intra: "
                           "pcie)")
    if self.intra == "nvswitch" and info.form == "pcie" and g > 1:
        raise CollsimError(f"cluster intra nvswitch: {self.gpu} is a PCIe card, on no NVSwitch "
                           "(its NVLink bridge joins 2 GPUs: intra nvlink with gpus_per_node 2, or "
                           "intra pcie)")
    if self.intra == "nvlink" and info.form == "pcie" and g > 2:
        raise CollsimError(f"cluster intra nvlink: a {self.gpu} NVLink bridge joins 2 GPUs, not "
                           f"{g} (gpus_per_node 2, or intra pcie)")
    if self.intra == "nvlink" and g > info.nvlinks + 1:
        raise CollsimError(f"cluster intra nvlink: {g} GPUs cannot all be linked directly "
                           f"with {info.nvlinks} NVLinks each (use nvswitch)")
    if self.p2p is False and self.intra != "pcie" and g > 1:
        raise CollsimError("cluster p2p: false describes PCIe GPUs without peer access, but intra "
                           f"is {self.intra} (NVLink is peer-to-peer; --env NCCL_P2P_DISABLE=1 "
                           "forces SHM)")
    set_(self, "p2p", (info.p2p if self.intra == "pcie" else True) if self.p2p is None
         else self.p2p)
    gen = (info.pcie_gen if self.pcie_gen is None
           else check_int("pcie_gen", self.pcie_gen, min(PCIE), max(PCIE)))
    set_(self, "pcie_gen", gen)
    set_(self, "pcie_GBps", PCIE[gen].GBps if self.pcie_GBps is None
         else check("pcie_GBps", self.pcie_GBps))
    if not info.nvlinks:
        # 0: what to_dict writes for a part without NVLink
        if self.nvlink_GBps not in (None, 0):
            raise CollsimError(f"cluster nvlink_GBps: {self.gpu} has no NVLink")
        nvlink = 0.0
    else:
        nvlink = (info.nvlink_GBps if self.nvlink_GBps is None
                  else check("nvlink_GBps", self.nvlink_GBps))
    set_(self, "nvlink_GBps", float(nvlink))
    domain = g if self.nvlink_domain is None else check_int("nvlink_domain", self.nvlink_domain, 1,
                                                            MAX_NVLINK_DOMAIN)
    if domain != g:
        if not info.mnnvl or self.intra != "nvswitch":
            raise CollsimError(f"cluster nvlink_domain {domain}: NVLink across hosts needs NVLink "
                               "Switch trays and a GPU that reaches them (GB200, GH200) on intra "
                               f"nvswitch, not {self.gpu} on {self.intra}")
        if domain % g or (self.ranks > domain and self.ranks % domain):
            raise CollsimError(f"cluster nvlink_domain {domain}: must be a multiple of "
                               f"gpus_per_node ({g}), and nodes x gpus_per_node ({self.ranks}) "
                               "fill whole domains")
    set_(self, "nvlink_domain", domain)

def check_network(self, g: int) -> None:
    """NICs, network and fabric of cluster ``self`` (``g`` GPUs a node): resolves nics_per_node,
    nic_Gbps and fabric (a mapping becomes a ``collsim.machine.fabric.Fabric``), or one-line
    CollsimError naming the key."""
    set_ = object.__setattr__
    if self.nodes > 1:
        for key in ("nics_per_node", "nic_Gbps"):
            if getattr(self, key) is None:
                raise CollsimError(f"cluster {key} is needed when nodes > 1")
    net = NETS[self.net]
    nics = check_int("nics_per_node", self.nics_per_node or 0, 0, MAX_NICS_PER_GPU * g)
    if nics > g and not net.groups_nics:
        raise CollsimError(f"cluster nics_per_node ({nics}) exceeds gpus_per_node ({g}): only a "
                           "plugin that groups NICs (net efa) uses more NICs than GPUs")
    if nics > g and nics % g:
        raise CollsimError(f"cluster nics_per_node ({nics}): more NICs than GPUs must be a "
                           f"multiple of gpus_per_node ({g}), as aws-ofi-nccl groups them")
    if self.nodes > 1 and nics < 1:
        raise CollsimError("cluster nics_per_node must be >= 1 when nodes > 1")
    gbit = self.nic_Gbps or 0.0
    gbit = check("nic_Gbps", gbit) if gbit or isinstance(gbit, bool) else 0.0
    if self.nodes > 1 and gbit <= 0:
        raise CollsimError("cluster nic_Gbps must be > 0 when nodes > 1")
    set_(self, "nics_per_node", nics)
    set_(self, "nic_Gbps", gbit)
    set_(self, "fabric_efficiency", check("fabric_efficiency", self.fabric_efficiency))
    set_(self, "degraded_nics", _degraded(self.degraded_nics, self.nodes, nics, gbit))
    if self.fabric is not None:                      # a mapping from a file, or a Fabric
        set_(self, "fabric", Fabric.from_dict(self.fabric))
        # whole NVLink domains
        self.fabric.seen_as(self.nvlink_domain // g if self.nvlink_domain > g else 1, 1)
    if self.sharp and self.net != "ib":
        raise CollsimError("cluster sharp: true needs InfiniBand switches that reduce (SHARP), but "
                           f"net is {self.net}")


def _degraded(items, nodes: int, nics: int, gbit: float) -> tuple:
    """``degraded_nics`` (mappings {node, nic, nic_Gbps}, or tuples) as sorted (node, nic, Gb/s)
    tuples, each a NIC of the cluster no faster than ``nic_Gbps``, each once; or one-line
    CollsimError."""
    if not isinstance(items, (list, tuple)):
        raise CollsimError("cluster degraded_nics must be a list of {node, nic, nic_Gbps}")
    out = {}
    for d in items:
        if isinstance(d, dict) and set(d) == {"node", "nic", "nic_Gbps"}:
            d = (d["node"], d["nic"], d["nic_Gbps"])
        if not isinstance(d, (list, tuple)) or len(d) != 3:
            raise CollsimError("cluster degraded_nics: each entry is {node, nic, nic_Gbps}, got "
                               f"{str(d)[:60]!r}")
        node = check_int("degraded_nics node", d[0], 0, nodes - 1)
        nic = check_int("degraded_nics nic", d[1], 0, max(nics - 1, 0))
        rate = check("nic_Gbps", d[2])
        if rate > gbit:
            raise CollsimError(f"cluster degraded_nics: node {node} nic {nic} at {rate:g} Gb/s is "
                               f"faster than nic_Gbps ({gbit:g}): a degraded NIC is slower")
        if (node, nic) in out:
            raise CollsimError(f"cluster degraded_nics: node {node} nic {nic} is listed twice")
        out[(node, nic)] = rate
    return tuple((n, k, r) for (n, k), r in sorted(out.items()))


def view_degraded(degraded: tuple, hosts: int, host_nics: int, group: int, gbit: float) -> tuple:
    """``degraded`` (node, nic, Gb/s) as ``Cluster.nccl_view`` sees them: ``hosts`` hosts a node (an
    NVLink domain; NIC k of host h is the node's NIC (h mod hosts) x host_nics + k), ``group`` NICs
    of ``gbit`` one device (aws-ofi-nccl on EFA) whose rate is their sum."""
    out = {}
    for node, nic, rate in degraded:
        key = (node // hosts, ((node % hosts) * host_nics + nic) // group)
        total, count = out.get(key, (0.0, 0))
        out[key] = (total + rate, count + 1)
    return tuple((n, k, total + (group - count) * gbit)
                 for (n, k), (total, count) in sorted(out.items()))
