"""Predict NCCL AllReduce on a cluster from its description alone (``collsim predict-nccl``): NCCL's choice, the
schedule NCCL runs, its event simulation, plus what the harness adds.

For each size: the algorithm, protocol and channels NCCL runs (NCCL's own choice for the cluster's NCCL version,
``collsim.nccl.decision``, restricted by ``algo``/``proto`` and NCCL_ALGO/NCCL_PROTO); the schedule it runs
(``collsim.predict.schedules``: rings with NCCL's loops and slices, NCCL's tree, NVLS, NVLSTree, and where the
network's switches reduce (SHARP, ``sharp: true``) CollNetDirect, CollNetChain and NVLS across nodes); its event
simulation (``collsim.simulate``, its default policy "fair") on the cluster with NCCL's protocol costs
(``collsim.predict.costs``), which is ``kernel_us``; then the harness terms: ``simulated_us`` = the kernel, its
per-call harness overhead and clock share, and for eager timing at least the harness's launch floor
(``ModelParams.host_floor``). ``time_us`` is ``simulated_us``: every number is the simulation's. Beside it
NCCL's own predicted time (``nccl_us``) and the resource the simulation kept busiest. Sizes are bytes, times
microseconds, bandwidths GB/s (nccl-tests' algbw and busbw = algbw x 2(n-1)/n).

The harness (nccl-tests or the runner, eager or graph timing, GPUs per process) is
``collsim.predict.context.harness_config``'s.

Environment variables understood: NCCL_ALGO, NCCL_PROTO (lists, ^ excludes), NCCL_MIN_NCHANNELS /
NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS, NCCL_BUFFSIZE, NCCL_NVLS_ENABLE, NCCL_IB_DISABLE
(sockets carry the inter-node traffic), NCCL_P2P_DISABLE (GPUs through host memory), NCCL_COLLNET_ENABLE
and aws-ofi-nccl's OFI_NCCL_NET_LATENCY. Others are reported as not modelled.

The machine is taken as NCCL sees it (``Cluster.nccl_view``). Every algorithm NCCL picks for an AllReduce is
simulated (``timed_by`` "simulated"); one collsim did not simulate (``simulated``: none NCCL 2.18-2.28 picks)
would be timed by NCCL's own model and say so: ``timed_by`` "nccl", ``simulated_us`` None.

``simulate_nccl`` is the simulation alone (``collsim simulate --cluster`` prints it). Modules: ``context``
(the cluster as NCCL runs on it, the harness), ``schedules`` (the schedule NCCL runs), ``costs`` (what its
transfers cost on the cluster), ``simulation`` (its simulation, with the reductions that keep it fast), ``scale``
(the same over node counts: ``scale_nccl``, ``collsim predict-nccl --nodes 2,4,...,2048``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from collsim.core.collective import ALLREDUCE
from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS
from collsim.predict.context import UNDERSTOOD, NcclContext, harness_config, nccl_context
from collsim.predict.costs import fitted_algo
from collsim.predict.schedules import COLLNET
from collsim.predict.simulation import NcclSim, simulate_nccl
from collsim.predictors import SIMULATED

__all__ = ["NcclContext", "NcclSim", "Row", "harness_config", "nccl_context", "predict_nccl", "simulate_nccl"]


@dataclass(frozen=True)
class Row:
    """One predicted size: bytes; ``time_us`` (what the row's ``timed_by`` made: "simulated", the simulation of
    the schedule NCCL runs plus the harness's terms, then ``time_us`` = ``simulated_us`` and ``kernel_us`` is the
    simulation alone; "nccl" where collsim does not simulate NCCL's choice (``simulated``), then ``time_us`` is
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


def simulated(algo: str) -> bool:
    """Whether collsim simulates NCCL's ``algo``: Ring, Tree, NVLS (across nodes too: with CollNet), NVLSTree,
    CollNetDirect and CollNetChain; not PAT."""
    return algo in ALGOS or algo in COLLNET


def predict_nccl(cluster: Cluster, sizes, algo: str = "default", proto: str = "default", env: dict | None = None,
                 harness: str = "nccl-tests", timing: str = "eager", gpus_per_process: int | None = None,
                 base=None) -> dict:
    """``{"predictor": "simulated_us", "cluster": ..., "settings": ..., "rows": [Row.to_dict(), ...]}`` for
    ``sizes`` (bytes); ``base``: the parameters to rescale (``nccl_context``)."""
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 1:
        raise CollsimError("sizes must be positive byte counts")
    ctx = nccl_context(cluster, algo, proto, env, base)
    decisions = ctx.decisions(sizes)
    params = ctx.params
    cfg = harness_config(ctx.cluster, harness, timing, gpus_per_process, sizes, ctx.setup.settings, ctx.described,
                         ctx.env)
    rows = []
    for size, d in zip(sizes, decisions):
        if not simulated(d.algo):                                         # not simulated: NCCL's model
            alg, bus = ALLREDUCE.bandwidths(size, d.time_us, ctx.cluster.ranks)
            rows.append(Row(size, d.time_us, None, None, alg, bus, d.algo, d.proto, d.channels, d.time_us, "", 0.0,
                            "nccl"))
            continue
        r = simulate_nccl(ctx, d.algo, d.proto, size, d.channels, cfg)
        busiest = r.busiest()
        main = params.path("nvls" if d.algo in ("NVLS", "NVLSTree") else cfg.intra, fitted_algo(d.algo),
                           "Simple" if d.algo in ("NVLS", "NVLSTree") else d.proto)
        t_us = r.time_s * 1e6 + params.harness_time(cfg)
        if cfg.timing == "eager":
            t_us = max(t_us, params.host_floor(cfg, main))
        alg, bus = ALLREDUCE.bandwidths(size, t_us, ctx.cluster.ranks)
        rows.append(Row(size, t_us, t_us, r.time_s * 1e6, alg, bus, d.algo, d.proto, d.channels, d.time_us,
                        busiest["name"] if busiest else "", busiest["busy"] if busiest else 0.0))
    settings = {"coll_channels": ctx.setup.coll_channels, "nvls_channels": ctx.setup.nvls_channels, "env": ctx.env,
                "ignored": sorted(set(ctx.env) - UNDERSTOOD)}
    return {"predictor": SIMULATED, "cluster": ctx.described.to_dict(), "settings": settings, "harness": harness,
            "timing": timing, "gpus_per_process": cfg.gpus_per_process, "rows": [r.to_dict() for r in rows]}
