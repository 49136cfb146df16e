"""What a transfer costs on a described cluster under NCCL's algorithm and protocol: the simulator's
machine for ``predict-nccl``, calibrated on real measurements (``collsim.machine.protocols`` says
what each cost does).

Everything comes from collsim's model parameters for the cluster
(``collsim.fitted.rescale.cluster_params``: the 2 x H200 fit, ``hopper_params.json``, rescaled by
the cluster's cited hardware, ``collsim.machine.hardware``), for NCCL's (algorithm, protocol) on
each link class (NVLink or PCIe inside a node, the NICs between nodes, the NVSwitch port for NVLS):

- ports: a GPU's NVLink (PCIe) and NVLS port at the link cap the parameters hold for the cluster,
  each NIC at its network's rate (``collsim.machine.cluster.to_topology``);
- channel rate: each channel's share of the shared rate of the channels that cross a GPU's port
  (``channel_GBps``: all of the run's, or (G-1)/G of them for a rail ring across nodes, which leaves
  each node from one GPU);
- latency: the path's per-hop latency (NCCL's own, ``collsim.nccl.tuning.HW_LAT``; across nodes
  NCCL's NET latency and the proxy's time per network transfer, ``PROXY_US``);
- overhead: the path's fixed cost per pipeline step and its barrier cost for the channel's threads;
- fill (Simple only): the share of a slice's time at the channel's rate before the next step can use
  it (a Simple slice is signalled whole; LL and LL128 flag every line, which the next step reads as
  it lands);
- per call: the path's base cost (``Topology.call_us``);
- CollNet: the GPUs' paths of the tree (``fitted_algo``: no log runs CollNet) with NCCL's own
  CollNet hop latency (3.7 us Direct, 2.8 Chain on NVLink), NCCL's CollNet network latency split
  over the two NIC crossings around the switches' SHARP latency (``_net_path``).

L2 (``l2_factor``): when NCCL's receive buffers overflow the GPU's L2 the bytes take (1 + spill)
longer; when the user buffer is still in L2 from the last call, ``warm`` times as long (the fitted
model's terms).
"""
from __future__ import annotations

from dataclasses import replace

from collsim.fitted.layout import Config, layout
from collsim.fitted.model import shared_rate
from collsim.fitted.params import NVLS_PRIOR, OPTIONAL, ModelParams
from collsim.machine.cluster import Cluster, to_topology
from collsim.machine.networks import SHARP_US
from collsim.machine.protocols import PathCosts, ProtocolCosts
from collsim.machine.topology import Link, Topology
from collsim.nccl import PROTOS
from collsim.nccl.chunking import EFFICIENCY
from collsim.nccl.constants import constants
from collsim.predict.schedules import COLLNET

WARP = 32
# The proxy thread's time per network send or receive (us): NCCL's proxy posts every network
# transfer of all a
# GPU's channels one after another (src/proxy.cc), so a step of C channels costs it C of these.
# Calibrated on
# L15 (2 x 8 H100, 8 x 400G NDR, 24 channels), the one multi-node calibration log: the median |time
# error|
# over its 14 sizes (``tests/predict/test_predict.py``).
PROXY_US = 0.7
# NCCL 2.28's NET hop latencies per algorithm (tuning.cc:162-167@v2.28.9)
NET_LAT = constants("2.28").hw_lat["net"]
# and NVLink, PCI (tuning.cc:150-161)
INTRA_LAT = {k: constants("2.28").hw_lat[k] for k in ("nvlink", "pcie")}


def fitted_algo(algo: str) -> str:
    """The algorithm whose fitted paths stand for ``algo``: CollNet is not fitted (no calibration
    log runs it), so its GPUs' paths are the tree's, whose warps split between reducing up and
    broadcasting down as CollNet's do (NCCL's CollNetChain runs the tree's chain,
    all_reduce.h:628-660@v2.28.9); PAT and the p2p operations (no log runs them) the ring's; the
    rest are their own."""
    return "Tree" if algo in COLLNET else "Ring" if algo in ("PAT", "P2P") else algo


