"""collsim's NCCL model on a machine it was not measured on: the 2 x H200 fit rescaled by what the
cluster's hardware brings.

``cluster_params(cluster)`` starts from ``sim_params.json``: ``hopper_params.json`` (package data,
the same file as data/h200x2/params.json: ``collsim fit`` of the closed-form model on the 2 x H200
runner sweeps, graph and eager, emulated socket nodes and NCCL_MAX_NCHANNELS sweeps, which set how
channels share NVLink; the command is in data/h200x2/ACCURACY.md) with its NVLink paths'
per-transfer costs re-fitted with the simulation in the loop on our 2 x H200 and L01/L15
(``collsim.fit.simulated``; ``python scripts/fit_simulation.py -o collsim/fitted/sim_params.json``).
It changes only what differs physically:

* NVLink (or PCIe) bandwidth: every intra-node channel rate and the shared link cap scale so that a
  Ring Simple AllReduce on the cluster's coll channels plateaus at the GPU's NVLink (or PCIe)
  bandwidth x ``Cluster.intra_efficiency`` (``collsim.machine.hardware``: 368 GB/s busbw on 8 x
  H100, calibration log L01; PCIe with and without peer-to-peer from the PCIe logs of data/public).
* GPU latencies (base, per step, per hop, barriers): x ``GPU.latency_scale`` (SM clock ratio) x
  ``Cluster.step_scale`` (1 unless fitted on a run of the machine, ``collsim fit --cluster``).
* Network: one NIC moves ``nic_GBps x Cluster.nic_efficiency`` (the network's efficiency x
  fabric_efficiency, L15 for InfiniBand, or the value fitted on a run of the machine); a channel
  through a NIC
  moves up to NCCL's per-channel inter-node speed (48 GB/s, search.cc:982 sm90SpeedArrayInter);
  per network step NCCL's NET latency (tuning.cc:149-168), at least the transport's own step
  (``RDMA_STEP_US`` from L15, the one multi-node calibration log, for ib, roce and efa; sockets and
  TCPX: ``socket_step_us``).
* NVLS: each GPU's port into the switch moves NVLink x ring efficiency x nvlsEfficiency
  (tuning.cc:134-139); NCCL's NVLS latencies.
* nccl-tests' eager floor: ``LAUNCH_US`` of host time per call per GPU its process launches on.
"""
from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

from collsim.core.collective import ALLREDUCE
from collsim.fitted.layout import Config
from collsim.fitted.model import predict
from collsim.fitted.params import NVLS_PRIOR, ModelParams, params_from_dict
from collsim.machine.cluster import Cluster
from collsim.machine.hardware import GPUS
from collsim.nccl import PROTOS
from collsim.nccl.tuning import HW_LAT

# nccl-tests' eager host floor per call, fixed + per GPU its process drives: 34.9 us with -g 8 (L01:
# flat
# 34.5-36.5 us from 8 B to 256 KiB, where its GPUs need less) and 14.52 us with -g 2 (our 2 x H200,
# data/h200x2/nccl-tests/eager_*.log, median from 8 B to 64 KiB, where graph timing shows 5.8 us):
# (34.9 - 14.52) / 6 = 3.40 us per GPU, 14.52 - 2 x 3.40 = 7.73 us fixed.
LAUNCH_US = {"nccl-tests-eager": (14.52 - 2 * (34.9 - 14.52) / 6, (34.9 - 14.52) / 6)}
# Shortest time of one network step, by transport, under NCCL's NET constants when those are larger.
# RDMA (ib, roce): 25 us, from L15 (NCCL_MIN_CTAS=24, 2 QPs per connection; the one multi-node
# calibration
# log): of 20 to 35 us in steps of 5, the smallest median |time error| over its 14 sizes with a p90
# under
# 25% (3.7% / 23.9%; 20 us gives 3.4% / 30%). Its 1-8 MiB Ring LL128 points alone would ask for 43
# us (L01's 8-GPU
# ring of the same GPUs matches NCCL's 1.9 us per NVLink hop, so the rest is the 2 network steps),
# its
# 16-64 MiB points for less: this additive model does not overlap network latency with transfers.
# Sockets (tcp): what our emulated 2-node runs over loopback took per network step (the base
# parameters' socket path, net/Ring/LL: (base + 2 hops) / 2 network steps; ``socket_step_us``).
RDMA_STEP_US = 25.0


