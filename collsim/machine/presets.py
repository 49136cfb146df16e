"""Preset machines: cluster descriptions (``CLUSTERS``, ``collsim.machine.cluster.Cluster``) and the
simulator's topologies derived from them (``PRESETS``, ``get_preset``).

Every number comes from ``collsim.machine.hardware`` (GPU and network tables with their sources)
through ``collsim.machine.cluster.to_topology``; a preset adds only the machine's shape, and its
``source`` says which system it describes. ``--nodes N`` (``get_preset(name, nodes=N)``,
``load_cluster(name, nodes=N)``) resizes any preset; NICs stay per node.
"""
from __future__ import annotations

from collsim.errors import CollsimError, require_int
from collsim.machine.cluster import Cluster, to_topology
from collsim.machine.topology import Topology

_RAIL = "one NIC per GPU, rail-optimised (DGX/SuperPOD reference architecture)"


def _clusters() -> dict[str, Cluster]:
    out = {
        "h100-nvlink": Cluster("H100", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib", name="h100-nvlink",
                               source=f"one HGX/DGX H100 node: 8 x H100 SXM on NVSwitch, 8 x 400 Gb/s NDR, {_RAIL}"),
        "h200-nvlink": Cluster("H200", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib", name="h200-nvlink",
                               source=f"one HGX H200 node: 8 x H200 SXM on NVSwitch, 8 x 400 Gb/s NDR, {_RAIL}"),
        "a100-nvlink": Cluster("A100", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=200, net="ib", name="a100-nvlink",
                               source="one DGX A100 node: 8 x A100 SXM on NVSwitch (no NVLink SHARP), 8 x 200 Gb/s "
                                      "HDR (A100 whitepaper 13.3)"),
        "b200-nvlink": Cluster("B200", 8, 1, "nvswitch", nics_per_node=8, nic_Gbps=400, net="ib", name="b200-nvlink",
                               source="one HGX B200 node: 8 x B200 on NVSwitch, 8 x CX-7 400 Gb/s NDR "
                                      "(mlcommons inference v6.0 closed/Nebius/systems/nebius_b200_n1.json)"),
        "a100x4-nvlink": Cluster("A100", 4, 1, "nvlink", nics_per_node=4, nic_Gbps=200, net="ib", name="a100x4-nvlink",
                                 source="one HGX A100 4-GPU board: 4 x A100 linked directly by NVLink, 12 links per "
                                        "GPU over 3 peers (4 links a pair: derived, no published count)"),
        "pcie-box": Cluster("A100", 8, 1, "pcie", nics_per_node=1, nic_Gbps=100, net="tcp", name="pcie-box",
                            source="8 A100 on PCIe Gen4 without NVLink, one 100 GbE NIC through TCP sockets"),
    }
    for gbit in (100, 200, 400):
        out[f"ib-{gbit}g"] = Cluster("H100", 8, 4, "nvswitch", nics_per_node=8, nic_Gbps=gbit, net="ib",
                                     name=f"ib-{gbit}g",
                                     source=f"4 nodes of 8 H100 SXM, {gbit} Gb/s InfiniBand, {_RAIL}")
        out[f"roce-{gbit}g"] = Cluster("H100", 8, 4, "nvswitch", nics_per_node=8, nic_Gbps=gbit, net="roce",
                                       name=f"roce-{gbit}g",
                                       source=f"4 nodes of 8 H100 SXM, {gbit} Gb/s RoCE (GPUDirect RDMA), {_RAIL}")
        out[f"eth-{gbit}g"] = Cluster("H100", 8, 4, "nvswitch", nics_per_node=1, nic_Gbps=gbit, net="tcp",
                                      name=f"eth-{gbit}g",
                                      source=f"4 nodes of 8 H100 SXM, one {gbit} GbE NIC per node shared "
                                             "by its 8 GPUs, TCP sockets")
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