def channel_GBps(params: ModelParams, link: str, algo: str, proto: str, channels: int) -> float:
    """What one of ``channels`` channels moves (wire GB/s) when they all share one port of class
    ``link``: their share of the fitted shared rate (``collsim.fitted.model.shared_rate``: each
    channel alone moves chan_GBps, together they approach the link's cap). A channel keeps its share
    while the others pause for their step costs: on 2 x H200 the time of a channel is its bytes at
    that share plus its steps' costs, one after the other (data/h200x2/ACCURACY.md, the model's
    terms)."""
    chan = params.path(link, fitted_algo(algo), proto)["chan_GBps"]
    n = max(int(channels), 1)
    return float(shared_rate(n * chan, params.link_GBps[link], params.link_exp)) / n


def _path(params: ModelParams, link: str, algo: str, proto: str, threads: int, factor: float,
          channels: int) -> PathCosts:
    p = params.path(link, fitted_algo(algo), proto)
    sync = p.get("warp_us", OPTIONAL["warp_us"]) * threads / WARP
    # NCCL's own
    hop = INTRA_LAT[link][algo][2] if algo in COLLNET and link in INTRA_LAT else p["hop_us"]
    return PathCosts(hop * 1e-6, (p["step_us"] + sync) * 1e-6,
                     factor / (channel_GBps(params, link, algo, proto, channels) * 1e9),
                     fill=float(p["fill"]) if proto == "Simple" else 0.0)


def _net_path(params: ModelParams, cluster: Cluster, algo: str, proto: str, threads: int,
              factor: float) -> PathCosts:
    """The network's costs: over RDMA NCCL's own per-hop latency (tuning.cc:149-168; NVLSTree's
    network latency of its NVLS constants), or the transport's own where it is slower
    (``Net.hop_us``: EFA), and the proxy's time per network transfer (``PROXY_US``); over TCP
    (sockets, TCPX) the socket transport's step, measured on our emulated nodes
    (``collsim.fitted.rescale.socket_step_us``), or the transport's own (``Net.hop_us``); a hop
    fitted on a run of the machine (``Cluster.calibrated``) replaces them. CollNet: NCCL charges its
    network once a call, 31 us (Direct), 30 (Chain), 18 (NVLS across nodes) for the heads' round
    trip through the switches (tuning.cc:164-165,386-392); the simulation pays it as two NIC
    crossings of (that - ``Topology.sharp_us``) / 2 each and the switches' own latency between
    them."""
    p = _path(params, "net", algo, proto, threads, factor, 1)
    hop = cluster.hop_us
    if cluster.net_info.tcp:                             # every step a TCP exchange
        return p if hop is None else replace(p, latency=hop * 1e-6)
    lat = NVLS_PRIOR[algo][1] if algo in NVLS_PRIOR else NET_LAT[algo][PROTOS.index(proto)]
    if algo in COLLNET or algo == "NVLS":                      # NVLS across nodes runs with CollNet
        lat = max(0.0, (lat - SHARP_US) / 2)
    # fitted on a run of this machine: it is the hop
    if "hop_us" in (cluster.calibrated or {}):
        lat = hop
    elif hop is not None:
        lat = max(lat, hop)
    return PathCosts(lat * 1e-6, p.overhead, p.channel_beta, PROXY_US * 1e-6, p.fill)


def tree_ceiling_GBps(setup, proto: str) -> float:
    """NCCL's per-channel ceiling of Tree beyond two nodes, nccl-tests busbw GB/s (inf where
    none): the tree's search channels x perChMaxTreeBw (Simple) or perChMaxTreeLL128Bw (LL128) of
    the architecture, column N4 (tuning.cc:181-192,314-316@v2.28.9). One CTA a channel splits its
    threads between reducing up and broadcasting down (device/all_reduce.h:149-161, runTreeSplit),
    and from 3 nodes on an interior rank serves its parent, two children across the network and its
    chain from it: sjeaugey (NVIDIA/nccl#1649) says Tree needs 32 SMs for the peak 16 reach with
    NVLSTree, so NCCL's 16 channels stop near half the NICs; these caps are NVIDIA's figures of it.
    On two nodes every rank has one network peer a tree (the root one child), and a public 2 x 8
    H100 run beats NCCL's N2 cap (nccl-tests#297: 362 GB/s against 8 x 41.4): no ceiling there."""
    k = constants(setup.version)
    table = {"Simple": k.tree_bw, "LL128": k.tree_ll128_bw}.get(proto)
    if table is None or setup.n_nodes <= 2:
        return float("inf")
    return setup.tree.channels * table[k.arch_index(setup.compcap)][2]


