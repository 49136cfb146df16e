"""``collsim simulate --cluster X``: the simulation of the schedule NCCL runs there
(``collsim.predict.simulation``).

With a described cluster (a preset or cluster file) and no ``--algo``, simulate runs NCCL's own
choice of algorithm, protocol and channels for ``--bytes``; with ``--algo`` one of NCCL's (ring,
nccl-tree, nvls, nvlstree, and on a cluster whose switches reduce nvls-sharp, collnet-direct,
collnet-chain) and no pipeline of collsim's own (``--slices``, ``--chunks``), NCCL's schedule of
that algorithm (``--proto`` and ``--channels`` forced if given, else NCCL's). It prints the kernel's
simulated time (what ``predict-nccl`` adds the harness to), busbw, the busiest resource, and which
reductions the simulation used (``--json``: ``symmetry``, ``collsim.predict.simulation``: the nodes
and channels simulated, what became of the fabric, why a ring ran whole) and the time's 80% range
(``low_us``, ``high_us``: ``collsim.predict.ranges``, from where the cluster's inputs come).
"""
from __future__ import annotations

import re

from collsim.algorithms import get
from collsim.cli.args import (
    cluster_from_args,
    coll_of,
    element_count,
    finite_json,
    round_seconds,
    topology_from_args,
)
from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.nccl.settings import env_arguments
from collsim.predict import nccl_context, simulate_nccl, simulated
from collsim.predict.context import FORCED_ALGOS
from collsim.predict.ranges import (
    SMALLEST,
    bandwidth_share,
    regime_kinds,
    schedule_input,
    time_range,
)
from collsim.predictors import SIMULATED


def print_utilisation(rows: list[dict], time_s: float) -> None:
    """Busy share of a run of ``time_s`` seconds per kind of resource (GPU ports, NICs, pair links)
    of ``rows`` (``SimResult.resource_table``): how many carried bytes, max, mean, min among
    those."""
    if time_s <= 0:
        return
    kinds: dict[str, list[float]] = {}
    for x in rows:
        kinds.setdefault(re.sub(r"\d+", "N", x["name"]), []).append(x["busy"])
    print(f"{'resource':18s} {'used':>6s} {'busiest':>8s} {'mean':>7s} {'least':>7s}   (share of "
          "the run spent busy)")
    for kind, shares in sorted(kinds.items(), key=lambda kv: -max(kv[1])):
        print(f"{kind:18s} {len(shares):6d} {100 * max(shares):7.1f}% "
              f"{100 * sum(shares) / len(shares):6.1f}% {100 * min(shares):6.1f}%")


def nccl_cluster(args):
    """The described cluster when ``simulate`` should run NCCL's schedule on it (module docstring),
    else None."""
    if not args.cluster or args.alpha is not None or args.beta is not None:
        return None
    algo = get(args.algo, coll_of(args)) if args.algo else None
    own = args.slices != 1 or args.chunks is not None or args.gamma or args.policy != "fair"
    if algo is not None and (algo.nccl_name is None or own):
        return None
    # the machine checks: one machine, --ranks that fit it
    topology_from_args(args, args.ranks)
    cluster = cluster_from_args(args, args.ranks)
    if cluster is None and algo is None:
        raise CollsimError("simulate without --algo runs NCCL's choice, which needs a preset or "
                           "cluster file, not a link-level topology file")
    if cluster is not None and cluster.ranks < 2:
        raise CollsimError("NCCL's AllReduce needs at least 2 GPUs")
    if algo is None and own:
        raise CollsimError("--slices, --chunks, --gamma and --policy set collsim's own schedule: "
                           "give --algo")
    return cluster


