"""Simulation sub-commands: simulate (event simulation on a topology) and sweep (over sizes).

Examples::

    collsim simulate --algo ring --ranks 8 --bytes 1G --alpha 5e-6 --beta 1e-11 --json
    collsim simulate --cluster ib-400g --nodes 4 --bytes 1G # NCCL's choice, its schedule, simulated
    collsim simulate --cluster h100-nvlink --nodes 2 --algo ring --channels 16 --bytes 1G --json
    collsim simulate --algo hierarchical --ranks 32 --bytes 256M --cluster ib-400g --gpus-per-node 8
    collsim simulate --list-presets
    collsim sweep --algos ring,double-double-tree,hierarchical --ranks 32 --cluster ib-400g \\
                  --plot sweep.png
    collsim sweep --algos ring,nccl-double-tree --cluster ib-400g --nodes 8 --channels 16 \\
                  --method simulate

With a preset or cluster file and one of NCCL's algorithms (or none: NCCL's choice) simulate runs
the schedule NCCL runs (``collsim.cli.nccl_run``); otherwise collsim's schedule with the given
pipeline on the machine's links. Times printed in microseconds, ``time_s`` in JSON in seconds,
bandwidths in GB/s (1e9 bytes/s) with nccl-tests' algbw/busbw definitions. ``--json`` of simulate
adds ``resources``: every GPU port, NIC and pair link that carried bytes, with ``busy`` its share of
the run (0..1).
"""
from __future__ import annotations

import sys
import textwrap
from dataclasses import replace

import numpy as np

from collsim.algorithms import get, resolve, validate
from collsim.cli.args import (
    add_algo_args,
    add_topology_args,
    algo_of,
    algo_params,
    build_from_args,
    coll_of,
    element_count,
    finite_json,
    fit_to_topology,
    int_in,
    plot_path,
    positive_int,
    round_seconds,
    size_arg,
    topology_from_args,
)
from collsim.cli.nccl_run import cmd_simulate_nccl, nccl_cluster, print_utilisation
from collsim.core.budget import require_simulation, require_simulation_bound
from collsim.core.collective import ALLREDUCE, get as get_collective
from collsim.errors import CollsimError
from collsim.inputs import MAX_CHANNELS
from collsim.machine.presets import CLUSTERS, PRESETS
from collsim.outputs import check_output, save_figure
from collsim.predictors import PREDICTORS
from collsim.simulate import simulate
from collsim.simulate.shift import ring_shift
from collsim.sweep import sizes, sweep
from collsim.viz.curves import CurvesView


def cmd_simulate(args) -> int:
    if args.list_presets:
        for name, topo in PRESETS.items():
            fabric = CLUSTERS[name].fabric
            print(f"{name:14s} {topo.describe()}; fabric: "
                  f"{fabric.describe() if fabric else 'non-blocking'}")
            print(textwrap.fill(f"source: {topo.source}", width=100, initial_indent=" " * 15,
                                subsequent_indent=" " * 15, break_on_hyphens=False))
        return 0
    cluster = nccl_cluster(args)
    if cluster is not None:
        return cmd_simulate_nccl(args, cluster)
    args.algo, coll = algo_of(args), coll_of(args)
    if args.algo is None:
        raise CollsimError("simulate needs --algo, or a cluster (--cluster) to run NCCL's choice "
                           "on")
    if args.proto or args.env:
        raise CollsimError("--proto and --env set NCCL's run: they take --cluster with a preset or "
                           "cluster file and one of NCCL's algorithms (ring, nccl-tree, nvls, "
                           "nvlstree, nvls-sharp, collnet-direct, collnet-chain) or none")
    topo = topology_from_args(args, args.ranks)
    ranks = args.ranks = args.ranks or topo.ranks
    fit_to_topology(args, topo)
    # the topology is built: the schedule takes it as is
    cluster, args.cluster = args.cluster, None
    shift = ring_shift(ranks, element_count(args), args.itemsize,
                       validate(args.algo, ranks, **algo_params(args)),
                       topo) if args.algo == "ring" and coll == "all_reduce" else None
    # (collsim.simulate.shift)
    if shift is not None and shift.schedule is not None and not args.transfers:
        s = shift.schedule
    else:
        q = resolve(args.algo, ranks, element_count(args), args.itemsize, coll,
                    **algo_params(args))
        require_simulation_bound(args.algo, ranks, args.channels or 1,
                                 get(args.algo, coll).transfer_bound(ranks, q))
        s = build_from_args(args)
        shift = (shift
                 and replace(shift, schedule=None,
                             whole=shift.whole or "--transfers: every transfer asked for"))
    args.cluster = cluster
    require_simulation(s)
    r = simulate(s, topo, gamma=args.gamma, progress=not args.json, policy=args.policy)
    rows = (shift.resources(r.resource_table(), topo) if shift and shift.schedule
            else r.resource_table())
    nbytes = element_count(args) * args.itemsize
    alg, bus = get_collective(s.collective).bandwidths(nbytes, r.time_s * 1e6, ranks)
    obj = {"algo": args.algo, "ranks": ranks, "bytes": nbytes, "topology": topo.name,
           "channels": s.n_channels, "steps": shift.steps if shift else s.n_steps,
           "transfers": shift.transfers if shift else s.n_transfers,
           "time_s": round_seconds(r.time_s), "algbw_GBps": alg, "busbw_GBps": bus,
           "resources": [{k: x[k] for k in ("name", "busy", "bytes")} for x in rows]}
    if shift:
        obj["symmetry"] = shift.symmetry
    if args.json:
        if args.transfers:
            obj["result"] = r.to_dict(transfers=True)
        print(finite_json(obj))
        return 0
    print(f"{args.algo} P={ranks} {nbytes} B on {topo.name}, {s.n_channels} channel(s): "
          f"{r.time_s * 1e6:.3f} us  algbw {alg:.2f} GB/s  busbw {bus:.2f} GB/s  ({obj['steps']} "
          f"steps, {obj['transfers']} transfers)")
    print_utilisation(rows, r.time_s)
    return 0


