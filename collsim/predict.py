"""Predict NCCL AllReduce on a cluster from its description alone (``collsim predict-nccl``).

For each size: the algorithm, protocol and channels NCCL runs (NCCL's own choice for the cluster's
NCCL version, ``collsim.nccl.tuning``, restricted by ``algo``/``proto`` and NCCL_ALGO/NCCL_PROTO) and
collsim's time for it (``collsim.fitted.model`` with ``collsim.fitted.rescale.cluster_params``),
beside NCCL's own predicted time. Sizes are bytes, times microseconds, bandwidths GB/s (nccl-tests'
algbw and busbw = algbw x 2(n-1)/n).

Harness (what the measurement around NCCL adds): "nccl-tests" (all_reduce_perf; eager unless
``timing="graph"``, its -G; ``gpus_per_process`` = its -g, default all GPUs of a node on one node and
one GPU per process on several nodes, as nccl-tests' README runs it; it cycles -n 20 slices of its
largest size, so the buffer is not in L2 between calls) or "runner" (runners/allreduce_bench.py:
torch's all_reduce under torchrun, one GPU per process; graph timing bare, eager with torch's launch
floor).

Environment variables understood: NCCL_ALGO, NCCL_PROTO (lists, ^ excludes), NCCL_MIN_NCHANNELS /
NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS, NCCL_BUFFSIZE, NCCL_NVLS_ENABLE, NCCL_IB_DISABLE
(sockets carry the inter-node traffic). Others are reported as not modelled.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.fitted.model import explain
from collsim.fitted.rescale import cluster_params
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS, PROTOS, canonical
from collsim.nccl.decision import nccl_decision
from collsim.nccl.search import search
from collsim.nccl.settings import Settings
from collsim.predictors import MODEL
from collsim.units import bandwidths

HARNESSES = ("nccl-tests", "runner")
NCCL_TESTS_ITERS = 20   # all_reduce_perf's default -n
# the NCCL_* variables NCCL's choice (collsim.nccl.settings) or collsim's time (NCCL_BUFFSIZE) reads
UNDERSTOOD = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_COLLNET_ENABLE", "NCCL_CROSS_NIC", "NCCL_IB_DISABLE",
              "NCCL_LL128_NTHREADS", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS",
              "NCCL_NET_OVERHEAD", "NCCL_NTHREADS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS"}


@dataclass(frozen=True)
class Row:
    """One predicted size: bytes, collsim's time (us: ``time_us``, made by the predictor the result names,
    here the fitted model, so also ``model_us``), algbw/busbw (GB/s), NCCL's choice, the channels it runs,
    NCCL's own predicted time (``nccl_us``) and the term of collsim's time that dominates."""

    bytes: int
    time_us: float
    model_us: float
    algbw_GBps: float
    busbw_GBps: float
    algo: str
    proto: str
    channels: int
    nccl_us: float
    dominant: str

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


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
        e = explain(params, d.algo, d.proto, [size], cfg)[0]
        alg, bus = bandwidths(size, e["time_us"], cluster.ranks)
        rows.append(Row(size, e["time_us"], e["time_us"], alg, bus, d.algo, d.proto, d.channels, d.time_us,
                        e["dominant"]))
    settings = {"coll_channels": setup.coll_channels, "nvls_channels": setup.nvls_channels, "env": env,
                "ignored": sorted(set(env) - UNDERSTOOD)}
    return {"predictor": MODEL, "cluster": cluster.to_dict(), "settings": settings, "harness": harness,
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
