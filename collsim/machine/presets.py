"""Preset machines: cluster descriptions (``CLUSTERS``, ``collsim.machine.cluster.Cluster``) and the
simulator's topologies derived from them (``PRESETS``, ``get_preset``).

Every number comes from ``collsim.machine.hardware`` (GPU, PCIe and network tables with their
sources) through ``collsim.machine.linkview.to_topology``; a preset adds only the machine's shape,
and its ``source`` says which system it describes and where that shape is published, and what fabric
above the NICs it assumes: rail-optimised leaves as the DGX SuperPOD builds them (1:1), or
non-blocking (only the NICs limit). ``--nodes N`` (``get_preset(name, nodes=N)``,
``load_cluster(name, nodes=N)``) resizes any preset; NICs stay per node.
"""
from __future__ import annotations

from collsim.errors import CollsimError, require_int
from collsim.machine.cluster import Cluster
from collsim.machine.fabric import Fabric
from collsim.machine.linkview import to_topology
from collsim.machine.topology import Topology

_RAIL = ("one NIC per GPU, rail-optimised leaves of 32 nodes, 1:1 (non-blocking): the DGX SuperPOD "
         "layout (collsim.machine.fabric.SUPERPOD_SOURCE)")
# collsim.machine.fabric.SUPERPOD_SOURCE: scalable units of 32 nodes, a leaf per rail, 1:1
_SUPERPOD = Fabric(32)
_AWS = ("AWS EC2 accelerated-computing instance specifications "
        "(docs.aws.amazon.com/ec2/latest/instancetypes/ac.html)")


def _c(name: str, *args, source: str, **kw) -> Cluster:
    """A preset; one that says it is rail-optimised has the DGX SuperPOD's fabric (``_RAIL``), any
    other a non-blocking one (only the NICs limit), which its description says."""
    if _RAIL in source and "fabric" not in kw:
        kw["fabric"] = _SUPERPOD
    return Cluster(*args, name=name, source=source, **kw)