def cmd_simulate_nccl(args, cluster) -> int:
    """Simulate NCCL's run of ``--bytes`` on ``cluster`` and print it (module docstring)."""
    if args.bytes is None:
        raise CollsimError("give --bytes: the AllReduce size NCCL runs")
    nbytes = element_count(args) * args.itemsize
    c = get_collective(coll_of(args))
    forced = get(args.algo, c.name).nccl_name if args.algo else "default"
    ctx = nccl_context(cluster, forced if forced in FORCED_ALGOS else "default",
                       args.proto or "default", env_arguments(args.env))
    d = ctx.decisions([nbytes], c.name)[0]
    if not simulated(d.algo, c.name):
        raise CollsimError(f"NCCL runs {c.nccl_name} as {d.algo} here, which collsim does not "
                           "simulate (predict-nccl gives NCCL's own model)")
    sim = simulate_nccl(ctx, d.algo, d.proto, nbytes, args.channels or d.channels, coll=c.name)
    alg, bus = c.bandwidths(nbytes, sim.time_s * 1e6, cluster.ranks)
    busiest = sim.busiest()
    s8 = ctx.decisions([SMALLEST], c.name)[0]
    smallest = (simulate_nccl(ctx, s8.algo, s8.proto, SMALLEST, s8.channels, coll=c.name).time_s
                * 1e6)
    share = bandwidth_share(sim.time_s * 1e6, smallest)
    low, high = time_range(sim.time_s * 1e6, share,
                           regime_kinds({**cluster.inputs, **schedule_input(c.name)}))
    obj = {"predictor": SIMULATED, "collective": c.name, "algo": d.algo, "proto": d.proto,
           "chosen_by": "you" if args.algo else "NCCL",
           "ranks": cluster.ranks, "bytes": nbytes, "cluster": cluster.name or cluster.gpu,
           "channels": sim.channels, "channel_classes": sim.classes, "loops": sim.loops,
           "simulated_loops": sim.simulated_loops, "time_s": round_seconds(sim.time_s),
           "low_us": low, "high_us": high, "algbw_GBps": alg, "busbw_GBps": bus,
           "nccl_us": d.time_us, "busiest": busiest and {k: busiest[k] for k in ("name", "busy")},
           "symmetry": sim.symmetry,
           "resources": [{k: x[k] for k in ("name", "busy", "bytes")}
                         for x in sim.result.resource_table()]}
    if args.json:
        print(finite_json(obj))
        return 0
    who = "you forced" if args.algo else "NCCL chooses"
    print(f"{cluster.describe()}: {who} {d.algo}/{d.proto} on {sim.channels} channel(s) for "
          f"{nbytes} B")
    print(f"simulated {sim.time_s * 1e6:.3f} us (80% range {low:.3f}-{high:.3f}; the kernel, "
          f"predict-nccl adds the harness)  algbw {alg:.2f} GB/s  busbw {bus:.2f} GB/s  (NCCL's "
          f"own model: {d.time_us:.3f} us)")
    if busiest:
        print(f"busiest resource: {busiest['name']}, busy {100 * busiest['busy']:.0f}% of the run")
    print_utilisation(sim.result.resource_table(), sim.result.time_s)
    cut = ([f"{sim.classes} of {sim.channels} channels, each standing for those like it"]
           * (sim.classes < sim.channels))
    cut += ([f"{sim.simulated_loops} of {sim.loops} loops, the rest extrapolated"]
            * (sim.simulated_loops < sim.loops))
    sym = sim.symmetry
    if sym["nodes_simulated"] < sym["nodes"]:
        cut.insert(0, f"{sym['nodes_simulated']} of {sym['nodes']} nodes (the ring's quotient)")
    if cut:
        print(f"(simulated {' and '.join(cut)}: collsim.predict.simulation)")
    if sym["whole_because"]:
        print(f"(the ring runs whole on {sym['nodes']} nodes: {sym['whole_because']})")
    if sym["fabric"] != "none":
        print(f"(fabric: {sym['fabric']})")
    if sym["nics"] != "alike":
        print(f"(NICs: {sym['nics']})")
    return 0
