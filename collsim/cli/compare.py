"""``collsim compare``: collsim's predictions and NCCL's own model against measurements, and
executed schedules against their simulation.

    collsim compare --params PARAMS.json --measured FILE... [--algo A --proto P --ranks N]
                    [--holdout auto|all|odd|even|timing] [--nccl-log LOG] [--out-of-place]
                    [--overhead-from AB_FILES...] [--plot PNG] [--json]
    collsim compare --cluster SPEC [--nodes N] --measured FILE... [--label ALGO/PROTO] [--json]
    collsim compare EXECUTED.jsonl... (--cluster SPEC [--nodes N] [--gpus-per-node G]
                    | --alpha S --beta S/B) [--schedule FILE...] [--gamma S/B] [--json]

``--params`` scores the fitted model (``collsim fit``); ``--cluster`` predicts from a cluster
description alone, each file as the collective it ran (``collsim.fit.cluster_compare``).
``--overhead-from`` adds the per-call overheads of harnesses measured elsewhere (A/B files, as
``collsim fit`` reads them). ``--nccl-log`` gives NCCL's printed TUNING table and per-size choices
(an NCCL_DEBUG=INFO log or a runner .jsonl with ``nccl_probe``) to files without.
``compare EXECUTED.jsonl...`` takes files of ``runners/schedule_bench.py`` (collsim schedules run on
a real backend) and prints, per schedule and size, the measured time, collsim's event simulation of
that very schedule on the topology given as ``collsim simulate`` takes it
(``collsim.cli.args.add_topology_args``), and the backend's own all_reduce from the same run
(``collsim.fit.compare.executed``). Times are microseconds, sizes bytes, errors |predicted /
measured - 1| as fractions (``--json``) or percent (text); ``--plot`` is checked before any work and
never written over an input (``collsim.outputs``).
"""
from __future__ import annotations

from collsim.cli.args import (
    add_topology_args,
    finite_json,
    plot_path,
    positive_int,
    topology_from_args,
)
from collsim.errors import CollsimError
from collsim.fit.cluster_compare import compare_cluster
from collsim.fit.compare import attach_probe, compare, executed, select
from collsim.fit.overheads import with_overheads
from collsim.fit.points import load_points
from collsim.fitted.params import load_params
from collsim.machine import load_cluster
from collsim.outputs import check_output
from collsim.viz.measured import plot_compare


def percent(x) -> str:
    """A fraction as a percent column ("n/a" for None)."""
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def median_p90(summary: dict) -> str:
    """A summary's median and p90 |error| as "m% / p%"."""
    return f"{percent(summary['median_abs_rel_error'])} / {percent(summary['p90_abs_rel_error'])}"


def add_overhead_argument(p) -> None:
    """The --overhead-from argument of fit and compare."""
    p.add_argument("--overhead-from", nargs="+", metavar="FILE",
                   help="A/B files measuring each harness's per-call overhead against the bare "
                        "runner")


def _compare(args) -> int:
    uniform = any(getattr(args, k) is not None for k in ("alpha", "beta"))
    if args.files:
        if args.params or args.measured:
            raise CollsimError("give executed-schedule files with a machine (--cluster, or "
                               "--alpha/--beta), or --params/--cluster with --measured, not both")
        return _compare_executed(args)
    if args.cluster:
        if args.params or uniform or not args.measured:
            raise CollsimError("--cluster goes with --measured FILE... (no --params, no "
                               "--alpha/--beta)")
        return _compare_cluster(args)
    if not (args.params and args.measured):
        raise CollsimError("compare needs --params PARAMS.json or --cluster SPEC with --measured "
                           "FILE... (NCCL measurements), or executed-schedule files with --cluster "
                           "SPEC")
    if uniform:
        raise CollsimError("--alpha/--beta go with executed-schedule files, not with --params")
    return _compare_nccl(args)


def _compare_cluster(args) -> int:
    cluster = load_cluster(args.cluster, args.nodes)
    result = compare_cluster(cluster, args.measured, args.label, not args.out_of_place)
    if args.json:
        print(finite_json(result))
        return 0
    print(f"{cluster.describe()}: predicted from the description alone; |relative error| median / "
          "p90")
    for f in result["files"]:
        print(f"# {f['file']}: {f['collective']} ({f['harness']}, {f['timing']}, "
              f"{f['gpus_per_process']} GPU(s) per process)")
        print(f"  {'size':>11s} {'measured us':>12s} {'simulated_us':>12s} {'err':>6s} "
              f"{'80% range us':>21s} "
              f"{'nccl_us':>14s} {'err':>6s}  NCCL runs")
        for r in f["rows"]:
            span = f"{r['low_us']:.1f}-{r['high_us']:.1f}" + (" " if r["inside"] else "!")
            # n NaN: NCCL's model times no alltoall, sendrecv
            n, m = r["nccl_us"], r["measured_us"]
            nccl = f"{n:14.2f} {100 * (n / m - 1):+5.0f}%" if n == n else f"{'n/a':>21s}"
            print(f"  {r['bytes']:11d} {m:12.2f} {r['simulated_us']:12.2f} "
                  f"{100 * (r['simulated_us'] / m - 1):+5.0f}% {span:>21s} {nccl}  "
                  f"{r['algo']}/{r['proto']} x{r['channels']}")
    for scope, suffix in (("all sizes", ""), ("from 1 MiB", "_from_1MiB")):
        ours, theirs = result["simulated" + suffix], result["nccl" + suffix]
        print(f"{scope:11s}: simulated_us {median_p90(ours)}, "
              f"nccl_us (NCCL's model) {median_p90(theirs)} "
              f"({ours['n']} points)")
    inside = result["inside_range"]
    print(
        f"inside collsim's 80% range: {inside['inside']} of {inside['n']} (! marks those outside)")
    return 0


