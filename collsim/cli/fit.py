"""``collsim fit`` and ``collsim explain``: the NCCL-shaped model (``collsim compare``:
``collsim.cli.compare``).

    collsim fit FILES... -o PARAMS.json [--holdout odd|even|timing|run] [--label ALGO/PROTO]
                [--out-of-place] [--overhead-from AB_FILES...]
    collsim fit --cluster SPEC [--nodes N] QUICK... [-o FITTED.yaml]   # calibrate it on a quick run
    collsim explain --params PARAMS.json --algo A --proto P --ranks N [--nodes M]
                    [--sizes 8 1M 4G] [--buffsize BYTES] [--timing graph|eager] [--reused-slices K]

nccl-tests logs are labelled from their names (``graph_Ring_LL.log`` -> Ring/LL) unless --label is
given. ``--overhead-from`` gives A/B files (the same sizes timed by each harness and by the runner
with NCCL_GRAPH_MIXING_SUPPORT=0; nccl-tests logs among them are read as NCCL's default choice) from
which each harness's per-call overhead is measured (``collsim.fit.harness_overheads``) and held
fixed in the fit. In-place results are used unless --out-of-place. Times are microseconds, sizes
bytes (8, 64K, 1M, 4G), bandwidths GB/s (1e9 B/s), errors percent. Outputs (``-o``) are checked
before any work and never written over an input (``collsim.outputs``); ``--channels`` is 1 to 64
(NCCL's MAXCHANNELS), ``--buffsize`` within ``collsim.inputs.BUFFSIZE_RANGE``.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from collsim.cli.args import int_in, positive_int
from collsim.cli.compare import add_overhead_argument, percent
from collsim.errors import CollsimError
from collsim.fit import fit
from collsim.fit.points import load_points
from collsim.fit.quick import fit_quick
from collsim.fitted.layout import Config
from collsim.fitted.model import explain
from collsim.fitted.params import load_params, save_params
from collsim.inputs import BUFFSIZE_RANGE, MAX_CALLS, MAX_CHANNELS
from collsim.machine import load_cluster
from collsim.outputs import atomic_write, check_output
from collsim.units import format_size, parse_size


def _fit_cluster(args) -> int:
    """``collsim fit --cluster SPEC QUICK... [-o FITTED.yaml]``: the description's uncertain inputs
    fitted on a quick run of the machine (``collsim.fit.quick``)."""
    if args.output:
        check_output(args.output,
                     [*args.files, *([args.cluster] if Path(args.cluster).suffix else [])],
                     "cluster file")
    res = fit_quick(load_cluster(args.cluster, args.nodes), args.files, args.label,
                    not args.out_of_place)
    print(f"fitted on {res['points']} measured sizes through the simulation:")
    for k, v in res["values"].items():
        print(f"  {k:17s} {res['start'][k]:9.4g} -> {v:.4g}")
    if res["harness"]:
        print(f"  {res['harness']} (a harness collsim never measured): {res['harness_us']:+.2f} us "
              "a call, "
              "fitted in place of the per-step cost")
    print(f"median |time error| on them {percent(res['before']['median_abs_rel_error'])} -> "
          f"{percent(res['after']['median_abs_rel_error'])} (p90 "
          f"{percent(res['before']['p90_abs_rel_error'])} -> "
          f"{percent(res['after']['p90_abs_rel_error'])}); check it on other sizes or algorithms "
          "with compare")
    if args.output:
        d = {k: v for k, v in res["cluster"].to_dict().items() if v is not None
             and k != "nccl_asked"}
        with atomic_write(args.output, "cluster file") as f:
            f.write(yaml.safe_dump(d, sort_keys=False))
        print(f"calibrated cluster -> {args.output} (predict-nccl, simulate and diagnose read it)")
    return 0


def _fit(args) -> int:
    if args.cluster:
        return _fit_cluster(args)
    if not args.output:
        raise CollsimError("fit needs -o PARAMS.json (or --cluster SPEC to calibrate it on a quick "
                           "run)")
    check_output(args.output, [*args.files, *(args.overhead_from or [])], "parameters file")
    overhead = load_points(args.overhead_from, "default",
                           not args.out_of_place) if args.overhead_from else None
    params, report = fit(load_points(args.files, args.label, not args.out_of_place, args.nodes),
                         args.holdout,
                         overhead_points=overhead)
    params.meta["files"] = [str(f) for f in args.files]
    if overhead:
        params.meta["overhead_files"] = [str(f) for f in args.overhead_from]
        print("harness overhead per call: " + ", ".join(f"{k} {v:.2f} us" for k,
                                                        v in params.harness_us.items()))
        if params.start_us:
            print("clock cost per measurement: " + ", ".join(f"{k} {v:.1f} us" for k,
                                                             v in params.start_us.items()))
    save_params(params, args.output)
    print(f"fitted on {params.meta['n_train']} points, tested on {params.meta['n_test']} held out"
          f" ({args.holdout}) -> {args.output}")
    if params.meta["unseen"]:
        print("set by the prior (the data cannot tell them apart): "
              + "; ".join(f"{k} {', '.join(v)}" for k, v in params.meta["unseen"].items()))
    print(f"{'configuration':48s} {'n':>4s} {'median':>7s} {'p90':>7s}")
    for name, r in report.items():
        print(f"{name:48s} {r['n']:4d} {percent(r['median_abs_rel_error']):>7s} "
              f"{percent(r['p90_abs_rel_error']):>7s}")
    return 0


def _explain(args) -> int:
    params = load_params(args.params)
    sizes = [parse_size(s) for s in args.sizes]
    cfg = Config(args.ranks, nodes=args.nodes, intra=args.intra, buffsize=args.buffsize,
                 channels=args.channels, timing=args.timing, slices=args.reused_slices)
    rows = explain(params, args.algo, args.proto, sizes, cfg)
    links = list(rows[0]["link_utilisation"])
    print(f"{'size':>6s} {'time us':>10s} {'busbw':>7s} {'ch':>3s} {'steps':>6s} {'dominant':>10s} "
          " "
          + " ".join(f"{t[:5]:>5s}"
                     for t in rows[0]["shares"]) + "  " + " ".join(f"{k} util" for k in links))
    for r in rows:
        print(f"{format_size(r['bytes']):>6s} {r['time_us']:10.2f} {r['busbw_GBps']:7.1f} "
              f"{r['channels']:3d}"
              f" {r['steps']:6d} {r['dominant']:>10s}  " + " ".join(f"{100 * v:4.0f}%"
                                                                    for v in r["shares"].values())
              + "  " + " ".join(f"{100 * r['link_utilisation'][k]:8.1f}%" for k in links))
    return 0


def register(sub) -> None:
    p = sub.add_parser("fit",
                       help="fit the NCCL-shaped model to measurements, report held-out error; "
                            "with --cluster, calibrate the cluster on a quick run of it")
    p.add_argument("files", nargs="+", help="runner .jsonl files or nccl-tests output")
    p.add_argument("-o", "--output",
                   help="parameters JSON to write (with --cluster: the cluster YAML with its "
                        "calibrated inputs)")
    p.add_argument("--cluster",
                   help="calibrate this cluster description on a quick run of the machine "
                        "(nccl-tests output or runners/allreduce_bench.py --quick): its intra-node "
                        "and per-NIC efficiency, network hop and per-step cost (collsim.fit.quick)")
    p.add_argument("--holdout", default="odd", choices=["odd", "even", "timing", "run"],
                   help="fit even powers of two/test odd (odd), the reverse (even), eager->graph "
                        "(timing), first file->others (run)")
    p.add_argument("--label", help="ALGO/PROTO for nccl-tests logs (default: from the file name)")
    p.add_argument("--nodes", type=positive_int,
                   help="nodes of the measured runs (for logs whose hosts do not tell them apart)")
    p.add_argument("--out-of-place", action="store_true",
                   help="use out-of-place results, not in-place")
    add_overhead_argument(p)
    p.set_defaults(func=_fit)

    p = sub.add_parser("explain", help="per size: the dominant term and link utilisation")
    p.add_argument("--params", required=True)
    p.add_argument("--algo", required=True)
    p.add_argument("--proto", required=True)
    p.add_argument("--ranks", type=positive_int, required=True)
    p.add_argument("--nodes", type=positive_int, default=1)
    p.add_argument("--intra", default="nvlink", choices=["nvlink", "pcie"])
    p.add_argument("--buffsize", type=int_in(*BUFFSIZE_RANGE),
                   help="NCCL_BUFFSIZE in bytes (default 4 MiB)")
    p.add_argument("--channels", type=int_in(1, MAX_CHANNELS),
                   help="channel count, 1 to 64 (default: the params')")
    p.add_argument("--timing", default="graph", choices=["graph", "eager"])
    p.add_argument("--reused-slices", type=int_in(0, MAX_CALLS), default=0, metavar="K",
                   help="consecutive calls cycle through K buffer slices of the size: 0 never "
                        "reuse the bytes (a training step, default), 1 reuse one (a benchmark "
                        "loop), 20 nccl-tests -n 20")
    p.add_argument("--sizes", nargs="+", default=["8", "1K", "64K", "1M", "16M", "256M", "4G"])
    p.set_defaults(func=_explain)
