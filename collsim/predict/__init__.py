"""Predict NCCL AllReduce on a cluster from its description alone (``collsim predict-nccl``): NCCL's choice, the
schedule NCCL runs, its event simulation, plus what the harness adds.

For each size: the algorithm, protocol and channels NCCL runs (NCCL's own choice for the cluster's NCCL version,
``collsim.nccl.decision``, restricted by ``algo``/``proto`` and NCCL_ALGO/NCCL_PROTO); the schedule it runs
(``collsim.predict.schedules``: rings with NCCL's loops and slices, NCCL's tree, NVLS, NVLSTree); its event
simulation (``collsim.simulate``, policy "ready") on the cluster with NCCL's protocol costs
(``collsim.predict.costs``), which is ``kernel_us``; then the harness terms: ``simulated_us`` = the kernel, its
per-call harness overhead and clock share, and for eager timing at least the harness's launch floor
(``ModelParams.host_floor``). ``time_us`` is ``simulated_us``: every number is the simulation's. Beside it
NCCL's own predicted time (``nccl_us``) and the resource the simulation kept busiest. Sizes are bytes, times
microseconds, bandwidths GB/s (nccl-tests' algbw and busbw = algbw x 2(n-1)/n).

Harness (what the measurement around NCCL adds): "nccl-tests" (all_reduce_perf; eager unless
``timing="graph"``, its -G; ``gpus_per_process`` = its -g, default all GPUs of a node on one node and
one GPU per process on several nodes, as nccl-tests' README runs it; it cycles -n 20 slices of its
largest size, so the buffer is not in L2 between calls) or "runner" (runners/allreduce_bench.py:
torch's all_reduce under torchrun, one GPU per process; graph timing bare, eager with torch's launch
floor).

Environment variables understood: NCCL_ALGO, NCCL_PROTO (lists, ^ excludes), NCCL_MIN_NCHANNELS /
NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS, NCCL_BUFFSIZE, NCCL_NVLS_ENABLE, NCCL_IB_DISABLE
(sockets carry the inter-node traffic). Others are reported as not modelled.

Modules: ``schedules`` (the schedule NCCL runs), ``costs`` (what its transfers cost on the cluster).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.fitted.rescale import cluster_params
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS, PROTOS, canonical
from collsim.nccl.chunking import DEFAULT_BUFFSIZE
from collsim.nccl.decision import nccl_decision
from collsim.nccl.search import search
from collsim.nccl.settings import Settings
from collsim.predict.costs import l2_factor, nccl_topology, with_window
from collsim.predict.schedules import nccl_run
from collsim.predictors import SIMULATED
from collsim.simulate import simulate
from collsim.units import bandwidths

HARNESSES = ("nccl-tests", "runner")
NCCL_TESTS_ITERS = 20   # all_reduce_perf's default -n
# the NCCL_* variables NCCL's choice (collsim.nccl.settings) or collsim's time (NCCL_BUFFSIZE) reads
UNDERSTOOD = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_COLLNET_ENABLE", "NCCL_CROSS_NIC", "NCCL_IB_DISABLE",
              "NCCL_LL128_NTHREADS", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS",
              "NCCL_NET_OVERHEAD", "NCCL_NTHREADS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS"}


@dataclass(frozen=True)
class Row:
    """One predicted size: bytes; ``time_us`` = ``simulated_us`` (the simulation of the schedule NCCL runs plus
    the harness's terms) and ``kernel_us`` (the simulation alone), algbw/busbw (GB/s), NCCL's choice, the
    channels it runs, NCCL's own predicted time (``nccl_us``), the busiest resource and its share of the run."""

    bytes: int
    time_us: float
    simulated_us: float
    kernel_us: float
    algbw_GBps: float
    busbw_GBps: float
    algo: str
    proto: str
    channels: int
    nccl_us: float
    busiest: str
    busy: float

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def simulate_size(cluster: Cluster, params, algo: str, proto: str, nbytes: int, channels: int, threads: int,
                  cfg: Config):
    """(kernel seconds, busiest resource row) of NCCL's ``algo``/``proto`` AllReduce of ``nbytes``."""
    run = nccl_run(cluster, algo, proto, nbytes, channels, cfg.buffsize or DEFAULT_BUFFSIZE["Simple"])
    topo = with_window(nccl_topology(cluster, params, algo, proto, threads,
                                     l2_factor(params, algo, proto, nbytes, cfg)), run.window)
    r = simulate(run.schedule, topo, protocol=f"{algo}/{proto}", progress=False)
    return r.time_s, r.busiest()


def harness_config(cluster: Cluster, harness: str, timing: str, gpus_per_process: int | None, sizes,
                   settings: Settings) -> Config:
    """The ``Config`` of a measurement by ``harness`` on ``cluster`` with NCCL ``settings``."""
    if harness not in HARNESSES:
        raise CollsimError(f"harness {harness!r:.40} is not one of {', '.join(HARNESSES)}")
    gpp = gpus_per_process or (cluster.gpus_per_node if cluster.nodes == 1 and harness == "nccl-tests" else 1)
    if not 1 <= gpp <= cluster.gpus_per_node:
        raise CollsimError(f"gpus per process must be 1..{cluster.gpus_per_node}, got {gpp}")
    if harness == "nccl-tests":
        key = "nccl-tests-graph" if timing == "graph" else "nccl-tests-eager"
        slices, buffer = NCCL_TESTS_ITERS, int(max(sizes))
    else:
        key, slices, buffer = "bare", 1, int(max(sizes))
    intra = "pcie" if cluster.intra == "pcie" else "nvlink"
    return Config(cluster.ranks, cluster.nodes, intra, settings.buffsize, None, timing, key, slices, buffer, True,
                  "", 0, cluster.nics_per_node, gpp)


def predict_nccl(cluster: Cluster, sizes, algo: str = "default", proto: str = "default", env: dict | None = None,
                 harness: str = "nccl-tests", timing: str = "eager", gpus_per_process: int | None = None) -> dict:
    """``{"cluster": ..., "settings": ..., "rows": [Row.to_dict(), ...]}`` for ``sizes`` (bytes)."""
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 1:
        raise CollsimError("sizes must be positive byte counts")
    env = {k: str(v) for k, v in (env or {}).items()}
    if str(algo).lower().startswith("collnet"):
        raise CollsimError("CollNet (SHARP reduction in the InfiniBand switches) is not modelled by collsim")
    for key, value, names in (("NCCL_ALGO", algo, ALGOS), ("NCCL_PROTO", proto, PROTOS)):
        if str(value).lower() != "default":
            env[key] = canonical(value, names)   # forced: NCCL's argmin over what is left
    setup = search(cluster, env)
    if setup.settings.ib_disable and cluster.nodes > 1:
        cluster = replace(cluster, net="tcp")   # sockets carry the inter-node traffic
    try:
        decisions = nccl_decision(cluster, sizes, env)
    except CollsimError as e:
        raise _unavailable(cluster, env, e) from None
    params = cluster_params(cluster, setup.coll_channels, setup.nvls_channels or 16)   # 0: NVLS off
    cfg = harness_config(cluster, harness, timing, gpus_per_process, sizes, setup.settings)
    rows = []
    for size, d in zip(sizes, decisions):
        if d.algo not in ALGOS:
            raise CollsimError(f"NCCL picks {d.algo} here, which collsim does not model "
                               "(CollNet: SHARP in the switches)")
        kernel, busiest = simulate_size(cluster, params, d.algo, d.proto, size, d.channels, d.threads, cfg)
        main = params.path("nvls" if d.algo in ("NVLS", "NVLSTree") else cfg.intra, d.algo,
                           "Simple" if d.algo in ("NVLS", "NVLSTree") else d.proto)
        t_us = kernel * 1e6 + params.harness_time(cfg)
        if cfg.timing == "eager":
            t_us = max(t_us, params.host_floor(cfg, main))
        alg, bus = bandwidths(size, t_us, cluster.ranks)
        rows.append(Row(size, t_us, t_us, kernel * 1e6, alg, bus, d.algo, d.proto, d.channels, d.time_us,
                        busiest["name"] if busiest else "", busiest["busy"] if busiest else 0.0))
    settings = {"coll_channels": setup.coll_channels, "nvls_channels": setup.nvls_channels, "env": env,
                "ignored": sorted(set(env) - UNDERSTOOD)}
    return {"predictor": SIMULATED, "cluster": cluster.to_dict(), "settings": settings, "harness": harness,
            "timing": timing, "gpus_per_process": cfg.gpus_per_process, "rows": [r.to_dict() for r in rows]}


def _unavailable(cluster: Cluster, env: dict, error: CollsimError) -> CollsimError:
    """``error`` (nothing enabled in NCCL's tuning table) said in terms of what the user forced."""
    forced = ", ".join(f"{k}={env[k]}" for k in ("NCCL_ALGO", "NCCL_PROTO") if k in env)
    if not forced:
        return error
    algo = env.get("NCCL_ALGO", "")
    why = ""
    if algo in ("NVLS", "NVLSTree") and not cluster.nvls:
        why = " (NVLS needs NVLink SHARP: an H100, H200 or B200 NVSwitch node)"
    elif algo == "NVLSTree" and cluster.nodes == 1:
        why = " (NVLSTree joins nodes: one node runs NVLS)"
    return CollsimError(f"{forced} is not available on {cluster.name or cluster.gpu}{why}: {error}")