def socket_step_us(base: ModelParams) -> float:
    """One network step of NCCL's socket transport in ``base``'s socket path (us)."""
    path = base.path("net", "Ring", "LL")
    return (path["base_us"] + 2 * path["hop_us"]) / 2


NCCL_CHANNEL_INTER_GBPS = 48.0
REFERENCE_CHANNELS = 24   # coll channels of the fitted 2 x H200 runs
# NVLS on 8 x H100 at 8 GiB: ~480 GB/s busbw (sjeaugey, NVIDIA/nccl-tests#212; Azure ND H100 v5:
# 478.9),
# through each GPU's switch port 480 x 9/14 GB/s (busbw = port x 2(n-1)/(n+1), nccl-tests PR 239).
NVLS_BUSBW_GBPS = 480.0
# NCCL's per-channel ceiling of NVLSTree on 2 nodes (tuning.cc:193-198 perChMaxNVLSTreeBws: Hopper
# 57.7,
# Blackwell 96.0 GB/s busbw per NVLS head): the head that feeds both the switch and the network.
NVLSTREE_PER_CHANNEL_GBPS = {False: 57.7, True: 96.0}
# hopper_params.json re-fitted for the simulation (scripts/fit_simulation.py writes it,
# collsim.fit.simulated)
SIM_PARAMS = "sim_params.json"
PLATEAU_BYTES = 8 << 30   # where L01 measured the ring plateau
# fixed-point rounds of _at_plateau (a rate behind a shared cap converges slower)
PLATEAU_ROUNDS = 30


def nvls_relative(cluster: Cluster) -> float:
    """The cluster's NVLS port rate relative to an H100's: NVLink x ring efficiency x
    nvlsEfficiency."""
    h100, gpu = GPUS["H100"], cluster.gpu_info
    return (cluster.nvlink_GBps * gpu.ring_efficiency * gpu.nvls_efficiency
            / (h100.nvlink_GBps * h100.ring_efficiency * h100.nvls_efficiency))


def hopper_params(name: str = "hopper_params.json") -> ModelParams:
    """The packaged 2 x H200 fit of the closed-form model (``hopper_params.json``), or another
    packaged file of ``collsim.fitted`` (``SIM_PARAMS``)."""
    text = resources.files("collsim.fitted").joinpath(name).read_text()
    return params_from_dict(json.loads(text), f"collsim/fitted/{name}")


def simulation_params() -> ModelParams:
    """What ``cluster_params`` starts from: ``SIM_PARAMS``, the closed-form fit with the
    per-transfer costs of its NVLink paths re-fitted with the simulation in the loop
    (``collsim.fit.simulated``)."""
    return hopper_params(SIM_PARAMS)