def _clusters() -> dict[str, Cluster]:
    presets = [
        _c("h100-nvlink", "H100", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source=f"one HGX/DGX H100 node: 8 x H100 SXM on NVSwitch, 8 x 400 Gb/s NDR, {_RAIL}"),
        _c("h200-nvlink", "H200", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source=f"one HGX H200 node: 8 x H200 SXM on NVSwitch, 8 x 400 Gb/s NDR, {_RAIL}"),
        _c("a100-nvlink", "A100", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=200, net="ib",
           source="one DGX A100 node: 8 x A100 SXM on NVSwitch (no NVLink SHARP), 8 x 200 Gb/s HDR "
                  "(A100 whitepaper 13.3)"),
        _c("b200-nvlink", "B200", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source="one HGX B200 node: 8 x B200 on NVSwitch, 8 x CX-7 400 Gb/s NDR (mlcommons "
                  "inference v6.0 closed/Nebius/systems/nebius_b200_n1.json)"),
        _c("a100x4-nvlink", "A100", 4, 1, "nvlink", nics_per_node=4, nic_Gbps=200, net="ib",
           source="one HGX A100 4-GPU board: 4 x A100 linked directly by NVLink, 12 links per GPU "
                  "over 3 peers (4 links a pair: derived, no published count)"),
        _c("pcie-box", "A100", 8, 1, "pcie", nics_per_node=1, nic_Gbps=100, net="tcp",
           source="8 A100 on PCIe Gen4 without NVLink, one 100 GbE NIC through TCP sockets"),
        _c("dgx-a100", "A100", 8, 2, "nvswitch", nics_per_node=8, nic_Gbps=200, net="ib",
           fabric=Fabric(20),
           source="DGX A100 (datasheet: 8 x A100 SXM4 on 6 NVSwitches, 8 x 200 Gb/s HDR ConnectX-6 "
                  "for compute), one NIC per GPU, rail-optimised leaves of 20 nodes, 1:1 (DGX "
                  "SuperPOD A100 reference architecture: scalable units of 20 DGX A100, a 40-port "
                  "HDR leaf per rail, 20 ports down, 20 up)"),
        _c("dgx-h100", "H100", 8, 2, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source="DGX H100 (datasheet: 8 x H100 SXM5, 4 NVSwitches, 8 x 400 Gb/s ConnectX-7 for "
                  f"compute), {_RAIL}"),
        _c("dgx-h800", "H800", 8, 2, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source="HGX H800 nodes as DeepSeek-V3's technical report describes them "
                  "(arXiv:2412.19437 3.2.2: NVLink 160 GB/s, InfiniBand 50 GB/s per GPU, 8 GPUs a "
                  "node)"),
        _c("h20", "H20", 8, 2, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib",
           source="HGX H20 nodes: 8 x H20 on NVSwitch (900 GB/s NVLink); 8 x 400 Gb/s NICs "
                  f"assumed, {_RAIL}"),
        _c("a100-pcie-box", "A100-PCIE", 8, 1, "pcie",
           source="8 x A100 PCIe on PCIe Gen4 with peer-to-peer and no NVLink bridges (a common "
                  "cloud and university server), the layout of collsim.nccl.graphs (GPU pairs "
                  "under PCIe switches)"),
        _c("l40s-box", "L40S", 8, 1, "pcie",
           source="8 x L40S on PCIe Gen4 with peer-to-peer (NVIDIA L40S datasheet: no NVLink), the "
                  "layout of collsim.nccl.graphs"),
        _c("rtx4090-box", "RTX4090", 8, 1, "pcie",
           source="8 x GeForce RTX 4090 on PCIe Gen4: no NVLink, no peer-to-peer (the driver "
                  "refuses it), so NCCL's SHM transport through host memory"),
        _c("rtx3090-pair", "RTX3090", 2, 1, "nvlink",
           source="2 x GeForce RTX 3090 joined by an NVLink bridge (GA102 whitepaper: 112.5 GB/s "
                  "bidirectional)"),
        _c("p4d", "A100", 8, 2, "nvswitch", nics_per_node=4, nic_Gbps=100, net="efa",
           source=f"AWS p4d.24xlarge ({_AWS}: 8 x A100 40GB SXM on NVSwitch, 400 Gbps EFA as 4 x "
                  "100 Gbps, GPUDirect RDMA)"),
        _c("p5", "H100", 8, 2, "nvswitch", nics_per_node=32, nic_Gbps=100, net="efa",
           source=f"AWS p5.48xlarge ({_AWS}: 8 x H100 SXM on NVSwitch, 3200 Gbps EFA as 32 network "
                  "cards of 100 Gbps, GPUDirect RDMA; aws-ofi-nccl groups 4 per GPU)"),
        _c("a3-mega", "H100", 8, 2, "nvswitch", nics_per_node=8, nic_Gbps=200, net="tcpx",
           source="Google Cloud A3 Mega (a3-megagpu-8g: 8 x H100 SXM, 8 x 200 Gbps NICs with "
                  "GPUDirect-TCPXO; cloud.google.com/compute/docs/gpus/gpu-network-bandwidth)"),
        _c("gb200-nvl72", "GB200", 4, 18, "nvswitch", nics_per_node=4, nic_Gbps=400, net="ib",
           nvlink_domain=72,
           source="one GB200 NVL72 rack (NVIDIA GB200 NVL72 page: 18 compute trays of 4 GPUs in "
                  "one 72-GPU NVLink domain through 9 NVLink Switch trays, a 400 Gb/s ConnectX-7 "
                  "per GPU)"),
        _c("gh200", "GH200", 1, 2, nics_per_node=1, nic_Gbps=400, net="ib",
           source="GH200 nodes of one superchip each (NVIDIA MGX GH200 reference: one ConnectX-7 "
                  "400 Gb/s per superchip, no NVLink between nodes)"),
        _c("h100-sharp", "H100", 8, 4, "nvswitch", nics_per_node=8, nic_Gbps=400,
           net="ib", sharp=True,
           source="4 DGX H100 on Quantum-2 NDR switches with SHARP (NVIDIA DGX SuperPOD H100 "
                  f"reference architecture), {_RAIL}"),
    ]
    out = {c.name: c for c in presets}
    for gbit in (100, 200, 400):
        out[f"ib-{gbit}g"] = _c(f"ib-{gbit}g", "H100", 8, 4, "nvswitch", nics_per_node=8,
                                nic_Gbps=gbit, net="ib",
                                source=f"4 nodes of 8 H100 SXM, {gbit} Gb/s InfiniBand, {_RAIL}")
        out[f"roce-{gbit}g"] = _c(f"roce-{gbit}g", "H100", 8, 4, "nvswitch", nics_per_node=8,
                                  nic_Gbps=gbit, net="roce",
                                  source=f"4 nodes of 8 H100 SXM, {gbit} Gb/s RoCE (GPUDirect "
                                         f"RDMA), {_RAIL}")
        out[f"eth-{gbit}g"] = _c(f"eth-{gbit}g", "H100", 8, 4, "nvswitch", nics_per_node=1,
                                 nic_Gbps=gbit, net="tcp",
                                 source=f"4 nodes of 8 H100 SXM, one {gbit} GbE NIC per node "
                                        "shared by its 8 GPUs, TCP sockets")
    return out


CLUSTERS: dict[str, Cluster] = _clusters()
PRESETS: dict[str, Topology] = {name: to_topology(c) for name, c in CLUSTERS.items()}


def get_preset(name: str, nodes: int | None = None, gpus_per_node: int | None = None) -> Topology:
    """Preset ``name``'s topology resized to ``nodes`` x ``gpus_per_node`` (None keeps the preset's;
    ``Cluster.resized``)."""
    if name not in PRESETS:
        raise CollsimError(f"unknown preset {name!r:.40} (known: {', '.join(PRESETS)})")
    if nodes is not None:
        require_int(f"preset {name}: nodes", nodes, 1)
    if gpus_per_node is not None:
        require_int(f"preset {name}: gpus_per_node", gpus_per_node, 1)
    return to_topology(CLUSTERS[name].resized(nodes, gpus_per_node))