def cmd_sweep(args) -> int:
    if args.plot:
        check_output(args.plot, [args.cluster] if args.cluster else [], "figure")
    algos = [a for a in args.algos.split(",") if a]
    if not algos:
        raise CollsimError("--algos needs at least one algorithm name")
    size_list = sizes(args.min_bytes, args.max_bytes, args.factor)
    params = {k: v for k, v in algo_params(args).items() if v is not None and k != "direct"}
    if args.method == "simulate" or args.cluster:
        topo = topology_from_args(args, args.ranks)
        ranks = args.ranks or topo.ranks
        table = sweep(algos, ranks, size_list, method="simulate", topology=topo, gamma=args.gamma,
                      policy=args.policy, **params)
    else:
        if args.alpha is None or args.beta is None:
            raise CollsimError("sweep needs --alpha and --beta (closed form) or a topology with "
                               "--method simulate")
        if args.ranks is None:
            raise CollsimError("--ranks is required (or a machine: --cluster)")
        ranks = args.ranks
        params.update((k, v) for k, v in (("alpha_inter", args.alpha_inter),
                                          ("beta_inter", args.beta_inter))
                      if v is not None)
        table = sweep(algos, ranks, size_list, alpha=args.alpha, beta=args.beta, gamma=args.gamma,
                      method="closed", **params)
    rows = _rows(table)
    if args.json:
        print(finite_json(rows))
    else:
        print(f"{'algo':20s} {'size (B)':>14s} {'time (us)':>14s} {'algbw (GB/s)':>13s} "
              f"{'busbw (GB/s)':>13s}")
        for r in rows:
            print(f"{r['algo']:20s} {r['bytes']:14d} {r['time_s'] * 1e6:14.3f} "
                  f"{r['algbw_GBps']:13.3f} {r['busbw_GBps']:13.3f}")
    if args.plot:
        _plot_sweep(args.plot, algos, ranks, size_list, rows)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _plot_sweep(path: str, algos: list[str], ranks: int, size_list, rows: list[dict]) -> None:
    """Time and busbw vs size, one curve per algorithm, crossovers marked (a figure at ``path``,
    in the format of its extension)."""
    from matplotlib.figure import Figure

    series = {a: np.array([r["time_s"] for r in rows if r["algo"] == a]) for a in algos}
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    for ax, kind in zip(fig.subplots(1, 2), ("time", "busbw")):
        CurvesView(algos, kind, ax=ax).update(size_list, series,
                                              factor=ALLREDUCE.busbw_factor(ranks),
                                              title=f"AllReduce on {ranks} ranks")
    save_figure(fig, path)


def _rows(table) -> list[dict]:
    """Normalise a sweep table (list of records or dict of columns) to a list of plain dicts."""
    if isinstance(table, dict):
        keys = list(table)
        n = len(table[keys[0]]) if keys else 0
        table = [{k: table[k][i] for k in keys} for i in range(n)]
    out = []
    for r in table:
        out.append({"algo": str(r["algo"]), "bytes": int(r["bytes"]), "time_s": float(r["time_s"]),
                    "algbw_GBps": float(r["algbw_GBps"]), "busbw_GBps": float(r["busbw_GBps"])})
    return out


def register(sub) -> None:
    p = sub.add_parser("simulate", help="event-driven simulation of a schedule on a machine",
                       description=PREDICTORS)
    add_algo_args(p, required=False)
    p.add_argument("--bytes", type=size_arg, help="bytes per rank buffer")
    p.add_argument("--proto", choices=("LL", "LL128", "Simple"),
                   help="NCCL's protocol for NCCL's schedule (--cluster; default NCCL's choice)")
    p.add_argument("--env", nargs="+", action="extend", metavar="NCCL_X=V",
                   help="NCCL variables of NCCL's run (--cluster), as for predict-nccl")
    add_topology_args(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--transfers", action="store_true",
                   help="with --json: include every transfer's start/end")
    p.add_argument("--list-presets", action="store_true",
                   help="list topology presets and their sources")
    p.set_defaults(func=cmd_simulate, count=None)

    p = sub.add_parser("sweep", help="time, algbw and busbw over sizes for several algorithms")
    p.add_argument("--algos", default="ring,double-tree", help="comma-separated algorithm names")
    p.add_argument("--ranks", type=positive_int)
    p.add_argument("--gpus-per-node", type=positive_int)
    p.add_argument("-b", "--min-bytes", type=size_arg, default=8)
    p.add_argument("-e", "--max-bytes", type=size_arg, default=16 << 30)
    p.add_argument("-f", "--factor", type=positive_int, default=2)
    p.add_argument("--method", choices=("closed", "simulate"), default="closed")
    add_topology_args(p)
    p.add_argument("--slices", type=positive_int, default=1)
    p.add_argument("--chunks", type=positive_int)
    p.add_argument("--channels", type=int_in(1, MAX_CHANNELS), default=1,
                   help="channels C >= 1 of every algorithm")
    p.add_argument("--inter", choices=("ring", "tree"), default="ring")
    p.add_argument("--plot", type=plot_path,
                   help="write a busbw/time vs size figure (.png, .pdf, .svg, ...)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweep)