def _ratio(a, b) -> str:
    return f"{a / b:9.3f}" if a is not None and b else "      n/a"


def _compare_executed(args) -> int:
    rows = executed(args.files, lambda ranks: topology_from_args(args, ranks), args.gamma,
                    args.schedule)
    if args.json:
        print(finite_json({"rows": rows}))
        return 0
    w = max([len(r["algo"]) for r in rows] + [4])
    print(f"  {'algo':{w}s} {'ranks':>5s} {'size':>10s} {'measured us':>12s} {'simulated us':>13s} "
          f"{'sim/meas':>9s}"
          f" {'native us':>10s} {'meas/native':>11s} {'wrong':>6s}")
    heading = None
    for r in rows:
        if (r["file"], r["topology"]) != heading:
            heading = (r["file"], r["topology"])
            print(f"# {r['file']} simulated on {r['topology']}")
        native = "n/a" if r["native_us"] is None else f"{r['native_us']:.2f}"
        print(f"  {r['algo']:{w}s} {r['ranks']:5d} {r['bytes']:10d} {r['measured_us']:12.2f} "
              f"{r['simulated_us']:13.2f}"
              f" {_ratio(r['simulated_us'], r['measured_us'])} {native:>10s}"
              f"  {_ratio(r['measured_us'], r['native_us'])} {r['wrong']:6d}")
    return 0


def _compare_nccl(args) -> int:
    if args.plot:
        check_output(args.plot, [args.params, *args.measured, *(args.overhead_from or []),
                                 *([args.nccl_log] if args.nccl_log else [])], "figure")
    params = load_params(args.params)
    ab = load_points(args.overhead_from, "default",
                     not args.out_of_place) if args.overhead_from else []
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
        print(f"{name:48s} {ours['n']:4d} {median_p90(ours)}"
              f" {median_p90(theirs)}  {source}")
    if unused:
        print("warning: --overhead-from measured " + ", ".join(unused) + ", which no measured "
                                                                         "point uses (an "
                                                                         "nccl-tests log without "
                                                                         "its NCCL_* settings? "
                                                                         "import it with --env)")
    if result["unknown_harness"]:
        print("warning: no per-call overhead known for " + ", ".join(result["unknown_harness"])
              + " (predicted with none; measure it with --overhead-from A/B files)")
    if args.plot:
        print(f"plot -> {args.plot}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("compare",
                       help="errors of collsim and of NCCL's own model against measurements; "
                            "executed schedules against their simulation")
    p.add_argument("files", nargs="*", metavar="EXECUTED.jsonl",
                   help="files of runners/schedule_bench.py (give a machine: --cluster; no "
                        "--params)")
    p.add_argument("--params", help="parameters JSON from collsim fit")
    p.add_argument("--measured", nargs="+",
                   help="runner .jsonl files, nccl-tests output or published logs")
    p.add_argument("--label", help="ALGO/PROTO for nccl-tests logs (default: from the file name)")
    p.add_argument("--nccl-log",
                   help="NCCL debug log with the TUNING table, or a runner .jsonl with a probe, "
                        "for files without one")
    p.add_argument("--out-of-place", action="store_true",
                   help="use out-of-place results, not in-place")
    p.add_argument("--algo")
    p.add_argument("--proto")
    p.add_argument("--ranks", type=positive_int, help="only the points of this rank count")
    p.add_argument("--holdout", default="auto",
                   help="auto (the params' held-out points), all, odd, even or timing")
    add_overhead_argument(p)
    p.add_argument("--plot", type=plot_path,
                   help="write a figure (.png, .pdf, .svg, ...): log-log time vs size and an error "
                        "panel")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    # --cluster (also: predict from a cluster description instead of --params), --nodes
    add_topology_args(p)
    p.add_argument("--gpus-per-node", type=positive_int,
                   help="GPUs per node of the --cluster (executed files)")
    p.add_argument("--schedule", nargs="+", metavar="FILE",
                   help="the schedule files executed files ran (else only the file of the recorded "
                        "name beside each executed file is read, if its sha256 matches)")
    p.set_defaults(func=_compare)
