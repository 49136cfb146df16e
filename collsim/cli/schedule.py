"""Core sub-commands: schedule, check, predict (simulate and sweep: ``collsim.cli.simulate``).

Examples::

    collsim schedule --algo ring --ranks 4 --count 8 --json
    collsim schedule --algo ring --cluster h100-nvlink --nodes 2 --channels 16 --count 4096 --json
    collsim check --algo double-tree --ranks 7 --count 1000
    collsim check --file my_schedule.json
    collsim predict --algo ring --ranks 8 --bytes 1073741824 --alpha 5e-6 --beta 1e-11 --json
    collsim predict --coll all_gather --algo pat --ranks 16 --bytes 4M --alpha 1e-6 --beta 1e-11
    collsim simulate --algo ring --ranks 8 --bytes 1G --alpha 5e-6 --beta 1e-11 --json
    collsim simulate --algo hierarchical --ranks 32 --bytes 256M --cluster ib-400g --gpus-per-node 8
    collsim sweep --algos ring,double-double-tree,hierarchical --ranks 32 --cluster ib-400g \\
                  --plot sweep.png

Units: sizes in bytes (suffixes K, M, G = binary multiples, as nccl-tests),
alpha in seconds, beta in seconds per byte, gamma in seconds per byte, times
printed in microseconds (``time_us``) and returned as seconds (``time_s``) in
JSON, bandwidths in GB/s (1e9 bytes/s) with nccl-tests' algbw/busbw.
"""
from __future__ import annotations

from collsim.algorithms import BY_COLLECTIVE, DEFAULTS
from collsim.cli.args import (
    add_algo_args,
    add_cluster_args,
    algo_of,
    algo_params,
    build_from_args,
    coll_of,
    emit,
    finite_json,
    int_in,
    nonneg_int,
    positive_seconds_per_byte,
    require_ranks,
    round_seconds,
    seconds,
    seconds_per_byte,
    size_arg,
)
from collsim.core.checker import check
from collsim.core.collective import get as get_collective
from collsim.core.schedule import read_schedule
from collsim.cost import closed_form
from collsim.errors import CollsimError


# ------------------------------------------------------------------ commands
def cmd_schedule(args) -> int:
    if args.list:
        print(f"{'schedule':20s} {'NCCL':13s} description")
        for name, algo in BY_COLLECTIVE[coll_of(args)].items():
            print(f"{name:20s} {algo.nccl_name or '-':13s} "
                  f"{'(teaching only) ' if algo.teaching_only else ''}{algo.description}")
        return 0
    args.algo = algo_of(args)
    if args.algo is None or args.count is None:
        raise CollsimError("schedule needs --algo, --ranks (or --cluster) and --count (or --list)")
    s = build_from_args(args)
    if args.json:
        print(s.to_json())
        return 0
    print(f"{s!r}")
    # only the transfers shown become Python objects
    for k in range(min(s.n_steps, args.max_steps)):
        lo, hi = int(s.step_ptr[k]), int(s.step_ptr[k + 1])
        moves = ", ".join(
            f"{t.src}->{t.dst}[{t.offset}:{t.offset + t.count}]{_at(t)}"
            f"{'+' if t.op == 'reduce' else '='}"
            for t in map(s.transfer, range(lo, min(hi, lo + 8))))
        more = f" ... (+{hi - lo - 8})" if hi - lo > 8 else ""
        print(f"step {k:4d}: {moves}{more}")
    if s.n_steps > args.max_steps:
        print(f"... {s.n_steps - args.max_steps} more steps (use --json for all)")
    return 0


def _at(t) -> str:
    """Where a transfer writes, when elsewhere than it reads (alltoall): "@offset"."""
    return f"@{t.dst_offset}" if t.dst_offset is not None and t.dst_offset != t.offset else ""


