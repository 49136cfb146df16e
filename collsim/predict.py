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
(sockets carry the inter-node traffic), NCCL_P2P_DISABLE (GPUs through host memory), NCCL_COLLNET_ENABLE
and aws-ofi-nccl's OFI_NCCL_NET_LATENCY. Others are reported as not modelled.

The machine is taken as NCCL sees it (``Cluster.nccl_view``). Where NCCL picks an algorithm collsim does not
time yet (CollNet: ``collsim.nccl.decision.is_collnet``), the row's time is NCCL's own model and says so:
``timed_by`` is "nccl" (else "model"), ``model_us`` None.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.fitted.model import explain
from collsim.fitted.rescale import cluster_params
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS, NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.decision import is_collnet, nccl_decision
from collsim.nccl.search import search
from collsim.nccl.settings import Settings
from collsim.predictors import MODEL
from collsim.units import bandwidths

HARNESSES = ("nccl-tests", "runner")
NCCL_TESTS_ITERS = 20   # all_reduce_perf's default -n
# the NCCL_* variables NCCL's choice (collsim.nccl.settings) or collsim's time (NCCL_BUFFSIZE) reads
UNDERSTOOD = {"NCCL_ALGO", "NCCL_PROTO", "NCCL_BUFFSIZE", "NCCL_COLLNET_ENABLE", "NCCL_CROSS_NIC", "NCCL_IB_DISABLE",
              "NCCL_LL128_NTHREADS", "NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MIN_NCHANNELS",
              "NCCL_NET_OVERHEAD", "NCCL_NTHREADS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS", "NCCL_P2P_DISABLE",
              "OFI_NCCL_NET_LATENCY"}
FORCED_ALGOS = tuple(a for a in NCCL_ALGOS if a != "PAT")   # --algo names; "CollNet" means either CollNet


@dataclass(frozen=True)
class Row:
    """One predicted size: bytes, collsim's time (us: ``time_us``, made by the predictor the result names,
    here the fitted model, so also ``model_us``), algbw/busbw (GB/s), NCCL's choice, the channels it runs,
    NCCL's own predicted time (``nccl_us``), the term of collsim's time that dominates, and ``timed_by``:
    "model", or "nccl" where collsim does not time NCCL's choice yet (CollNet: ``time_us`` is ``nccl_us``)."""

    bytes: int
    time_us: float
    model_us: float | None
    algbw_GBps: float
    busbw_GBps: float
    algo: str
    proto: str
    channels: int
    nccl_us: float
    dominant: str
    timed_by: str = "model"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def harness_config(cluster: Cluster, harness: str, timing: str, gpus_per_process: int | None, sizes,
                   settings: Settings, hosts: Cluster | None = None) -> Config:
    """The ``Config`` of a measurement by ``harness`` on ``cluster`` (as NCCL sees it) with NCCL ``settings``;
    ``hosts``: the cluster as described (its hosts run the processes; default ``cluster``)."""
    if harness not in HARNESSES:
        raise CollsimError(f"harness {harness!r:.40} is not one of {', '.join(HARNESSES)}")
    hosts = hosts or cluster
    gpp = gpus_per_process or (hosts.gpus_per_node if hosts.nodes == 1 and harness == "nccl-tests" else 1)
    if not 1 <= gpp <= hosts.gpus_per_node:
        raise CollsimError(f"gpus per process must be 1..{hosts.gpus_per_node}, got {gpp}")
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
    for key, value, names in (("NCCL_ALGO", algo, FORCED_ALGOS), ("NCCL_PROTO", proto, PROTOS)):
        if str(value).lower() == "collnet" and key == "NCCL_ALGO":
            env[key] = "CollNetDirect,CollNetChain"
        elif str(value).lower() != "default":
            env[key] = canonical(value, names)   # forced: NCCL's argmin over what is left
    described, cluster = cluster, cluster.nccl_view()
    setup = search(cluster, env)
    if setup.settings.ib_disable and cluster.nodes > 1 and cluster.net in ("ib", "roce"):
        cluster = replace(cluster, net="tcp", sharp=False)   # sockets carry the inter-node traffic
    if setup.settings.p2p_disable and cluster.gpus_per_node > 1:
        cluster = replace(cluster, intra="pcie", p2p=False, nvls=False)   # SHM through host memory
    try:
        decisions = nccl_decision(described, sizes, env)
    except CollsimError as e:
        raise _unavailable(described, env, e) from None
    params = cluster_params(cluster, setup.coll_channels, setup.nvls_channels or 16)   # 0: NVLS off
    cfg = harness_config(cluster, harness, timing, gpus_per_process, sizes, setup.settings, described)
    rows = []
    for size, d in zip(sizes, decisions):
        if is_collnet(d.algo, cluster.nodes) or d.algo not in ALGOS:   # not timed by collsim yet: NCCL's model
            alg, bus = bandwidths(size, d.time_us, cluster.ranks)
            rows.append(Row(size, d.time_us, None, alg, bus, d.algo, d.proto, d.channels, d.time_us, "nccl model",
                            "nccl"))
            continue
        e = explain(params, d.algo, d.proto, [size], cfg)[0]
        alg, bus = bandwidths(size, e["time_us"], cluster.ranks)
        rows.append(Row(size, e["time_us"], e["time_us"], alg, bus, d.algo, d.proto, d.channels, d.time_us,
                        e["dominant"]))
    settings = {"coll_channels": setup.coll_channels, "nvls_channels": setup.nvls_channels, "env": env,
                "ignored": sorted(set(env) - UNDERSTOOD)}
    return {"predictor": MODEL, "cluster": described.to_dict(), "settings": settings, "harness": harness,
            "timing": timing, "gpus_per_process": cfg.gpus_per_process, "rows": [r.to_dict() for r in rows]}


def _unavailable(cluster: Cluster, env: dict, error: CollsimError) -> CollsimError:
    """``error`` (nothing enabled in NCCL's tuning table) said in terms of what the user forced."""
    forced = ", ".join(f"{k}={env[k]}" for k in ("NCCL_ALGO", "NCCL_PROTO") if k in env)
    if not forced:
        return error
    algo = env.get("NCCL_ALGO", "")
    why = ""
    if algo in ("NVLS", "NVLSTree") and not cluster.nvls:
        why = " (NVLS needs NVLink SHARP: an NVSwitch node of H100, H200, B200 or their variants)"
    elif algo == "NVLSTree" and cluster.nodes == 1:
        why = " (NVLSTree joins nodes: one node runs NVLS)"
    elif algo.startswith("CollNet"):
        why = " (CollNet needs switches that reduce: sharp: true on net ib, more than one node, at most 8 GPUs a node)"
    return CollsimError(f"{forced} is not available on {cluster.name or cluster.gpu}{why}: {error}")