def l2_factor(params: ModelParams, algo: str, proto: str, nbytes: int, cfg: Config) -> float:
    """How much longer the bytes take at this size for the L2 (module docstring), 1 when they fit as
    measured."""
    if algo in ("NVLS", "NVLSTree") or algo in COLLNET:       # the layout knows Ring and Tree only
        return 1.0
    lay = layout(algo, proto, [nbytes], cfg, params.channels, params.nvls_channels)
    main = params.path(lay.main, algo, proto)
    spill = main.get("spill", OPTIONAL["spill"]) * float(~params.in_l2(lay.footprint)[0])
    warm = main.get("warm", OPTIONAL["warm"]) if bool(params.in_l2(lay.user_footprint)[0]) else 1.0
    return (1.0 + spill) * warm


def nccl_topology(cluster: Cluster, params: ModelParams, algo: str, proto: str, threads: int,
                  factor: float = 1.0, channels: int | None = None) -> Topology:
    """The simulator's machine for NCCL's ``algo``/``proto`` on ``cluster`` with ``channels``
    channels (default the params') of ``threads`` threads; every byte ``factor`` times as long
    (``l2_factor``). A GPU's port moves the fitted link cap (``ModelParams.link_GBps``, which
    ``cluster_params`` sets from the cited hardware), each channel on it its share
    (``channel_GBps``)."""
    intra = "pcie" if cluster.intra == "pcie" else "nvlink"
    nvls = algo in ("NVLS", "NVLSTree")
    main = "nvls" if nvls else intra
    # all cross a GPU's port
    n = channels or (params.nvls_channels if nvls else params.channels)
    g = cluster.gpus_per_node
    # a rail ring leaves each node from one GPU per channel
    if algo == "Ring" and cluster.nodes > 1:
        n = max(1, -(-n * (g - 1) // g))
    inner = _path(params, intra, "Tree" if nvls else algo, "Simple" if nvls else proto, threads,
                  factor, n)
    inter = _net_path(params, cluster, algo, proto, threads, factor) if cluster.nodes > 1 else inner
    costs = ProtocolCosts(f"{algo}/{proto}", EFFICIENCY[proto], 0, inner, inter,
                          _path(params, "nvls", algo, "Simple", threads, factor, n) if nvls
                          else None)
    ports = to_topology(cluster)

    def fitted(link, lat):
        return Link(lat, factor / (params.link_GBps[link] * 1e9))

    def slow(link, lat):   # a port at the machine's rate
        return Link(lat, link.beta * factor)

    base = params.path(main, fitted_algo(algo), "Simple" if nvls else proto)["base_us"]
    return replace(ports, intra=fitted(intra, inner.latency),
                   inter=slow(ports.inter, inter.latency),
                   nvls=fitted("nvls", costs.nvls.latency) if nvls and ports.nvls else ports.nvls,
                   call_us=float(base), protocols=(costs,),
                   source=f"{ports.source}; {algo}/{proto} costs of collsim's calibrated model")


def with_window(topology: Topology, window: int, step_bytes: int = 0) -> Topology:
    """``topology`` whose one protocol keeps ``window`` transfers in flight per connection and,
    where ``step_bytes`` > 0, pipelines each transfer in steps of that many bytes (the receiver's
    fill covers one: ``PathCosts.fill_bytes``)."""
    p = topology.protocols[0]
    if step_bytes:
        p = replace(p, **{k: replace(getattr(p, k), fill_bytes=float(step_bytes))
                          for k in ("intra", "inter", "nvls") if getattr(p, k) is not None})
    return replace(topology, protocols=(replace(p, window=int(window)),))
