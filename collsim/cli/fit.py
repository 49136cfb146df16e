"""``collsim fit``, ``collsim compare`` and ``collsim explain``: the NCCL-shaped model.

    collsim fit FILES... -o PARAMS.json [--holdout odd|even|timing|run] [--label ALGO/PROTO]
                [--out-of-place] [--overhead-from AB_FILES...]
    collsim fit --cluster SPEC [--nodes N] QUICK... [-o FITTED.yaml]   # calibrate it on a quick run
    collsim compare --params PARAMS.json --measured FILE... [--algo A --proto P --ranks N]
                    [--holdout auto|all|odd|even|timing] [--nccl-log LOG] [--out-of-place]
                    [--overhead-from AB_FILES...] [--plot PNG] [--json]
    collsim compare --cluster SPEC [--nodes N] --measured FILE... [--label ALGO/PROTO] [--json]
    collsim compare EXECUTED.jsonl... (--cluster SPEC [--nodes N] [--gpus-per-node G] | --alpha S --beta S/B)
                    [--schedule FILE...] [--gamma S/B] [--json]
    collsim explain --params PARAMS.json --algo A --proto P --ranks N [--nodes M]
                    [--sizes 8 1M 4G] [--buffsize BYTES] [--timing graph|eager] [--reused-slices K]

nccl-tests logs are labelled from their names (``graph_Ring_LL.log`` -> Ring/LL) unless --label is
given. ``--overhead-from`` gives A/B files (the same sizes timed by each harness and by the runner
with NCCL_GRAPH_MIXING_SUPPORT=0; nccl-tests logs among them are read as NCCL's default choice) from
which each harness's per-call overhead is measured (``collsim.fit.harness_overheads``) and held
fixed in the fit; given to compare, they add the overheads of harnesses measured elsewhere. In-place
results are used unless --out-of-place. ``--nccl-log`` gives NCCL's printed TUNING table and
per-size choices (an NCCL_DEBUG=INFO log or a runner .jsonl with ``nccl_probe``) to files without.
``compare EXECUTED.jsonl...`` takes files of ``runners/schedule_bench.py`` (collsim schedules run on
a real backend) and prints, per schedule and size, the measured time, collsim's event simulation of
that very schedule on the topology given as ``collsim simulate`` takes it
(``collsim.cli.args.add_topology_args``), and the backend's own all_reduce from the same run
(``collsim.fit.compare.executed``).
Times are microseconds, sizes bytes (8, 64K, 1M, 4G), bandwidths GB/s (1e9 B/s), errors are
|predicted / measured - 1| as fractions (``--json``) or percent (text). Outputs (``-o``,
``--plot``) are checked before any work and never written over an input (``collsim.outputs``);
``--channels`` is 1 to 64 (NCCL's MAXCHANNELS), ``--buffsize`` within
``collsim.inputs.BUFFSIZE_RANGE``.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from collsim.cli.args import add_topology_args, finite_json, int_in, plot_path, positive_int, topology_from_args
from collsim.errors import CollsimError
from collsim.fit import fit
from collsim.fit.cluster_compare import compare_cluster
from collsim.fit.compare import attach_probe, compare, executed, select
from collsim.fit.overheads import with_overheads
from collsim.fit.points import load_points
from collsim.fit.quick import fit_quick
from collsim.fitted.layout import Config
from collsim.fitted.model import explain
from collsim.fitted.params import load_params, save_params
from collsim.inputs import BUFFSIZE_RANGE, MAX_CALLS, MAX_CHANNELS
from collsim.machine import load_cluster
from collsim.outputs import atomic_write, check_output
from collsim.units import format_size, parse_size
from collsim.viz.measured import plot_compare


def _pct(x) -> str:
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def _fit_cluster(args) -> int:
    """``collsim fit --cluster SPEC QUICK... [-o FITTED.yaml]``: the description's uncertain inputs fitted on a
    quick run of the machine (``collsim.fit.quick``)."""
    if args.output:
        check_output(args.output, [*args.files, *([args.cluster] if Path(args.cluster).suffix else [])], "cluster file")
    res = fit_quick(load_cluster(args.cluster, args.nodes), args.files, args.label, not args.out_of_place)
    print(f"fitted on {res['points']} measured sizes through the simulation:")
    for k, v in res["values"].items():
        print(f"  {k:17s} {res['start'][k]:9.4g} -> {v:.4g}")
    if res["harness"]:
        print(f"  {res['harness']} (a harness collsim never measured): {res['harness_us']:+.2f} us a call, "
              "fitted in place of the per-step cost")
    print(f"median |time error| on them {_pct(res['before']['median_abs_rel_error'])} -> "
          f"{_pct(res['after']['median_abs_rel_error'])} (p90 {_pct(res['before']['p90_abs_rel_error'])} -> "
          f"{_pct(res['after']['p90_abs_rel_error'])}); check it on other sizes or algorithms with compare")
    if args.output:
        d = {k: v for k, v in res["cluster"].to_dict().items() if v is not None and k != "nccl_asked"}
        with atomic_write(args.output, "cluster file") as f:
            f.write(yaml.safe_dump(d, sort_keys=False))
        print(f"calibrated cluster -> {args.output} (predict-nccl, simulate and diagnose read it)")
    return 0


def _fit(args) -> int:
    if args.cluster:
        return _fit_cluster(args)
    if not args.output:
        raise CollsimError("fit needs -o PARAMS.json (or --cluster SPEC to calibrate it on a quick run)")
    check_output(args.output, [*args.files, *(args.overhead_from or [])], "parameters file")
    overhead = load_points(args.overhead_from, "default", not args.out_of_place) if args.overhead_from else None
    params, report = fit(load_points(args.files, args.label, not args.out_of_place, args.nodes), args.holdout,
                         overhead_points=overhead)
    params.meta["files"] = [str(f) for f in args.files]
    if overhead:
        params.meta["overhead_files"] = [str(f) for f in args.overhead_from]
        print("harness overhead per call: " + ", ".join(f"{k} {v:.2f} us" for k, v in params.harness_us.items()))
        if params.start_us:
            print("clock cost per measurement: " + ", ".join(f"{k} {v:.1f} us" for k, v in params.start_us.items()))
    save_params(params, args.output)
    print(f"fitted on {params.meta['n_train']} points, tested on {params.meta['n_test']} held out"
          f" ({args.holdout}) -> {args.output}")
    if params.meta["unseen"]:
        print("set by the prior (the data cannot tell them apart): "
              + "; ".join(f"{k} {', '.join(v)}" for k, v in params.meta["unseen"].items()))
    print(f"{'configuration':48s} {'n':>4s} {'median':>7s} {'p90':>7s}")
    for name, r in report.items():
        print(f"{name:48s} {r['n']:4d} {_pct(r['median_abs_rel_error']):>7s} {_pct(r['p90_abs_rel_error']):>7s}")
    return 0


def _compare(args) -> int:
    uniform = any(getattr(args, k) is not None for k in ("alpha", "beta"))
    if args.files:
        if args.params or args.measured:
            raise CollsimError("give executed-schedule files with a machine (--cluster, or --alpha/--beta), or "
                               "--params/--cluster with --measured, not both")
        return _compare_executed(args)
    if args.cluster:
        if args.params or uniform or not args.measured:
            raise CollsimError("--cluster goes with --measured FILE... (no --params, no --alpha/--beta)")
        return _compare_cluster(args)
    if not (args.params and args.measured):
        raise CollsimError("compare needs --params PARAMS.json or --cluster SPEC with --measured FILE... (NCCL "
                           "measurements), or executed-schedule files with --cluster SPEC")
    if uniform:
        raise CollsimError("--alpha/--beta go with executed-schedule files, not with --params")
    return _compare_nccl(args)


def _compare_cluster(args) -> int:
    cluster = load_cluster(args.cluster, args.nodes)
    result = compare_cluster(cluster, args.measured, args.label, not args.out_of_place)
    if args.json:
        print(finite_json(result))
        return 0
    print(f"{cluster.describe()}: predicted from the description alone; |relative error| median / p90")
    for f in result["files"]:
        print(f"# {f['file']}: {f['collective']} ({f['harness']}, {f['timing']}, "
              f"{f['gpus_per_process']} GPU(s) per process)")
        print(f"  {'size':>11s} {'measured us':>12s} {'simulated_us':>12s} {'err':>6s} {'80% range us':>21s} "
              f"{'nccl_us':>14s} {'err':>6s}  NCCL runs")
        for r in f["rows"]:
            span = f"{r['low_us']:.1f}-{r['high_us']:.1f}" + (" " if r["inside"] else "!")
            n, m = r["nccl_us"], r["measured_us"]   # n NaN: NCCL's model times no alltoall, sendrecv
            nccl = f"{n:14.2f} {100 * (n / m - 1):+5.0f}%" if n == n else f"{'n/a':>21s}"
            print(f"  {r['bytes']:11d} {m:12.2f} {r['simulated_us']:12.2f} "
                  f"{100 * (r['simulated_us'] / m - 1):+5.0f}% {span:>21s} {nccl}  "
                  f"{r['algo']}/{r['proto']} x{r['channels']}")
    for scope, suffix in (("all sizes", ""), ("from 1 MiB", "_from_1MiB")):
        ours, theirs = result["simulated" + suffix], result["nccl" + suffix]
        print(f"{scope:11s}: simulated_us {_pct(ours['median_abs_rel_error'])} / {_pct(ours['p90_abs_rel_error'])}, "
              f"nccl_us (NCCL's model) {_pct(theirs['median_abs_rel_error'])} / {_pct(theirs['p90_abs_rel_error'])} "
              f"({ours['n']} points)")
    inside = result["inside_range"]
    print(f"inside collsim's 80% range: {inside['inside']} of {inside['n']} (! marks those outside)")
    return 0


def _ratio(a, b) -> str:
    return f"{a / b:9.3f}" if a is not None and b else "      n/a"


def _compare_executed(args) -> int:
    rows = executed(args.files, lambda ranks: topology_from_args(args, ranks), args.gamma, args.schedule)
    if args.json:
        print(finite_json({"rows": rows}))
        return 0
    w = max([len(r["algo"]) for r in rows] + [4])
    print(f"  {'algo':{w}s} {'ranks':>5s} {'size':>10s} {'measured us':>12s} {'simulated us':>13s} {'sim/meas':>9s}"
          f" {'native us':>10s} {'meas/native':>11s} {'wrong':>6s}")
    heading = None
    for r in rows:
        if (r["file"], r["topology"]) != heading:
            heading = (r["file"], r["topology"])
            print(f"# {r['file']} simulated on {r['topology']}")
        native = "n/a" if r["native_us"] is None else f"{r['native_us']:.2f}"
        print(f"  {r['algo']:{w}s} {r['ranks']:5d} {r['bytes']:10d} {r['measured_us']:12.2f} {r['simulated_us']:13.2f}"
              f" {_ratio(r['simulated_us'], r['measured_us'])} {native:>10s}"
              f"  {_ratio(r['measured_us'], r['native_us'])} {r['wrong']:6d}")
    return 0


def _compare_nccl(args) -> int:
    if args.plot:
        check_output(args.plot, [args.params, *args.measured, *(args.overhead_from or []),
                                 *([args.nccl_log] if args.nccl_log else [])], "figure")
    params = load_params(args.params)
    ab = load_points(args.overhead_from, "default", not args.out_of_place) if args.overhead_from else []
    if ab:
        params = with_overheads(params, ab)
    points = load_points(args.measured, args.label, not args.out_of_place, args.nodes)
    unused = sorted({p.config.harness for p in ab} - {"bare"} - {p.config.harness for p in points})
    if args.nccl_log:
        attach_probe(points, args.nccl_log)
    result = compare(params, points, args.holdout, args.algo, args.proto, args.ranks)
    if args.plot:
        shown = select(points, params, args.holdout, args.algo, args.proto, args.ranks)[0]
        plot_compare(result, params, shown, args.plot)
    result["unused_overheads"] = unused
    if args.json:
        print(finite_json(result))
        return 0
    print(f"{result['points']} points; |relative error| median / p90")
    print(f"{'configuration':48s} {'n':>4s} {'model_us':>15s} {'nccl_us':>15s}  table")
    rows = [(c["config"], c["model"], c["nccl"], c["nccl_table"]) for c in result["configs"]]
    rows.append(("all", result["model"], result["nccl"], ""))
    for name, ours, theirs, source in rows:
        print(f"{name:48s} {ours['n']:4d} {_pct(ours['median_abs_rel_error'])} / {_pct(ours['p90_abs_rel_error'])}"
              f" {_pct(theirs['median_abs_rel_error'])} / {_pct(theirs['p90_abs_rel_error'])}  {source}")
    if unused:
        print("warning: --overhead-from measured " + ", ".join(unused) + ", which no measured point uses"
              " (an nccl-tests log without its NCCL_* settings? import it with --env)")
    if result["unknown_harness"]:
        print("warning: no per-call overhead known for " + ", ".join(result["unknown_harness"])
              + " (predicted with none; measure it with --overhead-from A/B files)")
    if args.plot:
        print(f"plot -> {args.plot}")
    return 0


def _explain(args) -> int:
    params = load_params(args.params)
    sizes = [parse_size(s) for s in args.sizes]
    cfg = Config(args.ranks, nodes=args.nodes, intra=args.intra, buffsize=args.buffsize,
                 channels=args.channels, timing=args.timing, slices=args.reused_slices)
    rows = explain(params, args.algo, args.proto, sizes, cfg)
    links = list(rows[0]["link_utilisation"])
    print(f"{'size':>6s} {'time us':>10s} {'busbw':>7s} {'ch':>3s} {'steps':>6s} {'dominant':>10s}  "
          + " ".join(f"{t[:5]:>5s}" for t in rows[0]["shares"]) + "  " + " ".join(f"{k} util" for k in links))
    for r in rows:
        print(f"{format_size(r['bytes']):>6s} {r['time_us']:10.2f} {r['busbw_GBps']:7.1f} {r['channels']:3d}"
              f" {r['steps']:6d} {r['dominant']:>10s}  " + " ".join(f"{100 * v:4.0f}%" for v in r["shares"].values())
              + "  " + " ".join(f"{100 * r['link_utilisation'][k]:8.1f}%" for k in links))
    return 0


def _overhead_argument(p) -> None:
    p.add_argument("--overhead-from", nargs="+", metavar="FILE",
                   help="A/B files measuring each harness's per-call overhead against the bare runner")


def register(sub) -> None:
    p = sub.add_parser("fit", help="fit the NCCL-shaped model to measurements, report held-out error; with "
                                      "--cluster, calibrate the cluster on a quick run of it")
    p.add_argument("files", nargs="+", help="runner .jsonl files or nccl-tests output")
    p.add_argument("-o", "--output", help="parameters JSON to write (with --cluster: the cluster YAML with "
                                          "its calibrated inputs)")
    p.add_argument("--cluster", help="calibrate this cluster description on a quick run of the machine (nccl-tests "
                                     "output or runners/allreduce_bench.py --quick): its intra-node and per-NIC "
                                     "efficiency, network hop and per-step cost (collsim.fit.quick)")
    p.add_argument("--holdout", default="odd", choices=["odd", "even", "timing", "run"],
                   help="fit even powers of two/test odd (odd), the reverse (even), eager->graph "
                        "(timing), first file->others (run)")
    p.add_argument("--label", help="ALGO/PROTO for nccl-tests logs (default: from the file name)")
    p.add_argument("--nodes", type=positive_int,
                   help="nodes of the measured runs (for logs whose hosts do not tell them apart)")
    p.add_argument("--out-of-place", action="store_true", help="use out-of-place results, not in-place")
    _overhead_argument(p)
    p.set_defaults(func=_fit)

    p = sub.add_parser("compare", help="errors of collsim and of NCCL's own model against measurements; "
                                          "executed schedules against their simulation")
    p.add_argument("files", nargs="*", metavar="EXECUTED.jsonl",
                   help="files of runners/schedule_bench.py (give a machine: --cluster; no --params)")
    p.add_argument("--params", help="parameters JSON from collsim fit")
    p.add_argument("--measured", nargs="+", help="runner .jsonl files, nccl-tests output or published logs")
    p.add_argument("--label", help="ALGO/PROTO for nccl-tests logs (default: from the file name)")
    p.add_argument("--nccl-log", help="NCCL debug log with the TUNING table, or a runner .jsonl with a probe, "
                                      "for files without one")
    p.add_argument("--out-of-place", action="store_true", help="use out-of-place results, not in-place")
    p.add_argument("--algo")
    p.add_argument("--proto")
    p.add_argument("--ranks", type=positive_int, help="only the points of this rank count")
    p.add_argument("--holdout", default="auto",
                   help="auto (the params' held-out points), all, odd, even or timing")
    _overhead_argument(p)
    p.add_argument("--plot", type=plot_path, help="write a figure (.png, .pdf, .svg, ...): log-log time vs size "
                                                  "and an error panel")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_topology_args(p)           # --cluster (also: predict from a cluster description instead of --params), --nodes
    p.add_argument("--gpus-per-node", type=positive_int, help="GPUs per node of the --cluster (executed files)")
    p.add_argument("--schedule", nargs="+", metavar="FILE", help="the schedule files executed files ran (else "
                   "only the file of the recorded name beside each executed file is read, if its sha256 matches)")
    p.set_defaults(func=_compare)

    p = sub.add_parser("explain", help="per size: the dominant term and link utilisation")
    p.add_argument("--params", required=True)
    p.add_argument("--algo", required=True)
    p.add_argument("--proto", required=True)
    p.add_argument("--ranks", type=positive_int, required=True)
    p.add_argument("--nodes", type=positive_int, default=1)
    p.add_argument("--intra", default="nvlink", choices=["nvlink", "pcie"])
    p.add_argument("--buffsize", type=int_in(*BUFFSIZE_RANGE), help="NCCL_BUFFSIZE in bytes (default 4 MiB)")
    p.add_argument("--channels", type=int_in(1, MAX_CHANNELS), help="channel count, 1 to 64 (default: the params')")
    p.add_argument("--timing", default="graph", choices=["graph", "eager"])
    p.add_argument("--reused-slices", type=int_in(0, MAX_CALLS), default=0, metavar="K",
                   help="consecutive calls cycle through K buffer slices of the size: 0 never reuse the "
                        "bytes (a training step, default), 1 reuse one (a benchmark loop), 20 nccl-tests -n 20")
    p.add_argument("--sizes", nargs="+", default=["8", "1K", "64K", "1M", "16M", "256M", "4G"])
    p.set_defaults(func=_explain)
