"""Any collsim AllReduce schedule run on a real backend, step by step with torch.distributed
point-to-point messages, checked and timed like ``allreduce_bench.py`` (nccl-tests vocabulary).

A laptop, 4 processes over gloo (CPU): one algorithm over a size sweep, every registered algorithm
beside gloo's own all_reduce, a schedule file, the lecture's wrong ring::

    torchrun --standalone --nproc-per-node 4 runners/schedule_bench.py --backend gloo --algo ring \\
        -b 8 -e 16M --out out/x.jsonl
    torchrun --standalone --nproc-per-node 4 runners/schedule_bench.py --backend gloo --algo all \\
        --sizes 8,64K,1M -w 2 -n 10 --with-native --out out/all.jsonl
    collsim schedule --algo double-tree --ranks 4 --count 65536 --json > out/tree.json
    torchrun --standalone --nproc-per-node 4 runners/schedule_bench.py --backend gloo --schedule out/tree.json
    torchrun --standalone --nproc-per-node 4 runners/schedule_bench.py --backend gloo --algo lecture-ring -b 8 -e 1K

One node, 2 GPUs (NCCL; add ``--timing graph`` for CUDA graphs, ``--emulate-nodes 2`` for two
emulated nodes over sockets), and several nodes::

    torchrun --standalone --nproc-per-node=2 runners/schedule_bench.py --algo ring,double-tree -b 8 -e 1G \\
        --with-native --out out/sched.jsonl
    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=node0:29500 \\
        --rdzv-id=s1 runners/schedule_bench.py --algo hierarchical --inter tree -b 8 -e 1G --out s.jsonl

SLURM: ``srun --nodes=2 --ntasks-per-node=1 bash -c 'torchrun --nnodes=$SLURM_NNODES
--nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29500 --rdzv-id=$SLURM_JOB_ID
runners/schedule_bench.py --algo ring -b 8 -e 1G --out s.jsonl'``. Measured against collsim's
simulation of the same schedules: ``collsim compare out/sched.jsonl --cluster h200-nvlink``.

What runs. ``--algo NAME[,NAME...]`` (or ``all``: every algorithm of
``collsim.algorithms.ALGORITHMS``; ``lecture-ring`` and ``lecture-tree`` are the lecture's wrong
pseudo-code) builds each size's schedule with ``collsim.algorithms.build_schedule`` for the world
size and count = size / dtype size. Every keyword parameter ``build_schedule`` takes is an option
(``--slices S``, ``--chunks K``, ``--gpus-per-node G``, ``--inter ring|tree``, and any added later,
e.g. ``--channels C``), passed to the algorithms that take it; ``--gpus-per-node`` defaults to
world / --emulate-nodes, else torchrun's LOCAL_WORLD_SIZE. ``--schedule FILE`` runs a schedule
JSON (``collsim schedule --json`` or hand-written; schema in ``collsim/core/schedule.py``); its count
and itemsize fix the size (no sweep; itemsize must be --dtype's). A schedule that does not fit the
run (another rank count, a switch endpoint, a range outside the buffer: ``collsim.core.rank_plan.fit_error``)
or an option no algorithm takes is refused in one line, exit 2, before anything starts.

How. Each rank runs its ``collsim.core.rank_plan.rank_plan`` in place on its buffer: per step, its
sends (views of the buffer, which nothing changes during the step) and receives (into a scratch
buffer) as one ``dist.batch_isend_irecv`` batch, a wait on every request, then the receives added
or written over on the device in schedule order. No barrier between steps.
``--with-native`` also times the backend's own ``dist.all_reduce`` on the same buffer: per size,
``--rounds`` R times (default 3 with --with-native, else 1) native then every schedule, -n calls
each, so drift hits all of them; time per call is the mean over the rounds.

Timing and checking as ``allreduce_bench.py`` (``harness.py``): gloo on the host clock (no
--timing graph), NCCL with CUDA events started together on every rank, eager or CUDA graphs. After
timing, the buffer is filled again (element i of rank r: (i + r) % K, ``collectives.py``), each schedule runs once
and ``wrong`` counts the elements that differ from the exact sum, over ranks. A size with wrong > 0
also prints ``schedule_bench: wrong: ...`` on stderr with ``collsim check``'s verdict on the
schedule; the run goes on.

Output (``--out``): JSON Lines, the meta (``provenance.build_meta`` plus ``schedule``: the algorithms
and their parameters, or the file and its sha256) then per size a record per schedule (``algo``
"collsim:NAME", ``executor`` "collsim", ``schedule_sha256``, ``steps``, ``transfers``) and with
--with-native one for ``all_reduce`` (``algo`` null, ``executor`` "native"), flushed as measured
(``collsim/measure/executed.py``). NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are always set. Exit codes: 0 done (wrong counts are in the records),
1 run failed (one line ``schedule_bench: error: rank R: ...``), 2 bad arguments.
"""
from __future__ import annotations

