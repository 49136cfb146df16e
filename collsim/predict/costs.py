"""What a transfer costs on a described cluster under NCCL's algorithm and protocol: the simulator's machine for
``predict-nccl``, calibrated on real measurements (``collsim.machine.protocols`` says what each cost does).

The numbers are those of collsim's fitted model on the cluster (``collsim.fitted.rescale.cluster_params``: the
2 x H200 fit, ``hopper_params.json``, rescaled by the cluster's hardware and calibrated on the public logs L01
and L15). For NCCL's (algorithm, protocol) on each link class (NVLink or PCIe inside a node, the NICs between
nodes, the NVSwitch port for NVLS):

- latency: the path's per-hop latency (NCCL's own, ``collsim.nccl.constants``; across nodes at least the
  transport's step, ``collsim.fitted.rescale.RDMA_STEP_US``);
- overhead: the path's fixed cost per pipeline step and its barrier cost for the channel's threads;
- channel rate: what one channel moves (``chan_GBps``, wire bytes);
- port: the link class's capacity per GPU port (NVLink, NVLS) or per NIC, shared by the channels;
- per call: the path's base cost (``Topology.call_us``).

L2 (``l2_factor``): when NCCL's receive buffers overflow the GPU's L2 the bytes take (1 + spill) longer; when
the user buffer is still in L2 from the last call, ``warm`` times as long (the fitted model's terms).
"""
from __future__ import annotations

from dataclasses import replace

from collsim.fitted.layout import Config, layout
from collsim.fitted.params import OPTIONAL, ModelParams
from collsim.machine.cluster import Cluster
from collsim.machine.protocols import PathCosts, ProtocolCosts
from collsim.machine.topology import Link, Topology
from collsim.nccl.chunking import EFFICIENCY

WARP = 32


def _path(params: ModelParams, link: str, algo: str, proto: str, threads: int, factor: float) -> PathCosts:
    p = params.path(link, algo, proto)
    sync = p.get("warp_us", OPTIONAL["warp_us"]) * threads / WARP
    return PathCosts(p["hop_us"] * 1e-6, (p["step_us"] + sync) * 1e-6, factor / (p["chan_GBps"] * 1e9))


def l2_factor(params: ModelParams, algo: str, proto: str, nbytes: int, cfg: Config) -> float:
    """How much longer the bytes take at this size for the L2 (module docstring), 1 when they fit as measured."""
    if algo in ("NVLS", "NVLSTree"):
        return 1.0
    lay = layout(algo, proto, [nbytes], cfg, params.channels, params.nvls_channels)
    main = params.path(lay.main, algo, proto)
    spill = main.get("spill", OPTIONAL["spill"]) * float(~params.in_l2(lay.footprint)[0])
    warm = main.get("warm", OPTIONAL["warm"]) if bool(params.in_l2(lay.user_footprint)[0]) else 1.0
    return (1.0 + spill) * warm


def nccl_topology(cluster: Cluster, params: ModelParams, algo: str, proto: str, threads: int,
                  factor: float = 1.0) -> Topology:
    """The simulator's machine for NCCL's ``algo``/``proto`` on ``cluster`` with ``threads`` per channel; every
    byte ``factor`` times as long (``l2_factor``)."""
    intra = "pcie" if cluster.intra == "pcie" else "nvlink"
    nvls = algo in ("NVLS", "NVLSTree")
    main = "nvls" if nvls else intra
    gbps = lambda k: params.link_GBps[k] * 1e9 / factor   # noqa: E731 - bytes/s of a port
    inner = _path(params, intra, "Tree" if nvls else algo, "Simple" if nvls else proto, threads, factor)
    inter = _path(params, "net", algo, proto, threads, factor) if cluster.nodes > 1 else inner
    costs = ProtocolCosts(f"{algo}/{proto}", EFFICIENCY[proto], 0, inner, inter,
                          _path(params, "nvls", algo, "Simple", threads, factor) if nvls else None)
    link_in = Link(inner.latency, 1.0 / gbps(intra))
    link_net = Link(inter.latency, 1.0 / gbps("net")) if cluster.nodes > 1 else link_in
    link_nvls = Link(costs.nvls.latency, 1.0 / gbps("nvls")) if nvls else None
    base = params.path(main, algo, "Simple" if nvls else proto)["base_us"]
    return Topology(cluster.nodes, cluster.gpus_per_node, link_in, link_net, max(cluster.nics_per_node, 1),
                    cluster.name, f"{cluster.describe()}: {algo}/{proto} costs of collsim's calibrated model",
                    link_nvls, float(base), protocols=(costs,))


def with_window(topology: Topology, window: int) -> Topology:
    """``topology`` whose one protocol keeps ``window`` transfers in flight per connection."""
    p = topology.protocols[0]
    return replace(topology, protocols=(replace(p, window=int(window)),))

