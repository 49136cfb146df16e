"""Predict NCCL AllReduce on a cluster from its description alone (``collsim predict-nccl``): NCCL's choice, the
schedule NCCL runs, its event simulation, plus what the harness adds.

For each size: the algorithm, protocol and channels NCCL runs (NCCL's own choice for the cluster's NCCL version,
``collsim.nccl.decision``, restricted by ``algo``/``proto`` and NCCL_ALGO/NCCL_PROTO); the schedule it runs
(``collsim.predict.schedules``: rings with NCCL's loops and slices, NCCL's tree, NVLS, NVLSTree); its event
simulation (``collsim.simulate``, its default policy "fair") on the cluster with NCCL's protocol costs
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
(sockets carry the inter-node traffic), NCCL_P2P_DISABLE (GPUs through host memory), NCCL_COLLNET_ENABLE
and aws-ofi-nccl's OFI_NCCL_NET_LATENCY. Others are reported as not modelled.

The machine is taken as NCCL sees it (``Cluster.nccl_view``). Where NCCL picks an algorithm collsim does not
simulate yet (CollNet: ``collsim.nccl.decision.is_collnet``), the row's time is NCCL's own model and says so:
``timed_by`` "nccl" (else "simulated"), ``simulated_us`` None.

``simulate_nccl`` is the simulation alone (``collsim simulate --cluster`` prints it). Modules: ``schedules``
(the schedule NCCL runs), ``costs`` (what its transfers cost on the cluster).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.errors import CollsimError
from collsim.fitted.layout import Config
from collsim.fitted.rescale import cluster_params
from collsim.machine.cluster import Cluster
from collsim.fitted.params import ModelParams
from collsim.nccl import ALGOS, NCCL_ALGOS, PROTOS, canonical
from collsim.nccl.chunking import DEFAULT_BUFFSIZE
from collsim.nccl.decision import is_collnet, nccl_decision
from collsim.nccl.search import Setup, search
from collsim.nccl.settings import Settings
from collsim.predict.costs import l2_factor, nccl_topology, with_window
from collsim.predict.schedules import nccl_run
from collsim.predictors import SIMULATED
from collsim.simulate import SimResult, simulate
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
    """One predicted size: bytes; ``time_us`` (what the row's ``timed_by`` made: "simulated", the simulation of
    the schedule NCCL runs plus the harness's terms, then ``time_us`` = ``simulated_us`` and ``kernel_us`` is the
    simulation alone; "nccl" where collsim does not simulate NCCL's choice (CollNet), then ``time_us`` is
    NCCL's own model and ``simulated_us`` None), algbw/busbw (GB/s), NCCL's choice, the channels it runs, NCCL's
    own predicted time (``nccl_us``), the busiest resource of the simulation and its share of the run."""

    bytes: int
    time_us: float
    simulated_us: float | None
    kernel_us: float | None
    algbw_GBps: float
    busbw_GBps: float
    algo: str
    proto: str
    channels: int
    nccl_us: float
    busiest: str
    busy: float
    timed_by: str = "simulated"

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class NcclContext:
    """A cluster as NCCL runs AllReduce on it: ``described`` (as the user described it), ``cluster`` (as NCCL
    sees it, sockets or host memory where the settings disable IB or P2P), ``env`` (the NCCL_* settings with
    forced algorithm and protocol), NCCL's init (``setup``, ``collsim.nccl.search``) and the costs of its
    transfers (``params``, ``collsim.fitted.rescale.cluster_params``)."""

    described: Cluster
    cluster: Cluster
    env: dict
    setup: Setup
    params: ModelParams

    def decisions(self, sizes) -> list:
        """NCCL's choice (``collsim.nccl.decision.Decision``) per size (bytes)."""
        try:
            return nccl_decision(self.described, sizes, self.env)
        except CollsimError as e:
            raise _unavailable(self.described, self.env, e) from None


def nccl_context(cluster: Cluster, algo: str = "default", proto: str = "default",
                 env: dict | None = None) -> NcclContext:
    """The ``NcclContext`` of ``cluster`` under NCCL_* ``env`` with ``algo``/``proto`` forced (NCCL's names, or
    "default" for NCCL's choice; "CollNet" means either CollNet)."""
    env = {k: str(v) for k, v in (env or {}).items()}
    for key, value, names in (("NCCL_ALGO", algo, FORCED_ALGOS), ("NCCL_PROTO", proto, PROTOS)):
        if str(value).lower() == "collnet" and key == "NCCL_ALGO":
            env[key] = "CollNetDirect,CollNetChain"
        elif str(value).lower() != "default":
            env[key] = canonical(value, names)   # forced: NCCL's argmin over what is left
    described, seen = cluster, cluster.nccl_view()
    setup = search(seen, env)
    if setup.settings.ib_disable and seen.nodes > 1 and seen.net in ("ib", "roce"):
        seen = replace(seen, net="tcp", sharp=False)   # sockets carry the inter-node traffic
    if setup.settings.p2p_disable and seen.gpus_per_node > 1:
        seen = replace(seen, intra="pcie", p2p=False, nvls=False)   # SHM through host memory
    params = cluster_params(seen, setup.coll_channels, setup.nvls_channels or 16)   # 0: NVLS off
    return NcclContext(described, seen, env, setup, params)


def simulate_nccl(ctx: NcclContext, algo: str, proto: str, nbytes: int, channels: int,
                  cfg: Config | None = None) -> SimResult:
    """The event simulation of NCCL's ``algo``/``proto`` AllReduce of ``nbytes`` on up to ``channels`` channels
    (the schedule NCCL runs, ``collsim.predict.schedules``, on the cluster with NCCL's
    costs, ``collsim.predict.costs``); ``cfg``: the measurement around it (L2 state, NCCL_BUFFSIZE; default a
    bare call with NCCL's defaults)."""
    cfg = cfg or harness_config(ctx.cluster, "runner", "graph", 1, [nbytes], ctx.setup.settings)
    run = nccl_run(ctx.cluster, algo, proto, nbytes, channels, cfg.buffsize or DEFAULT_BUFFSIZE["Simple"])
    topo = with_window(nccl_topology(ctx.cluster, ctx.params, algo, proto, run.threads,
                                     l2_factor(ctx.params, algo, proto, nbytes, cfg), run.channels), run.window)
    return simulate(run.schedule, topo, protocol=f"{algo}/{proto}", progress=False)


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
    """``{"predictor": "simulated_us", "cluster": ..., "settings": ..., "rows": [Row.to_dict(), ...]}`` for
    ``sizes`` (bytes)."""
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 1:
        raise CollsimError("sizes must be positive byte counts")
    ctx = nccl_context(cluster, algo, proto, env)
    decisions = ctx.decisions(sizes)
    params = ctx.params
    cfg = harness_config(ctx.cluster, harness, timing, gpus_per_process, sizes, ctx.setup.settings, ctx.described)
    rows = []
    for size, d in zip(sizes, decisions):
        if is_collnet(d.algo, ctx.cluster.nodes) or d.algo not in ALGOS:   # not simulated: NCCL's model
            alg, bus = bandwidths(size, d.time_us, ctx.cluster.ranks)
            rows.append(Row(size, d.time_us, None, None, alg, bus, d.algo, d.proto, d.channels, d.time_us, "", 0.0,
                            "nccl"))
            continue
        r = simulate_nccl(ctx, d.algo, d.proto, size, d.channels, cfg)
        busiest = r.busiest()
        main = params.path("nvls" if d.algo in ("NVLS", "NVLSTree") else cfg.intra, d.algo,
                           "Simple" if d.algo in ("NVLS", "NVLSTree") else d.proto)
        t_us = r.time_s * 1e6 + params.harness_time(cfg)
        if cfg.timing == "eager":
            t_us = max(t_us, params.host_floor(cfg, main))
        alg, bus = bandwidths(size, t_us, ctx.cluster.ranks)
        rows.append(Row(size, t_us, t_us, r.time_s * 1e6, alg, bus, d.algo, d.proto, d.channels, d.time_us,
                        busiest["name"] if busiest else "", busiest["busy"] if busiest else 0.0))
    settings = {"coll_channels": ctx.setup.coll_channels, "nvls_channels": ctx.setup.nvls_channels, "env": ctx.env,
                "ignored": sorted(set(ctx.env) - UNDERSTOOD)}
    return {"predictor": SIMULATED, "cluster": ctx.described.to_dict(), "settings": settings, "harness": harness,
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