import os
import sys

from collectives import count_wrong, fill
from common import DTYPES, base_parser, check_args, sweep
from harness import Session, main as runner_main

from collsim.core.checker import check
from collsim.core.rank_plan import fit_error, rank_plan
from collsim.core.schedule import REDUCE
from collsim.errors import CollsimError
from collsim.inputs import MAX_CALLS
from collsim.measure.executed import (
    PREFIX,
    algorithm_names,
    algorithm_params,
    build,
    file_name,
    parameters,
    read_schedule,
    schedule_hash,
)
from collsim.outputs import check_output


def build_parser():
    p = base_parser("schedule_bench", "run collsim schedules on a real backend (see module docstring)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--algo", dest="algorithms", metavar="NAME[,NAME...]",
                      help="collsim algorithm(s), or all (collsim schedule --list)")
    what.add_argument("--schedule", metavar="FILE", help="a schedule JSON file (its count fixes the size)")
    for name, kind in parameters().items():
        p.add_argument("--" + name.replace("_", "-"), dest="param_" + name, type=kind, metavar=name.upper(),
                       help=f"build_schedule's {name}, for the algorithms that take it")
    p.add_argument("--with-native", action="store_true", help="also time the backend's own all_reduce")
    p.add_argument("--rounds", type=int, help="native/schedule alternations per size (default 3 with "
                                             "--with-native, else 1)")
    p.set_defaults(algo=None, proto=None, inplace=True, rotate=False, minbytes=None, maxbytes=None)
    return p


