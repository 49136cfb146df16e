"""Predict NCCL AllReduce on a cluster from its description alone (``collsim predict-nccl``): NCCL's
choice, the schedule NCCL runs, its event simulation, plus what the harness adds.

For each size: the algorithm, protocol and channels NCCL runs (NCCL's own choice for the cluster's
NCCL version, ``collsim.nccl.decision``, restricted by ``algo``/``proto`` and NCCL_ALGO/NCCL_PROTO);
the schedule it runs (``collsim.predict.schedules``: rings with NCCL's loops and slices, NCCL's
tree, NVLS, NVLSTree, and where the network's switches reduce (SHARP, ``sharp: true``)
CollNetDirect, CollNetChain and NVLS across nodes); its event simulation (``collsim.simulate``, its
default policy "fair") on the cluster with NCCL's protocol costs (``collsim.predict.costs``), which
is ``kernel_us``; then the harness terms: ``simulated_us`` = the kernel, its per-call harness
overhead and clock share, and for eager timing at least the harness's launch floor
(``ModelParams.host_floor``). ``time_us`` is ``simulated_us``: every number is the simulation's.
Beside it NCCL's own predicted time (``nccl_us``) and the resource the simulation kept busiest.
Sizes are bytes, times microseconds, bandwidths GB/s (nccl-tests' algbw and busbw = algbw x
2(n-1)/n).

The harness (nccl-tests or the runner, eager or graph timing, GPUs per process) is
``collsim.predict.context.harness_config``'s.

Environment variables understood: NCCL_ALGO, NCCL_PROTO (lists, ^ excludes), NCCL_MIN_NCHANNELS /
NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS, NCCL_BUFFSIZE, NCCL_NVLS_ENABLE, NCCL_IB_DISABLE
(sockets carry the inter-node traffic), NCCL_P2P_DISABLE (GPUs through host memory),
NCCL_COLLNET_ENABLE and aws-ofi-nccl's OFI_NCCL_NET_LATENCY. Others are reported as not modelled.

The machine is taken as NCCL sees it (``Cluster.nccl_view``). Every algorithm NCCL picks for an
AllReduce is simulated (``timed_by`` "simulated"); every row carries its 80% range (``low_us``,
``high_us``: ``collsim.predict.ranges``, from where each input of the cluster comes); one collsim
did not simulate (``simulated``: none NCCL 2.18-2.28 picks) would be timed by NCCL's own model and
say so: ``timed_by`` "nccl", ``simulated_us`` None.

``simulate_nccl`` is the simulation alone (``collsim simulate --cluster`` prints it). Modules:
``context`` (the cluster as NCCL runs on it, the harness), ``schedules`` (the schedule NCCL runs),
``costs`` (what its transfers cost on the cluster), ``simulation`` (its simulation, with the
reductions that keep it fast), ``scale`` (the same over node counts: ``scale_nccl``, ``collsim
predict-nccl --nodes 2,4,...,2048``).

``collective_runs`` builds NCCL's run of every other collective; ``best`` simulates every algorithm
and protocol NCCL could run and names the fastest; ``tuner`` writes that choice as NCCL's example
tuner plugin's CSV (``collsim export-tuner``); ``ranges`` gives each row its 80% range. """
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster
from collsim.nccl import ALGOS
from collsim.predict.context import UNDERSTOOD, NcclContext, harness_config, nccl_context
from collsim.predict.costs import fitted_algo
from collsim.predict.ranges import (
    SMALLEST,
    harness_input,
    harness_key,
    ranges_of,
    regime_kinds,
    schedule_input,
)
from collsim.predict.schedules import COLLNET
from collsim.predict.simulation import NcclSim, simulate_nccl
from collsim.predictors import SIMULATED

__all__ = ["NcclContext", "NcclSim", "Row", "harness_config", "nccl_context", "predict_nccl",
           "simulate_nccl"]


@dataclass(frozen=True)
class Row:
    """One predicted size: bytes; ``time_us`` (what the row's ``timed_by`` made: "simulated", the
    simulation of the schedule NCCL runs plus the harness's terms, then ``time_us`` =
    ``simulated_us`` and ``kernel_us`` is the simulation alone; "nccl" where collsim does not
    simulate NCCL's choice (``simulated``), then ``time_us`` is NCCL's own model and
    ``simulated_us`` None), algbw/busbw (GB/s), NCCL's choice, the channels it runs, NCCL's own
    predicted time (``nccl_us``), the busiest resource of the simulation and its share of the run;
    the 80% range of the time (``low_us``..``high_us``, ``collsim.predict.ranges``) and the share of
    it the bytes take."""

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
    low_us: float = 0.0
    high_us: float = 0.0
    bandwidth_share: float = 0.0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def simulated(algo: str, coll: str = "all_reduce") -> bool:
    """Whether collsim simulates NCCL's ``algo`` for ``coll``: AllReduce's Ring, Tree, NVLS (across
    nodes too: with CollNet), NVLSTree, CollNetDirect and CollNetChain; the other collectives' Ring,
    PAT and p2p (not their NVLS and CollNetDirect)."""
    if coll != "all_reduce":
        return algo in ("Ring", "PAT", "P2P")
    return algo in ALGOS or algo in COLLNET


