"""Core sub-commands: schedule, check, predict, simulate, sweep.

Examples::

    collsim schedule --algo ring --ranks 4 --count 8 --json
    collsim check --algo tree --ranks 7 --count 1000
    collsim check --file my_schedule.json
    collsim predict --algo ring --ranks 8 --bytes 1073741824 --alpha 5e-6 --beta 1e-11 --json
    collsim simulate --algo ring --ranks 8 --bytes 1G --alpha 5e-6 --beta 1e-11 --json
    collsim simulate --algo hierarchical --ranks 32 --bytes 256M --preset ib-400g --gpus-per-node 8
    collsim sweep --algos ring,tree,hierarchical --ranks 32 --preset ib-400g --plot sweep.png

Units: sizes in bytes (suffixes K, M, G = binary multiples, as nccl-tests),
alpha in seconds, beta in seconds per byte, gamma in seconds per byte, times
printed in microseconds (``time_us``) and returned as seconds (``time_s``) in
JSON, bandwidths in GB/s (1e9 bytes/s) with nccl-tests' algbw/busbw.
"""
from __future__ import annotations

import argparse
import json
import sys

from collsim.errors import CollsimError


# ------------------------------------------------------------------ arguments
def _size(text: str) -> int:
    from collsim.measurements import parse_size
    try:
        return parse_size(text)
    except CollsimError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _int_at_least(minimum: int):
    """An argparse type: an integer >= ``minimum``."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {v}")
        return v
    return parse


_positive_int = _int_at_least(1)
_nonneg_int = _int_at_least(0)


def _nonneg_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return v


def _add_algo_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--algo", required=required, help="algorithm name (see `collsim schedule --list`)")
    p.add_argument("--ranks", type=_positive_int, help="number of ranks P >= 1")
    p.add_argument("--gpus-per-node", type=_positive_int, help="GPUs per node (hierarchical algorithms)")
    p.add_argument("--slices", type=_positive_int, default=1, help="ring pipeline slices per chunk")
    p.add_argument("--chunks", type=_positive_int, help="tree pipeline chunks (default: by size)")
    p.add_argument("--inter", choices=("ring", "tree"), default="ring",
                   help="inter-node algorithm of `hierarchical`")
    p.add_argument("--itemsize", type=_positive_int, default=4, help="bytes per element (default 4)")


def _algo_params(args) -> dict:
    return {"gpus_per_node": args.gpus_per_node, "slices": args.slices, "chunks": args.chunks,
            "inter": args.inter}


def _count(args) -> int:
    """Element count from --count or --bytes (which must be a multiple of --itemsize)."""
    if getattr(args, "count", None) is not None:
        return args.count
    nbytes = args.bytes
    if nbytes is None:
        raise CollsimError("give the buffer size with --bytes (or --count elements)")
    if nbytes % args.itemsize:
        raise CollsimError(f"--bytes {nbytes} is not a multiple of --itemsize {args.itemsize}")
    return nbytes // args.itemsize


def _need_ranks(args) -> int:
    if args.ranks is None:
        raise CollsimError("--ranks is required")
    return args.ranks


def _build(args):
    from collsim.algorithms import build_schedule
    return build_schedule(args.algo, _need_ranks(args), _count(args), args.itemsize, **_algo_params(args))


def _add_topology_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("topology (one of: --preset, --topology FILE, or --alpha/--beta for a uniform one)")
    g.add_argument("--preset", help="topology preset name (see `collsim simulate --list-presets`)")
    g.add_argument("--nodes", type=_positive_int, help="resize the preset to this many nodes")
    g.add_argument("--topology", help="topology file (JSON or YAML; format in collsim.topology)")
    g.add_argument("--alpha", type=_nonneg_float, help="latency per message, seconds")
    g.add_argument("--beta", type=_nonneg_float, help="seconds per byte (1 / bandwidth)")
    g.add_argument("--alpha-inter", type=_nonneg_float, help="inter-node alpha, seconds (hierarchical)")
    g.add_argument("--beta-inter", type=_nonneg_float, help="inter-node beta, seconds per byte (hierarchical)")
    g.add_argument("--gamma", type=_nonneg_float, default=0.0, help="reduction cost, seconds per byte (default 0)")


def _topology(args, ranks: int):
    """The topology the arguments ask for, checked against ``ranks``."""
    from collsim.topology import Link, Topology, get_preset, load_topology
    chosen = [x for x in ("preset", "topology") if getattr(args, x)]
    if args.alpha is not None or args.beta is not None:
        chosen.append("alpha/beta")
    if len(chosen) != 1:
        raise CollsimError("give exactly one topology: --preset NAME, --topology FILE, or --alpha and --beta"
                           + (f" (got {', '.join(chosen)})" if chosen else ""))
    if args.preset:
        gpn = args.gpus_per_node
        nodes = args.nodes
        if nodes is None:
            base = get_preset(args.preset, gpus_per_node=gpn)
            if ranks % base.gpus_per_node:
                raise CollsimError(f"--ranks {ranks} is not a multiple of the preset's {base.gpus_per_node} "
                                   "GPUs per node (give --gpus-per-node)")
            nodes = ranks // base.gpus_per_node
        topo = get_preset(args.preset, nodes=nodes, gpus_per_node=gpn)
    elif args.topology:
        topo = load_topology(args.topology)
        if not topo.name:
            from dataclasses import replace
            from pathlib import Path
            topo = replace(topo, name=Path(args.topology).stem)
    else:
        if args.alpha is None or args.beta is None:
            raise CollsimError("a uniform topology needs both --alpha and --beta")
        if args.beta == 0:
            raise CollsimError("--beta must be > 0 seconds per byte")
        if args.gpus_per_node and args.gpus_per_node < ranks:
            if args.alpha_inter is None or args.beta_inter is None:
                raise CollsimError("--gpus-per-node with --alpha/--beta needs --alpha-inter and --beta-inter")
            if ranks % args.gpus_per_node:
                raise CollsimError(f"--ranks {ranks} is not a multiple of --gpus-per-node {args.gpus_per_node}")
            gpn = args.gpus_per_node
            topo = Topology(ranks // gpn, gpn, Link(args.alpha, args.beta), Link(args.alpha_inter, args.beta_inter),
                            gpn, "two-level", "from --alpha/--beta/--alpha-inter/--beta-inter")
        else:
            topo = Topology.uniform(ranks, args.alpha, args.beta)
    if topo.ranks != ranks:
        raise CollsimError(f"the topology has {topo.ranks} GPUs ({topo.nodes} nodes x {topo.gpus_per_node}), "
                           f"but --ranks is {ranks}")
    return topo


def _seconds(t: float) -> float:
    """A time rounded to 12 significant digits: the closed form and the simulation add the same
    terms in different orders, so they agree to ~1e-16 relative, and print identically."""
    return float(f"{t:.12g}")


def _emit(args, obj: dict, text: str) -> None:
    print(json.dumps(obj) if args.json else text)


def _bw(nbytes: int, ranks: int, time_s: float) -> tuple[float, float]:
    from collsim.sweep import algbw_GBps, busbw_factor
    alg = algbw_GBps(nbytes, time_s)
    return alg, alg * busbw_factor(ranks)


# ------------------------------------------------------------------ commands
def cmd_schedule(args) -> int:
    from collsim.algorithms import ALGORITHMS
    if args.list:
        for name, info in ALGORITHMS.items():
            print(f"{name:20s} {info.description}")
        return 0
    if args.algo is None or args.count is None:
        raise CollsimError("schedule needs --algo, --ranks and --count (or --list)")
    s = _build(args)
    if args.json:
        print(s.to_json())
        return 0
    print(f"{s!r}")
    for k, step in enumerate(s.steps[: args.max_steps]):
        moves = ", ".join(f"{t.src}->{t.dst}[{t.offset}:{t.offset + t.count}]{'+' if t.op == 'reduce' else '='}"
                          for t in step[:8])
        more = f" ... (+{len(step) - 8})" if len(step) > 8 else ""
        print(f"step {k:4d}: {moves}{more}")
    if s.n_steps > args.max_steps:
        print(f"... {s.n_steps - args.max_steps} more steps (use --json for all)")
    return 0


def cmd_check(args) -> int:
    from collsim.checker import check
    from collsim.schedule import Schedule
    if args.file:
        if args.algo:
            raise CollsimError("give either --file or --algo, not both")
        try:
            with open(args.file) as f:
                text = f.read()
        except OSError as e:
            raise CollsimError(f"cannot read schedule file {args.file}: {e.strerror}") from None
        s = Schedule.from_json(text)
    elif args.algo:
        if args.algo.startswith("lecture-"):
            from collsim import lecture
            fn = {"lecture-ring": lecture.lecture_ring, "lecture-tree": lecture.lecture_tree}.get(args.algo)
            if fn is None:
                raise CollsimError(f"unknown lecture schedule {args.algo!r} (lecture-ring, lecture-tree)")
            s = fn(_need_ranks(args), _count(args))
        else:
            s = _build(args)
    else:
        raise CollsimError("check needs --algo NAME (with --ranks and --count) or --file SCHEDULE.json")
    r = check(s, seed=args.seed)
    if args.json:
        print(json.dumps({"ok": r.ok, "error": r.error, "step": r.step, "transfer": r.transfer,
                          "steps": r.n_steps, "transfers": r.n_transfers,
                          "bytes_sent": [int(x) for x in r.bytes_sent],
                          "bytes_recv": [int(x) for x in r.bytes_recv]}))
    else:
        print(r.summary())
    return 0 if r.ok else 1


def cmd_predict(args) -> int:
    from collsim.cost import closed_form
    ranks = _need_ranks(args)
    nbytes = args.bytes
    if args.alpha is None or args.beta is None:
        raise CollsimError("predict needs --alpha (s) and --beta (s/byte)")
    params = {k: v for k, v in (("gpus_per_node", args.gpus_per_node), ("alpha_inter", args.alpha_inter),
                                ("beta_inter", args.beta_inter)) if v is not None}
    if args.chunks is not None:
        params["chunks"] = args.chunks
    if args.slices != 1:
        params["slices"] = args.slices
    if args.inter != "ring":
        params["inter"] = args.inter
    t = closed_form(args.algo, ranks, nbytes, args.alpha, args.beta, args.gamma, **params)
    alg, bus = _bw(nbytes, ranks, t)
    obj = {"algo": args.algo, "ranks": ranks, "bytes": nbytes, "alpha": args.alpha, "beta": args.beta,
           "gamma": args.gamma, **params, "time_s": _seconds(t), "algbw_GBps": alg, "busbw_GBps": bus}
    _emit(args, obj, f"{args.algo} P={ranks} {nbytes} B: {t * 1e6:.3f} us  algbw {alg:.2f} GB/s  busbw {bus:.2f} GB/s")
    return 0


def cmd_simulate(args) -> int:
    from collsim.simulate import simulate
    from collsim.topology import PRESETS
    if args.list_presets:
        for name, topo in PRESETS.items():
            print(f"{name:14s} {topo.describe()}")
        return 0
    if args.algo is None:
        raise CollsimError("simulate needs --algo")
    ranks = _need_ranks(args)
    topo = _topology(args, ranks)
    if args.gpus_per_node is None and args.algo.startswith("hierarchical"):
        args.gpus_per_node = topo.gpus_per_node
    s = _build(args)
    r = simulate(s, topo, gamma=args.gamma)
    alg, bus = _bw(s.nbytes, ranks, r.time_s)
    obj = {"algo": args.algo, "ranks": ranks, "bytes": s.nbytes, "topology": topo.name, "steps": s.n_steps,
           "transfers": s.n_transfers, "time_s": _seconds(r.time_s), "algbw_GBps": alg, "busbw_GBps": bus}
    if args.json:
        if args.transfers:
            obj["result"] = r.to_dict(transfers=True)
        print(json.dumps(obj))
        return 0
    print(f"{args.algo} P={ranks} {s.nbytes} B on {topo.name}: {r.time_s * 1e6:.3f} us  "
          f"algbw {alg:.2f} GB/s  busbw {bus:.2f} GB/s  ({s.n_steps} steps, {s.n_transfers} transfers)")
    _print_utilisation(r)
    return 0


def _print_utilisation(r) -> None:
    """Busy share of the run per kind of resource (send/receive ports, NICs): max and mean."""
    import re
    if r.time_s <= 0:
        return
    kinds: dict[str, list[float]] = {}
    for name, busy in r.resource_busy_s.items():
        kinds.setdefault(re.sub(r"\d+", "N", name), []).append(busy / r.time_s)
    print(f"{'resource':18s} {'count':>6s} {'busiest':>8s} {'mean':>7s}   (share of the run spent busy)")
    for kind, shares in sorted(kinds.items(), key=lambda kv: -max(kv[1])):
        print(f"{kind:18s} {len(shares):6d} {100 * max(shares):7.1f}% {100 * sum(shares) / len(shares):6.1f}%")


def cmd_sweep(args) -> int:
    from collsim.sweep import sizes, sweep
    ranks = _need_ranks(args)
    algos = [a for a in args.algos.split(",") if a]
    if not algos:
        raise CollsimError("--algos needs at least one algorithm name")
    size_list = sizes(args.min_bytes, args.max_bytes, args.factor)
    if args.method == "simulate" or args.preset or args.topology:
        topo = _topology(args, ranks)
        if args.gpus_per_node is None:
            args.gpus_per_node = topo.gpus_per_node if topo.gpus_per_node < ranks else None
        table = sweep(algos, ranks, size_list, method="simulate", topology=topo, gamma=args.gamma,
                      **{k: v for k, v in _algo_params(args).items() if v is not None})
    else:
        if args.alpha is None or args.beta is None:
            raise CollsimError("sweep needs --alpha and --beta (closed form) or a topology with --method simulate")
        params = {k: v for k, v in (("gpus_per_node", args.gpus_per_node), ("alpha_inter", args.alpha_inter),
                                    ("beta_inter", args.beta_inter)) if v is not None}
        table = sweep(algos, ranks, size_list, alpha=args.alpha, beta=args.beta, gamma=args.gamma,
                      method="closed", **params)
    rows = _rows(table)
    if args.json:
        print(json.dumps(rows))
    else:
        print(f"{'algo':20s} {'size (B)':>14s} {'time (us)':>14s} {'algbw (GB/s)':>13s} {'busbw (GB/s)':>13s}")
        for r in rows:
            print(f"{r['algo']:20s} {r['size']:14d} {r['time_s'] * 1e6:14.3f} {r['algbw_GBps']:13.3f} "
                  f"{r['busbw_GBps']:13.3f}")
    if args.plot:
        _plot_sweep(args.plot, algos, ranks, size_list, rows)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _plot_sweep(path: str, algos: list[str], ranks: int, size_list, rows: list[dict]) -> None:
    """Time and busbw vs size, one curve per algorithm, crossovers marked (PNG at ``path``)."""
    import matplotlib
    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.figure import Figure
    from collsim.sweep import busbw_factor
    from collsim.viz.curves import CurvesView
    series = {a: np.array([r["time_s"] for r in rows if r["algo"] == a]) for a in algos}
    fig = Figure(figsize=(13, 4.6), layout="constrained")
    for ax, kind in zip(fig.subplots(1, 2), ("time", "busbw")):
        CurvesView(algos, kind, ax=ax).update(size_list, series, factor=busbw_factor(ranks),
                                              title=f"AllReduce on {ranks} ranks")
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise CollsimError(f"cannot write plot {path}: {e.strerror}") from None


def _rows(table) -> list[dict]:
    """Normalise a sweep table (list of records or dict of columns) to a list of plain dicts."""
    if isinstance(table, dict):
        keys = list(table)
        n = len(table[keys[0]]) if keys else 0
        table = [{k: table[k][i] for k in keys} for i in range(n)]
    out = []
    for r in table:
        out.append({"algo": str(r["algo"]), "size": int(r["size"]), "time_s": float(r["time_s"]),
                    "algbw_GBps": float(r["algbw_GBps"]), "busbw_GBps": float(r["busbw_GBps"])})
    return out


# ------------------------------------------------------------------ register
def register(sub) -> None:
    p = sub.add_parser("schedule", help="print an algorithm's schedule (steps of transfers)")
    _add_algo_args(p, required=False)
    p.add_argument("--count", type=_nonneg_int, help="elements per rank buffer (>= 0)")
    p.add_argument("--json", action="store_true", help="print the schedule as JSON (schema in collsim.schedule)")
    p.add_argument("--list", action="store_true", help="list the algorithms")
    p.add_argument("--max-steps", type=_positive_int, default=20, help="steps shown in text mode")
    p.set_defaults(func=cmd_schedule)

    p = sub.add_parser("check", help="execute a schedule on random integers and prove every rank gets the sum")
    _add_algo_args(p, required=False)
    p.add_argument("--count", type=_nonneg_int, help="elements per rank buffer")
    p.add_argument("--bytes", type=_size, help="bytes per rank buffer (instead of --count)")
    p.add_argument("--file", help="a schedule JSON file (as written by `collsim schedule --json`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("predict", help="closed-form alpha-beta-gamma time of one AllReduce")
    _add_algo_args(p)
    p.add_argument("--bytes", type=_size, required=True, help="bytes per rank buffer")
    p.add_argument("--alpha", type=_nonneg_float, help="seconds per message")
    p.add_argument("--beta", type=_nonneg_float, help="seconds per byte")
    p.add_argument("--alpha-inter", type=_nonneg_float, help="inter-node alpha (hierarchical)")
    p.add_argument("--beta-inter", type=_nonneg_float, help="inter-node beta (hierarchical)")
    p.add_argument("--gamma", type=_nonneg_float, default=0.0, help="seconds per byte reduced (default 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)

    p = sub.add_parser("simulate", help="event-driven simulation of a schedule on a topology")
    _add_algo_args(p, required=False)
    p.add_argument("--bytes", type=_size, help="bytes per rank buffer")
    _add_topology_args(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--transfers", action="store_true", help="with --json: include every transfer's start/end")
    p.add_argument("--list-presets", action="store_true", help="list topology presets and their sources")
    p.set_defaults(func=cmd_simulate, count=None)

    p = sub.add_parser("sweep", help="time, algbw and busbw over sizes for several algorithms")
    p.add_argument("--algos", default="ring,tree", help="comma-separated algorithm names")
    p.add_argument("--ranks", type=_positive_int)
    p.add_argument("--gpus-per-node", type=_positive_int)
    p.add_argument("-b", "--min-bytes", type=_size, default=8)
    p.add_argument("-e", "--max-bytes", type=_size, default=16 << 30)
    p.add_argument("-f", "--factor", type=_positive_int, default=2)
    p.add_argument("--method", choices=("closed", "simulate"), default="closed")
    _add_topology_args(p)
    p.add_argument("--slices", type=_positive_int, default=1)
    p.add_argument("--chunks", type=_positive_int)
    p.add_argument("--inter", choices=("ring", "tree"), default="ring")
    p.add_argument("--plot", help="write a busbw/time vs size figure (PNG)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_sweep)
