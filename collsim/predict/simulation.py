"""The event simulation of the schedule NCCL runs for one AllReduce: ``simulate_nccl``.

The schedule (``collsim.predict.schedules``) runs on the cluster with NCCL's costs
(``collsim.predict.costs``). Two reductions keep large runs fast, each exact where its condition
holds and measured against the whole simulation in tests/predict/test_simulation.py:

- Rings on an even number of nodes (4 or more) run as the quotient of two nodes
(``collsim.predict.schedules``).
- Channels that repeat each other, as they are or from other GPUs of every node, are simulated once
  (``collsim.simulate.symmetry``: ``collapse_channels``, then ``permute_channels``).
- A fabric whose ports cannot slow any transfer of the run
  (``collsim.simulate.symmetry.fabric_binds``) is left out: it changes no time. Otherwise it is
  simulated, and a ring runs whole (leaf groups break the quotient). A degraded NIC
  (``degraded_nics``) keeps the ring's quotient and the permutation of GPUs out.
  ``NcclSim.symmetry`` says which reductions were used, and why not where they were not.
- A run of more than ``LOOPS[1]`` loops (tree: chunks) is simulated for ``LOOPS[0]`` and
  ``LOOPS[1]`` loops of the same bytes each (CollNetChain, whose pipeline is deeper:
  ``CHAIN_LOOPS``); every further loop adds what the last ``LOOPS[1] - LOOPS[0]`` added on average
  (NCCL's loops repeat one another once the pipeline is full): T(L) = T(b) + (L - b) (T(b) - T(a)) /
  (b - a). The larger sizes of a sweep run the same loops: their simulations are kept on the context
  (``NcclContext.simulated``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from collsim.core.budget import require_simulation
from collsim.fitted.layout import Config
from collsim.nccl.chunking import DEFAULT_BUFFSIZE
from collsim.predict.collective_runs import collective_run
from collsim.predict.context import NcclContext, harness_config
from collsim.predict.costs import l2_factor, nccl_topology, tree_ceiling_GBps, with_window
from collsim.predict.schedules import nccl_run
from collsim.simulate import SimResult, simulate
from collsim.simulate.symmetry import (
    collapse_channels,
    fabric_binds,
    permute_channels,
    stand_for,
    without_fabric,
)

# loops simulated before the rest is extrapolated (both: within 1% on NVLSTree, 4-16 nodes)
LOOPS = (12, 24)
# CollNetChain's pipeline is 2G + 2 steps deep (up the chain, the network, down): on 8 GPUs
CHAIN_LOOPS = (24, 48)
                        # a node its loops repeat from about 30 on (12 to 24 would extrapolate 10%
                        # fast)


@dataclass(frozen=True)
class NcclSim:
    """One simulated AllReduce: ``time_s`` (the kernel, seconds), ``result`` (the simulation of the
    last run simulated: all of it, or ``LOOPS[1]`` of its ``loops``), ``channels`` (NCCL's channels)
    of which ``classes`` were simulated, each standing for channels / classes. A Tree across nodes
    takes at least the time NCCL's per-channel tree ceiling allows
    (``collsim.predict.costs.tree_ceiling_GBps``)."""

    time_s: float
    result: SimResult
    loops: int
    simulated_loops: int
    channels: int
    classes: int
    symmetry: dict | None = None

    def busiest(self) -> dict | None:
        """The resource the simulation kept busiest (``SimResult.busiest``), its share of the
        simulated run."""
        return self.result.busiest()


def simulate_nccl(ctx: NcclContext, algo: str, proto: str, nbytes: int, channels: int,
                  cfg: Config | None = None, coll: str = "all_reduce") -> NcclSim:
    """The event simulation of NCCL's ``algo``/``proto`` run of ``coll`` (default AllReduce; the
    others: ``collsim.predict.collective_runs``) of ``nbytes`` on up to ``channels`` channels
    (module docstring); ``cfg``: the measurement around it (L2 state, NCCL_BUFFSIZE; default a bare
    call with NCCL's defaults). PAT and the p2p operations run on the Ring's costs (no calibration
    log runs them)."""
    cfg = cfg or harness_config(ctx.cluster, "runner", "graph", 1, [nbytes], ctx.setup.settings)
    buff = cfg.buffsize or DEFAULT_BUFFSIZE["Simple"]
    cost = "Ring" if algo in ("PAT", "P2P") else algo
    factor = l2_factor(ctx.params, cost, proto, nbytes, cfg)

    def once(loops: int | None) -> tuple[SimResult, int, int, int]:
        run = (nccl_run(ctx.cluster, algo, proto, nbytes, channels, buff, loops)
               if coll == "all_reduce" else
               collective_run(ctx.cluster, coll, algo, proto=proto, nbytes=nbytes,
                              channels=channels, buffsize=buff, pipeline=loops))
        key = (coll, algo, proto, run.channels, run.sharing, run.threads, run.window, factor,
               run.schedule.count, min(loops, run.pipeline), run.nodes, run.step_bytes)
        if key in ctx.simulated:                         # larger sizes repeat the same loops
            return ctx.simulated[key][0], run.pipeline, *ctx.simulated[key][1:]
        # a quotient's nodes
        seen = replace(ctx.cluster, nodes=run.nodes) if run.nodes else ctx.cluster
        topo = with_window(nccl_topology(seen, ctx.params, cost, proto, run.threads, factor,
                                         run.sharing or run.channels),
                           run.window, run.step_bytes)
        fabric, s = _fabric(topo, run), run.schedule
        run = replace(run, schedule=None)          # s alone holds it: freed once reduced below
        topo = topo if fabric.startswith("simulated") else without_fabric(topo)
        if run.weight > 1:                              # built one channel per class already
            topo, g = stand_for(topo, run.weight), run.weight
        else:
            s, topo, g = collapse_channels(s, topo)
        quotient = permute_channels(s, topo)
        if quotient is not None:
            s, topo, k = quotient
            g *= k
        require_simulation(s, f"simulating NCCL's {algo} on {ctx.cluster.ranks} ranks after "
                              "its reductions")
        r = simulate(s, topo, protocol=f"{cost}/{proto}", progress=False,
                     merged=quotient is not None)
        slow = ", ".join(f"node{n}.nic{k} at {r:g} Gb/s" for n, k, r in ctx.cluster.degraded_nics)
        sym = {"nodes": ctx.cluster.nodes, "nodes_simulated": run.nodes or ctx.cluster.nodes,
               "channels": run.channels,
               "channels_simulated": run.channels // g, "fabric": fabric,
               "whole_because": run.whole or None,
               "nics": f"degraded: {slow} (every node's GPUs simulated, none permuted)" if slow
               else "alike"}
        ctx.simulated[key] = (r, run.channels, run.channels // g, sym)
        return r, run.pipeline, run.channels, run.channels // g, sym

    a, b = CHAIN_LOOPS if algo == "CollNetChain" else LOOPS
    first, loops, used, classes, sym = once(b)
    time = first.time_s
    if loops > b:
        short = once(a)[0]
        time = first.time_s + (loops - b) * (first.time_s - short.time_s) / (b - a)
    n = ctx.setup.n_ranks
    ceiling = tree_ceiling_GBps(ctx.setup, proto) if algo == "Tree" else float("inf")
    floor = nbytes * 2 * (n - 1) / n / (ceiling * 1e9)
    return NcclSim(max(time, floor), first, loops, min(loops, b), used, classes, sym)


def _fabric(topo, run) -> str:
    """What the simulation does with the machine's fabric for ``run``: "none" (non-blocking), "left
    out: ..." (it can slow no transfer of the run: ``fabric_binds``), or "simulated: ..." (naming a
    port that can)."""
    if not topo.fabric:
        return "none"
    s = run.schedule
    # a ring's quotient: ring_fabric proved it idle (an alltoall's fold is judged as run)
    if run.nodes and "quotient_of" in s.meta:
        return "left out: it cannot slow any hop of the ring"
    crossing = (s.src < s.ranks) & (s.dst < s.ranks)
    engine = np.where(crossing,
                      (s.src * s.n_channels + s.channel) * (int(s.lane.max(initial=0)) + 1)
                      + s.lane, 0)
    binds = fabric_binds(s.src, s.dst, engine, topo, run.weight)
    return f"simulated: {binds}" if binds else "left out: it cannot slow any transfer of the run"
