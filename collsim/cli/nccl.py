"""``collsim predict-nccl``: NCCL AllReduce on a cluster, from its description alone.

    collsim predict-nccl --cluster SPEC [--nodes N | N1,N2,... | A,B,...,Z [--algos LIST|all]]
                         --bytes SIZE [SIZE ...] | -b MIN -e MAX [-f F]
                         [--algo default|Ring|Tree|NVLS|NVLSTree|CollNet|CollNetDirect|CollNetChain]
                         [--proto default|LL|LL128|Simple]
                         [--env NCCL_X=V ...] [--harness nccl-tests|runner] [--timing eager|graph]
                         [--gpus-per-process G] [--json] [--plot PNG]

SPEC is a preset (``collsim simulate --list-presets``) or a cluster file (YAML/JSON, format in
``collsim.machine.cluster``). Prints, per size, the simulated time of the schedule NCCL runs (with
the harness's terms), algbw and busbw, NCCL's choice of algorithm, protocol and channels, NCCL's own
predicted time, and the resource the simulation kept busiest (``collsim.predict``); ``--json``
prints ``{"predictor": "simulated_us", "cluster": {...}, "rows": [{"bytes", "time_us",
"simulated_us", "kernel_us", "busbw_GBps", "algo", "proto", "channels", "nccl_us", "busiest",
"busy", "timed_by", "low_us", "high_us", "bandwidth_share"}], "inputs": {...}, "range": {...}}``:
each time's 80% range comes from where the description's inputs come (``collsim.predict.ranges``;
the text names the least sure input of each regime). Every row is simulated (CollNet too, on a
cluster with ``sharp: true``); a row of an algorithm collsim does not simulate would be timed by
NCCL's own model, ``timed_by: "nccl"`` (marked * in the text). A list of node counts (``--nodes
2,4,...,2048``) sweeps the cluster's size instead: ``collsim.cli.nccl_scale``. """
from __future__ import annotations

from pathlib import Path

from collsim.cli.args import (
    argument_type,
    collective_name,
    finite_json,
    plot_path,
    positive_int,
    size_arg,
)
from collsim.cli.nccl_scale import cmd_scale, parse_nodes
from collsim.errors import CollsimError
from collsim.machine import load_cluster
from collsim.nccl.settings import env_arguments
from collsim.outputs import check_output
from collsim.predict import predict_nccl
from collsim.predict.ranges import range_note
from collsim.predictors import PREDICTORS
from collsim.sweep import sizes as size_range
from collsim.units import format_size
from collsim.viz.curves import predicted_busbw_figure
from collsim.viz.scale import scale_figure