def predict_nccl(cluster: Cluster, sizes, algo: str = "default", proto: str = "default",
                 env: dict | None = None,
                 harness: str = "nccl-tests", timing: str = "eager",
                 gpus_per_process: int | None = None,
                 base=None, coll: str = "all_reduce") -> dict:
    """``{"predictor": "simulated_us", "collective": ..., "cluster": ..., "settings": ..., "rows":
    [Row.to_dict(), ...]}`` for ``sizes`` (bytes, nccl-tests' size column) of collective ``coll``
    (busbw with its nccl-tests factor); ``base``: the parameters to rescale (``nccl_context``)."""
    sizes = [int(s) for s in np.atleast_1d(sizes)]
    if not sizes or min(sizes) < 1:
        raise CollsimError("sizes must be positive byte counts")
    c = get_collective(coll)
    ctx = nccl_context(cluster, algo, proto, env, base)
    cfg = harness_config(ctx.cluster, harness, timing, gpus_per_process=gpus_per_process,
                         sizes=sizes, settings=ctx.setup.settings, hosts=ctx.described,
                         env=ctx.env)
    cal = ctx.described.calibrated or {}
    extra = cal.get("harness_us",
                    0.0) if cal.get("harness") == harness_key(harness, timing,
                                                              cfg.gpus_per_process) \
        else 0.0                                        # a harness measured on this machine only
    rows = _rows(ctx, cfg, sizes if SMALLEST in sizes else [SMALLEST, *sizes], c, extra)
    smallest = rows[0].time_us if SMALLEST not in sizes else rows[sizes.index(SMALLEST)].time_us
    rows = rows if SMALLEST in sizes else rows[1:]
    hosts = ctx.described
    inputs = {**hosts.inputs, "harness": harness_input(harness, cfg.timing, cfg.gpus_per_process,
                                                       hosts.gpus_per_node, hosts.nodes,
                                                       hosts.calibrated),
              **schedule_input(c.name)}
    kinds = regime_kinds(inputs)
    rows = [replace(r, low_us=low, high_us=high, bandwidth_share=share)
            for r, (low, high, share) in zip(rows,
                                             ranges_of([r.time_us for r in rows], smallest, kinds))]
    settings = {"coll_channels": ctx.setup.coll_channels, "nvls_channels": ctx.setup.nvls_channels,
                "env": ctx.env,
                "ignored": sorted(set(ctx.env) - UNDERSTOOD)}
    return {"predictor": SIMULATED, **({"collective": c.name} if c.name != "all_reduce" else {}),
            "cluster": ctx.described.to_dict(), "settings": settings, "harness": harness,
            "timing": timing, "gpus_per_process": cfg.gpus_per_process,
            "inputs": {k: v.to_dict() for k, v in inputs.items()}, "range": kinds,
            "rows": [r.to_dict() for r in rows]}


def _rows(ctx: NcclContext, cfg, sizes: list[int], c, extra_us: float = 0.0) -> list[Row]:
    """The predicted ``Row`` of each size (bytes) of collective ``c`` on ``ctx`` measured by
    ``cfg``, ``extra_us`` added to each simulated time (a harness's cost calibrated on the machine),
    without its range."""
    params = ctx.params
    rows = []
    for size, d in zip(sizes, ctx.decisions(sizes, c.name)):
        # not simulated: NCCL's model
        if not simulated(d.algo, c.name):
            alg, bus = c.bandwidths(size, d.time_us, ctx.cluster.ranks)
            rows.append(Row(size, d.time_us, None, kernel_us=None, algbw_GBps=alg, busbw_GBps=bus,
                            algo=d.algo, proto=d.proto, channels=d.channels, nccl_us=d.time_us,
                            busiest="", busy=0.0,
                            timed_by="nccl"))
            continue
        r = simulate_nccl(ctx, d.algo, d.proto, size, d.channels, cfg, c.name)
        busiest = r.busiest()
        main = params.path("nvls" if d.algo in ("NVLS", "NVLSTree") else cfg.intra,
                           fitted_algo(d.algo),
                           "Simple" if d.algo in ("NVLS", "NVLSTree") else d.proto)
        t_us = max(r.time_s * 1e6 + params.harness_time(cfg) + extra_us, 1e-3)
        if cfg.timing == "eager":
            t_us = max(t_us, params.host_floor(cfg, main))
        alg, bus = c.bandwidths(size, t_us, ctx.cluster.ranks)
        rows.append(Row(size, t_us, t_us, kernel_us=r.time_s * 1e6, algbw_GBps=alg, busbw_GBps=bus,
                        algo=d.algo, proto=d.proto, channels=d.channels, nccl_us=d.time_us,
                        busiest=busiest["name"] if busiest else "",
                        busy=busiest["busy"] if busiest else 0.0))
    return rows
