"""``collsim import-nccl-tests``, ``collsim show`` and ``collsim fidelity``: measurement files.

    collsim import-nccl-tests LOG --label Ring/LL [--env NCCL_GRAPH_MIXING_SUPPORT=0 ...]
                              -o OUT.jsonl
    collsim show FILE [--label ALGO/PROTO] [--csv OUT.csv] [--lenient]
    collsim fidelity --runner RUN.jsonl... --reference LOG... [--label ALGO/PROTO]
                     [--min-bytes B] [--max-bytes B] [--out-of-place] [--json]

``import-nccl-tests`` reads nccl-tests text output (NCCL log lines may be interleaved) or its ``-J``
JSON and writes collsim records (sizes in bytes, times in microseconds, bandwidths in GB/s = 1e9
B/s); ``--env`` records the NCCL_* variables the run had, which text logs do not say. ``show``
prints a measurement file (any that ``collsim.measure.files.load_file`` reads) as an
nccl-tests-style table and can export it as CSV; with ``--lenient`` it reads a runner file leaving
out malformed lines, keeps every valid record around them and names each line it skipped. A log cut
off inside a row imports its complete rows and names the cut one in a warning. ``fidelity`` compares
two harnesses size by size (``collsim.measure.fidelity``). Outputs are written whole or not at all,
and never over an input (``collsim.outputs``).
"""
from __future__ import annotations

import os

from collsim.cli.args import finite_json, positive_int
from collsim.errors import CollsimError
from collsim.machine import load_cluster
from collsim.measure import TABLE_HEADER, format_row, load
from collsim.measure.fidelity import fidelity
from collsim.measure.files import load_file, to_csv
from collsim.measure.nccl_tests import import_nccl_tests, parse_env
from collsim.outputs import check_output, printable
from collsim.units import format_size, parse_size


def _import(args) -> int:
    # not a preset name
    cluster_file = [args.cluster] if args.cluster and os.path.lexists(args.cluster) else []
    check_output(args.output, [args.log, *cluster_file], "measurement file")
    m = import_nccl_tests(args.log, args.label, env=parse_env(args.env))
    if args.cluster:
        cluster = load_cluster(args.cluster, args.nodes)
        m.meta.update(nodes=cluster.nodes, gpu=cluster.gpu, cluster=cluster.to_dict())
    elif args.nodes:
        m.meta["nodes"] = args.nodes
    if (m.meta.get("world_size") or 0) % m.meta.get("nodes", 1):
        raise CollsimError(f"{args.log}: {m.meta['world_size']} ranks do not split over "
                           f"{m.meta['nodes']} nodes")
    m.save(args.output)
    print(f"{len(m)} records ({len(m) // 2} sizes x out-of-place/in-place) -> {args.output}")
    return 0


def _show(args) -> int:
    if args.csv:
        check_output(args.csv, [args.file], "CSV file")
    m = load(args.file, strict=False) if args.lenient else load_file(args.file, args.label)
    # one header line whatever the strings hold
    meta = {k: printable(v) for k, v in m.meta.items()}
    print(f"# {meta.get('harness', '?')} {meta.get('collective', '')}: ranks "
          f"{meta.get('world_size')} nodes {meta.get('nodes')} gpu {meta.get('gpu')} nccl "
          f"{meta.get('nccl_version')} timing {meta.get('timing')}")
    print("# " + TABLE_HEADER[2:])
    for rec in m.records:
        print(format_row(rec))
    for line in m.skipped:
        print(f"# skipped {line}")
    if args.csv:
        to_csv(m, args.csv)
    return 0


def _fidelity(args) -> int:
    res = fidelity(args.runner, args.reference, parse_size(args.min_bytes),
                   parse_size(args.max_bytes) if args.max_bytes else None,
                   not args.out_of_place, args.label)
    if args.json:
        print(finite_json(res))
        return 0
    note = "" if res["runner_statistic"] == "time_us_mean" else \
        (f" (runner files without time_us_mean: {res['runner_statistic']}, time_us is the max over "
         "ranks)")
    print(f"# {res['config']}; runner {res['runner_statistic']} / reference in-place time{note}")
    print(f"{'size':>6s} {'runner us':>10s} {'reference us':>12s} {'ratio':>6s}  runs")
    for r in res["sizes"]:
        print(f"{format_size(r['bytes']):>6s} {r['runner_us']:10.2f} {r['reference_us']:12.2f}"
              f" {r['ratio']:6.3f}  {r['runs'][0]}/{r['runs'][1]}")
    s = res["summary"]
    print(f"{s['n']} sizes: ratio min {s['min_ratio']:.3f} median {s['median_ratio']:.3f} max "
          f"{s['max_ratio']:.3f} (largest deviation {100 * s['max_abs_deviation']:.1f}%)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("import-nccl-tests", help="convert nccl-tests output to collsim JSON Lines")
    p.add_argument("log", help="nccl-tests stdout (text) or its -J JSON file")
    p.add_argument("--label", required=True,
                   help="what ran, as ALGO/PROTO (e.g. Ring/LL, Tree, default): logs do not say")
    p.add_argument("--env", nargs="+", action="extend", metavar="NAME=VALUE",
                   help="NCCL_* variables the run had (text logs do not record them)")
    p.add_argument("-o", "--output", required=True, help="output .jsonl")
    p.add_argument("--nodes", type=positive_int,
                   help="nodes of the run (for a log whose hosts do not tell them apart)")
    p.add_argument("--cluster",
                   help="the machine it ran on (preset or YAML/JSON): its nodes, GPU and NICs go "
                        "into the meta")
    p.set_defaults(func=_import)
    p = sub.add_parser("show", help="print a measurement file as a table")
    p.add_argument("file",
                   help="measurement file: the runners' .jsonl, a published log (data/public) or "
                        "nccl-tests output")
    p.add_argument("--label", help="ALGO/PROTO of an nccl-tests log whose name does not say it")
    p.add_argument("--csv", help="also write the records as CSV here")
    p.add_argument("--lenient", action="store_true",
                   help="skip malformed lines (named at the end) instead of failing, keeping every "
                        "valid record")
    p.set_defaults(func=_show)
    p = sub.add_parser("fidelity",
                       help="per-size time ratio of the runner to a reference harness (nccl-tests)")
    p.add_argument("--runner", required=True, nargs="+", help="runner .jsonl files (repeated runs)")
    p.add_argument("--reference", required=True, nargs="+",
                   help="nccl-tests output or .jsonl (repeated runs)")
    p.add_argument("--label",
                   help="ALGO/PROTO of nccl-tests logs (default: from the file name, else NCCL's "
                        "choice)")
    p.add_argument("--min-bytes", default="0", help="smallest size compared (K/M/G suffixes)")
    p.add_argument("--max-bytes", help="largest size compared")
    p.add_argument("--out-of-place", action="store_true", help="compare out-of-place results")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_fidelity)