def cmd_predict_nccl(args) -> int:
    if args.bytes and args.minbytes is not None:
        raise CollsimError("give sizes with --bytes or with -b/-e/-f, not both")
    if args.bytes:
        sizes = args.bytes
    elif args.minbytes is not None and args.maxbytes is not None:
        sizes = size_range(args.minbytes, args.maxbytes, args.stepfactor).tolist()
    else:
        raise CollsimError("give the sizes: --bytes SIZE [SIZE ...] or -b MIN -e MAX [-f FACTOR]")
    if args.plot:

        check_output(args.plot,
                     [args.cluster] if Path(args.cluster).suffix or Path(args.cluster).exists()
                     else [],
                     "figure")
    if args.algos and not (args.nodes and len(args.nodes) > 1):
        raise CollsimError("--algos adds forced algorithms to a sweep of node counts (--nodes "
                           "2,4,...,64); for one count force one with --algo")
    if args.nodes and len(args.nodes) > 1:
        result = cmd_scale(args, load_cluster(args.cluster), sizes, env_arguments(args.env))
        if args.plot:
            scale_figure(result, args.plot)
        if args.json:
            print(finite_json(result))
        elif args.plot:
            print(f"plot -> {args.plot}")
        return 0
    cluster = load_cluster(args.cluster, args.nodes[0] if args.nodes else None)
    result = predict_nccl(cluster, sizes, args.algo, proto=args.proto, env=env_arguments(args.env),
                          harness=args.harness, timing=args.timing,
                          gpus_per_process=args.gpus_per_process, coll=args.coll)
    if args.plot:
        predicted_busbw_figure(result, args.plot)
    if args.json:
        print(finite_json(result))
        return 0
    print(f"{cluster.describe()}; harness {result['harness']} ({result['timing']}, "
          f"{result['gpus_per_process']} GPU(s) per process)")
    if result["settings"]["ignored"]:
        print("not modelled (no effect here): " + ", ".join(result["settings"]["ignored"]))
    print(f"{'bytes':>8} {'time us':>12} {'80% range us':>21} {'algbw':>8} {'busbw':>8}  "
          f"{'NCCL chooses':<16} "
          f"{'ch':>3} {'NCCL model us':>13}  busiest resource")
    for r in result["rows"]:
        mark = "*" if r["timed_by"] == "nccl" else " "
        where = f"{r['busiest']} {100 * r['busy']:.0f}%" if r["busiest"] else "-"
        span = f"{r['low_us']:.1f}-{r['high_us']:.1f}"
        print(f"{format_size(r['bytes']):>8} {r['time_us']:11.2f}{mark} {span:>21} "
              f"{r['algbw_GBps']:8.2f} {r['busbw_GBps']:8.2f}  {r['algo'] + '/' + r['proto']:<16} "
              f"{r['channels']:>3} {r['nccl_us']:13.2f}  {where}")
    print(range_note(result))
    if any(r["timed_by"] == "nccl" for r in result["rows"]):
        print("* timed by NCCL's own model: collsim does not simulate this algorithm")
    if args.plot:
        print(f"plot -> {args.plot}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("predict-nccl", help="NCCL AllReduce time and busbw on a cluster, from its "
                                            "description",
                       description=PREDICTORS)
    p.add_argument("--cluster", required=True, help="preset name or cluster file (YAML/JSON)")
    p.add_argument("--coll", type=collective_name, default="all_reduce",
                   help="the collective, as nccl-tests names it (default all_reduce; sizes are its "
                        "size column)")
    p.add_argument("--nodes", type=argument_type(parse_nodes), help="resize the cluster to this "
                                                                    "many nodes; a list (2,4,8 or "
                                                                    "2,4,...,2048) sweeps the "
                                                                    "cluster's size, busbw per "
                                                                    "node count")
    p.add_argument("--algos", help="with a list of --nodes: NCCL's algorithms to simulate forced "
                                   "beside NCCL's choice, a comma list of Ring, Tree, NVLS, "
                                   "NVLSTree, or all (default: NCCL's choice only)")
    p.add_argument("--bytes", type=size_arg, nargs="+", help="message sizes (8, 64K, 1M, 4G)")
    p.add_argument("-b", "--minbytes", type=size_arg, help="smallest size of a sweep (nccl-tests "
                                                           "-b)")
    p.add_argument("-e", "--maxbytes", type=size_arg,
                   help="largest size of a sweep (nccl-tests -e)")
    p.add_argument("-f", "--stepfactor", type=positive_int, default=2, help="size factor of a "
                                                                            "sweep (nccl-tests -f)")
    p.add_argument("--algo", default="default", help="default (NCCL's choice), Ring, Tree, NVLS, "
                                                     "NVLSTree, CollNet (CollNetDirect or "
                                                     "CollNetChain), CollNetDirect, CollNetChain")
    p.add_argument("--proto", default="default", help="default (NCCL's choice), LL, LL128, Simple")
    p.add_argument("--env", nargs="+", action="extend", metavar="NCCL_X=V",
                   help="NCCL variables of the run, repeatable (NCCL_ALGO, NCCL_PROTO, "
                        "NCCL_MIN_NCHANNELS/NCCL_MIN_CTAS, NCCL_MAX_NCHANNELS, NCCL_BUFFSIZE, "
                        "NCCL_NVLS_ENABLE, NCCL_IB_DISABLE, NCCL_P2P_DISABLE, NCCL_COLLNET_ENABLE, "
                        "OFI_NCCL_NET_LATENCY)")
    p.add_argument("--harness", choices=("nccl-tests", "runner"), default="nccl-tests")
    p.add_argument("--timing", choices=("eager", "graph"), default="eager",
                   help="eager: back-to-back launches (nccl-tests' default); graph: CUDA graphs "
                        "(nccl-tests -G)")
    p.add_argument("--gpus-per-process", type=positive_int,
                   help="GPUs each process drives (nccl-tests -g; default: all GPUs of one node, 1 "
                        "on several)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", type=plot_path,
                   help="write a figure (.png, .pdf, .svg, ...): busbw vs size, NCCL's choice per "
                        "size marked (a list of --nodes: busbw vs node count)")
    p.set_defaults(func=cmd_predict_nccl)