def parse_args(argv):
    """Parse and check, building every size's schedule; one line and exit code 2 on any problem.
    Adds ``size_list``, ``schedules`` ({(name, size): Schedule}) and ``schedule_meta``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    check_args(parser, args, world)
    args.rounds = args.rounds if args.rounds is not None else 3 if args.with_native else 1
    if not 1 <= args.rounds <= MAX_CALLS:
        parser.error(f"--rounds must be 1 to {MAX_CALLS} (collsim.inputs.MAX_CALLS), got {args.rounds}")
    given = {k[len("param_"):]: v for k, v in vars(args).items() if k.startswith("param_") and v is not None}
    try:
        if args.out:   # never over the schedule it runs (JSON Lines replace it from the first record)
            check_output(args.out, [args.schedule] if args.schedule else [], "--out")
        args.schedules = _file_schedule(args, given) if args.schedule else _algorithm_schedules(args, given, world)
        for (name, size), s in args.schedules.items():
            problem = fit_error(s, world)
            if problem:
                raise CollsimError(f"{name} at {size} B: {problem}")
    except CollsimError as e:
        parser.error(str(e))
    args.size_list = sorted({size for _, size in args.schedules})
    return args


def _file_schedule(args, given) -> dict:
    if given:
        raise CollsimError(f"--{next(iter(given)).replace('_', '-')} applies to --algo, not to --schedule")
    if args.sizes or args.minbytes or args.maxbytes:
        raise CollsimError("--schedule FILE fixes the size (its count x itemsize): drop -b/-e/--sizes")
    s = read_schedule(args.schedule)
    if s.itemsize != DTYPES[args.dtype][0]:
        raise CollsimError(f"{args.schedule}: itemsize {s.itemsize} is not --dtype {args.dtype}'s "
                           f"{DTYPES[args.dtype][0]} bytes")
    if s.count < 1:
        raise CollsimError(f"{args.schedule}: count {s.count}: nothing to reduce")
    args.schedule_meta = {"file": args.schedule, "sha256": schedule_hash(s), "name": file_name(s, args.schedule)}
    return {(file_name(s, args.schedule), s.nbytes): s}


def _algorithm_schedules(args, given, world) -> dict:
    args.minbytes, args.maxbytes = args.minbytes or "8", args.maxbytes or "32M"
    sizes, itemsize = sweep(args), DTYPES[args.dtype][0]
    names = algorithm_names(args.algorithms)
    per_node = world // args.emulate_nodes if args.emulate_nodes else int(os.environ.get("LOCAL_WORLD_SIZE", world))
    params = algorithm_params(names, given, per_node)
    args.schedule_meta = {"algorithms": params}
    return {(n, size): build(n, world, size // itemsize, itemsize, params[n]) for size in sizes for n in names}


class Executed:
    """One rank's ``RankPlan`` bound to its buffer and a scratch buffer (torch tensors on one
    device); each call runs the schedule once, in place (module docstring, "How")."""

    def __init__(self, plan, buf, scratch):
        import torch.distributed as dist
        self.dist, self.steps = dist, []
        for st in plan.steps:
            local = [(scratch[at:at + n], buf[o:o + n]) for src, o, n, _, at in st.recvs if src == plan.rank]
            ops = [dist.P2POp(dist.isend, buf[o:o + n], dst) for dst, o, n in st.sends]
            ops += [dist.P2POp(dist.irecv, scratch[at:at + n], src) for src, o, n, _, at in st.recvs
                    if src != plan.rank]
            apply = [(buf[o:o + n], scratch[at:at + n], op == REDUCE) for _, o, n, op, at in st.recvs]
            if apply or ops:
                self.steps.append((local, ops, apply))

    def __call__(self, i: int = 0) -> None:
        for local, ops, apply in self.steps:
            for slot, part in local:
                slot.copy_(part)
            if ops:
                for work in self.dist.batch_isend_irecv(ops):
                    work.wait()
            for part, slot, add in apply:
                part.add_(slot) if add else part.copy_(slot)


def run(args, argv, rank, world, log_dir) -> int:
    import torch
    import torch.distributed as dist
    session = Session(args, rank, world, log_dir)
    itemsize, dtype = DTYPES[args.dtype][0], getattr(torch, args.dtype)
    device = session.device or torch.device("cpu")
    buf = torch.empty(max(args.size_list) // itemsize, dtype=dtype, device=device)
    names = list(dict.fromkeys(name for name, _ in args.schedules))
    meta = {"runner": "schedule_bench", "schedule": args.schedule_meta, "with_native": args.with_native,
            "rounds": args.rounds}
    for size in session.begin(argv, args.size_list, "schedules", **meta):
        count = size // itemsize
        view = buf[:count]
        schedules = {n: args.schedules[n, size] for n in names}
        plans = {n: rank_plan(s, rank) for n, s in schedules.items()}
        scratch = torch.empty(max(p.scratch for p in plans.values()), dtype=dtype, device=device)
        calls = {n: Executed(p, view, scratch) for n, p in plans.items()}
        if args.with_native:
            calls = {None: lambda i=0: dist.all_reduce(view), **calls}
        times = {n: 0.0 for n in calls}
        for _ in range(args.rounds):
            for n, call in calls.items():
                fill("all_reduce", view, rank, world, args.dtype)
                times[n] += session.timer(call, f"{n or 'all_reduce'} at {size} B") / args.rounds
        for n, call in calls.items():
            fill("all_reduce", view, rank, world, args.dtype)
            call()
            wrong = count_wrong("all_reduce", view, rank, world, count, args.dtype, True)
            if n is None:
                session.result(size, count, times[n], wrong, inplace=True, algo=None, proto=None, executor="native")
                continue
            s = schedules[n]
            rec = session.result(size, count, times[n], wrong, inplace=True, algo=PREFIX + n, proto=None,
                                 executor="collsim", schedule_sha256=schedule_hash(s), steps=s.n_steps,
                                 transfers=s.n_transfers)
            if rec["wrong"] and rank == 0:
                verdict = check(s)
                why = verdict.error if not verdict.ok else "the schedule is right: the executor or the backend is not"
                session.say(f"schedule_bench: wrong: {PREFIX + n} at {size} B: {rec['wrong']} elements (over the "
                            f"ranks) differ from the exact sum (collsim check: {why})", file=sys.stderr)
    session.close()
    return 0


def main(argv=None) -> int:
    return runner_main("schedule_bench", parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