def cmd_check(args) -> int:
    args.algo = algo_of(args) if not args.file else args.algo
    if args.file:
        if args.algo:
            raise CollsimError("give either --file or --algo, not both")
        s = read_schedule(args.file)
    elif args.algo:
        s = build_from_args(args)
    else:
        raise CollsimError("check needs --algo NAME (with --ranks and --count) or --file "
                           "SCHEDULE.json")
    r = check(s, seed=args.seed)
    if args.json:
        print(finite_json({"ok": r.ok, "error": r.error, "step": r.step, "transfer": r.transfer,
                          "steps": r.n_steps, "transfers": r.n_transfers,
                          "bytes_sent": [int(x) for x in r.bytes_sent],
                          "bytes_recv": [int(x) for x in r.bytes_recv]}))
    else:
        print(r.summary())
    return 0 if r.ok else 1


def cmd_predict(args) -> int:
    """The closed form of --coll's (default all_reduce) --algo (default with --coll: its first),
    with nccl-tests' algbw/busbw of that collective."""
    ranks = require_ranks(args)
    nbytes, coll, args.algo = args.bytes, coll_of(args), algo_of(args)
    if args.algo is None:
        raise CollsimError("predict needs --algo NAME (or --coll NAME: its first algorithm)")
    if args.alpha is None or args.beta is None:
        raise CollsimError("predict needs --alpha (s) and --beta (s/byte)")
    params = {k: v for k, v in algo_params(args).items() if v is not None and v != DEFAULTS[k]}
    params.update((k, v) for k, v in (("alpha_inter", args.alpha_inter),
                                      ("beta_inter", args.beta_inter))
                  if v is not None)
    t = closed_form(args.algo, ranks, nbytes, args.alpha, args.beta, args.gamma, coll, **params)
    alg, bus = get_collective(coll).bandwidths(nbytes, t * 1e6, ranks)
    obj = {"coll": coll, "algo": args.algo, "ranks": ranks, "bytes": nbytes, "alpha": args.alpha,
           "beta": args.beta, "gamma": args.gamma, **params, "time_s": round_seconds(t),
           "algbw_GBps": alg, "busbw_GBps": bus}
    emit(args, obj,
         f"{coll} {args.algo} P={ranks} {nbytes} B: {t * 1e6:.3f} us  algbw {alg:.2f} GB/s  busbw "
         f"{bus:.2f} GB/s")
    return 0


# ------------------------------------------------------------------ register
def register(sub) -> None:
    p = sub.add_parser("schedule", help="print an algorithm's schedule (steps of transfers)")
    add_algo_args(p, required=False)
    add_cluster_args(p)
    p.add_argument("--count", type=nonneg_int, help="elements per rank buffer (>= 0)")
    p.add_argument("--json", action="store_true",
                   help="print the schedule as JSON (schema in collsim.core.schedule)")
    p.add_argument("--list", action="store_true", help="list the algorithms")
    p.add_argument("--max-steps", type=int_in(1, 2**63 - 1), default=20,
                   help="steps shown in text mode")
    p.set_defaults(func=cmd_schedule)

    p = sub.add_parser("check",
                       help="execute a schedule on random integers and prove it computes its "
                            "collective")
    add_algo_args(p, required=False)
    add_cluster_args(p)
    p.add_argument("--count", type=nonneg_int, help="elements per rank buffer")
    p.add_argument("--bytes", type=size_arg, help="bytes per rank buffer (instead of --count)")
    p.add_argument("--file", help="a schedule JSON file (as written by `collsim schedule --json`)")
    p.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0, help="random inputs' seed, >= 0")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("predict", help="closed-form alpha-beta-gamma time of one collective "
                                       "(--coll, default all_reduce)")
    add_algo_args(p, required=False)
    p.add_argument("--bytes", type=size_arg, required=True, help="bytes per rank buffer")
    p.add_argument("--alpha", type=seconds, help="seconds per message")
    p.add_argument("--beta", type=positive_seconds_per_byte, help="seconds per byte, > 0")
    p.add_argument("--alpha-inter", type=seconds, help="inter-node alpha (hierarchical)")
    p.add_argument("--beta-inter", type=positive_seconds_per_byte,
                   help="inter-node beta (hierarchical)")
    p.add_argument("--gamma", type=seconds_per_byte, default=0.0,
                   help="seconds per byte reduced (default 0)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)

