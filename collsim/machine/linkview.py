"""The simulator's link-level view of a cluster description: ``to_topology(cluster)``.

The event simulation runs on a ``collsim.machine.topology.Topology`` (one link class inside a node,
one between nodes, NICs, NVLS, the network's SHARP, the switch tiers above the NICs).
``to_topology`` derives it from a ``Cluster`` as NCCL sees the machine (``Cluster.nccl_view``: one
node per NVLink domain, grouped EFA NICs) with the bandwidths a ring reaches
(``Cluster.intra_efficiency``, the network's efficiency x ``fabric_efficiency``) and the alphas of
``ALPHA_US``; its ``source`` says where each number is from. """
from __future__ import annotations

from collsim.machine.networks import SHARP_SOURCE, SHARP_US
from collsim.machine.topology import Link, Topology

# Per-message latency of the simulator's links (alpha, microseconds), per channel and step. NVLink
# and
# PCIe: the midpoint of NCCL's per-hop latencies for LL and Simple rings on that link class
# (NVIDIA/nccl
# src/graph/tuning.cc:149-168, v2.28.9-1: NVLink 0.6 / 3.4, PCI 1.0 / 5.7); SHM (PCIe GPUs without
# peer-to-peer, through host memory): NCCL's PCI figure too (its tuning has no SHM class; assumed).
# InfiniBand and RoCE (NCCL's IB verbs transport): NCCL's NET per-hop latency of a Ring LL128, 4.0
# us
# (same table), which with CALL_US[1] fits the 2-node ring log L15 from 1 MiB up. TCP sockets, EFA
# (SRD
# through the Nitro card) and TCPX (TCP with device memory): an assumed 15 us. Slingshot (RDMA
# through the CXI provider): IB's, assumed.
ALPHA_US = {"nvswitch": (0.6 + 3.4) / 2, "nvlink": (0.6 + 3.4) / 2, "pcie": (1.0 + 5.7) / 2,
            "shm": (1.0 + 5.7) / 2, "ib": 4.0, "roce": 4.0, "tcp": 15.0, "efa": 15.0, "tcpx": 15.0,
            "slingshot": 4.0}
# Fixed cost of one collective call (microseconds, ``Topology.call_us``): NCCL's own base latency of
# a
# Simple ring is 8.4 us (baseLat, src/graph/tuning.cc:143-144: the kernel launch and setup NCCL
# models);
# a host-timed nccl-tests loop pays more per call (one process launching 8 GPUs' kernels; across
# nodes
# NCCL's proxy threads and MPI ranks). CALL_US[0] for one node, CALL_US[1] across nodes, calibrated
# on
# the ring logs L01 (1 x 8 H100) and L15 (2 x 8 H100, 8 x 400G IB): the time the pipelined ring
# leaves
# unexplained from 1 MiB to 1 GiB.
CALL_US = (25.0, 60.0)


def to_topology(cluster) -> Topology:
    """The simulator's view of ``cluster`` (a ``collsim.machine.cluster.Cluster``, module
    docstring)."""
    c = cluster.nccl_view()
    info, net = c.gpu_info, c.net_info
    g = c.gpus_per_node
    pairs = info.nvlinks // (g - 1) if c.intra == "nvlink" and g > 1 else 0
    # a pair link's part of the GPU's NVLink
    share = pairs * info.link_GBps / c.intra_GBps if pairs else 1.0
    eff = c.intra_efficiency
    intra_GBps = c.intra_GBps * share * eff
    kind = c.intra if c.intra != "pcie" or c.p2p else "shm"
    intra = Link.from_GBps(intra_GBps, ALPHA_US[kind])
    what = {"pcie": "PCIe peer-to-peer", "shm": "PCIe through host memory (SHM)"}.get(kind, kind)
    source = (f"{g} x {c.gpu} ({what}): {c.intra_GBps * share:g} GB/s per "
              f"{'pair (' + str(pairs) + ' NVLinks)' if pairs else 'GPU'} x ring efficiency "
              f"{eff:.3f} = {intra_GBps:.4g} GB/s, alpha {ALPHA_US[kind]:.3g} us [{info.source}]")
    if c.nvlink_domain != cluster.gpus_per_node:
        source += (f". One NVLink domain of {g} GPUs ({c.nvlink_domain // cluster.gpus_per_node} "
                   "hosts) per node")
    nvls = None
    if c.nvls:
        nvls = Link.from_GBps(intra_GBps * info.nvls_efficiency, ALPHA_US[kind])
        source += (f". NVLS: {intra_GBps:.4g} GB/s x nvlsEfficiency {info.nvls_efficiency:g} = "
                   f"{intra_GBps * info.nvls_efficiency:.4g} GB/s")
    if c.nodes > 1 or c.nic_Gbps > 0:
        inter_GBps = c.nic_GBps * c.nic_efficiency
        inter = Link.from_GBps(inter_GBps, ALPHA_US[c.net])
        fabric = f" x fabric {c.fabric_efficiency:g}" if c.fabric_efficiency != 1 else ""
        eff = (f"{c.nic_efficiency:.3f} (calibrated on a run of this machine)"
               if "nic_efficiency" in
               (c.calibrated or {}) else f"{net.efficiency:.3f}{fabric}")
        grouped = (f" ({cluster.nics_per_node} NICs grouped into {c.nics_per_node})"
                   if c.nics_per_node != cluster.nics_per_node * c.nvlink_domain
                   // cluster.gpus_per_node else "")
        source += (f". Inter: {c.nic_Gbps:g} Gb/s {c.net}{grouped} = {c.nic_GBps:g} GB/s x {eff}"
                   f" = {inter_GBps:.4g} GB/s, alpha {ALPHA_US[c.net]:.3g} us [{net.source}]")
    else:
        inter = intra
    if c.sharp:
        source += f". {SHARP_SOURCE}"
    tiers = ()
    # in the view's nodes (an NVLink domain is one): Cluster.nccl_view
    if c.fabric is not None:
        tiers = c.fabric.tiers(max(c.nics_per_node, 1))
        source += f". Fabric: {cluster.fabric.describe()} (collsim.machine.fabric)"
    elif c.nodes > 1 or c.nic_Gbps > 0:
        source += ". Fabric: non-blocking (only the NICs limit)"
    slow = tuple((n * c.nics_per_node + k, c.nic_Gbps / r) for n, k, r in c.degraded_nics)
    source += "".join(f". node{n}.nic{k} at {r:g} Gb/s (degraded)"
                      for n, k, r in cluster.degraded_nics)
    source += f". {cluster.per_call_us:g} us per call"
    if c.source:
        source = f"{c.source}. {source}"
    return Topology(c.nodes, g, intra, inter=inter, nics_per_node=max(c.nics_per_node, 1),
                    name=c.name, source=source, nvls=nvls, call_us=cluster.per_call_us,
                    links_per_pair=pairs, sharp_us=SHARP_US if c.sharp else None, fabric=tiers,
                    slow_nics=slow)