def cluster_params(cluster: Cluster, channels: int | None = None, nvls_channels: int = 16,
                   base: ModelParams | None = None) -> ModelParams:
    """Model parameters for ``cluster`` (see the module docstring); ``channels``, ``nvls_channels``:
    NCCL's coll and NVLS channel counts on it (``collsim.nccl.search``; default
    ``REFERENCE_CHANNELS`` and 16)."""
    base = base or simulation_params()
    gpu, net = cluster.gpu_info, cluster.net_info
    net_step = socket_step_us(base) if net.tcp else RDMA_STEP_US     # TCPX: a socket step too
    channels = channels or REFERENCE_CHANNELS
    intra = cluster.intra if cluster.intra == "pcie" else "nvlink"
    lat = gpu.latency_scale * cluster.step_scale
    paths = {}
    for (link, algo, proto), v in base.paths.items():
        if link != "nvlink":
            continue
        i = PROTOS.index(proto)
        scaled = {**v, **{k: v[k] * lat for k in ("base_us", "step_us", "warp_us")},
                  "hop_us": HW_LAT[intra][algo][i] * lat}
        paths[("nvlink", algo, proto)] = paths[(intra, algo, proto)] = scaled
        paths[("net", algo, proto)] = {**scaled, "hop_us": max(HW_LAT["net"][algo][i], net_step),
                                       "chan_GBps": NCCL_CHANNEL_INTER_GBPS}
    simple = paths[(intra, "Ring", "Simple")]
    for algo, (intra_us, net_us) in NVLS_PRIOR.items():
        # an NVLS CTA's multimem load reduces the whole node's data per request: twice a ring
        # channel's
        # rate, so that NCCL's 16 NVLS channels fill the port (480 GB/s busbw on 8 x H100)
        paths[("nvls", algo,
               "Simple")] = {**simple, "base_us": intra_us * lat, "hop_us": 0.0, "spill": 0.0,
                                           "warm": 1.0, "chan_GBps": 2 * simple["chan_GBps"]}
        paths[("net", algo, "Simple")] = {**paths[("net", "Tree", "Simple")],
                                          "hop_us": max(net_us, net_step)}
    links = {**base.link_GBps, intra: base.link_GBps["nvlink"],
             "nvls": NVLS_BUSBW_GBPS * 9 / 14 * nvls_relative(cluster),   # refined by _at_plateau
             "net": max(cluster.nic_GBps * cluster.nic_efficiency, 1e-3)}
    if intra != "nvlink":
        links["nvlink"] = links[intra]
    meta = {"source": f"collsim.fitted.rescale.cluster_params({cluster.name or cluster.gpu})",
            "base": base.meta.get("files", base.meta.get("source")), "latency_scale": lat}
    params = replace(base, paths=paths, link_GBps=links, channels=channels, meta=meta,
                     nvls_channels=nvls_channels,
                     launch_us={**base.launch_us, **LAUNCH_US}, l2_bytes=float(gpu.l2_bytes))
    same = {intra, "nvlink"}
    params = _at_plateau(params, cluster, "Ring", same,
                         cluster.intra_GBps * cluster.intra_efficiency)
    if cluster.nvls:
        params = _at_plateau(params, cluster, "NVLS", {"nvls"},
                             NVLS_BUSBW_GBPS * nvls_relative(cluster))
        heads = cluster.nics_per_node or cluster.gpus_per_node
        ceiling = NVLSTREE_PER_CHANNEL_GBPS[gpu.compcap >= 100] * heads   # busbw on 2 nodes
        params = _at_plateau(params, cluster, "NVLSTree", {("nvls", "NVLSTree", "Simple")}, ceiling,
                             nodes=2,
                             caps=False)
    return params


def _at_plateau(params: ModelParams, cluster: Cluster, algo: str, scaled: set, target: float,
                nodes: int = 1,
                caps: bool = True) -> ModelParams:
    """``params`` with the channel rates of ``scaled`` (link classes, or (link, algo, proto) paths)
    and, with ``caps``, those classes' shared caps multiplied so that an ``algo`` Simple AllReduce
    of ``PLATEAU_BYTES`` on ``nodes`` nodes of the cluster reaches ``target`` GB/s busbw, every term
    of the model included (fixed-point rounds to 1e-4: time ~ 1/rate at that size)."""
    ranks = max(cluster.gpus_per_node, 2) * nodes
    cfg = Config(ranks, nodes=nodes, intra="pcie" if "pcie" in scaled else "nvlink",
                 nics=cluster.nics_per_node if nodes > 1 else 0)
    for _ in range(PLATEAU_ROUNDS):
        t_us = predict(params, algo, "Simple", [PLATEAU_BYTES], cfg)[0]
        step = target / (PLATEAU_BYTES / t_us / 1e3 * ALLREDUCE.busbw_factor(ranks))
        if abs(step - 1) < 1e-4:
            break
        paths = {k: ({**v, "chan_GBps": v["chan_GBps"] * step} if k[0] in scaled or k in scaled
                     else v)
                 for k, v in params.paths.items()}
        links = {k: v * step if caps and k in scaled else v for k, v in params.link_GBps.items()}
        params = replace(params, paths=paths, link_GBps=links)
    return params
