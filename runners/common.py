"""What every runner shares (nccl-tests' common.cu, for torch.distributed): the AllReduce runners'
arguments and size sweep, the environment each rank gets (NVLS/multicast forced off, emulated nodes),
process-group start-up and clocks (CUDA events for GPU work, perf_counter for CPU work); the
metadata record is ``provenance.py``.

Runs on every rank; torch is imported inside functions only, so argument errors are reported before
torch loads (one line, exit code 2). Times are seconds, sizes bytes.
"""
from __future__ import annotations

import datetime
import math
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collsim import cli  # noqa: E402
from collsim.errors import CollsimError  # noqa: E402
from collsim.inputs import MAX_CALLS, QUICK_SIZES  # noqa: E402
from collsim.nccl.log import canonical_algo, canonical_proto  # noqa: E402
from collsim.sweep import sizes as size_range  # noqa: E402
from collsim.units import parse_size  # noqa: E402

# Forced in every environment this runner builds (multicast/NVLS stays off).
FORCED_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
              "NVSHMEM_DISABLE_NVLS": "1"}
# dtype -> (itemsize in bytes, largest integer the dtype holds exactly)
DTYPES = {"float32": (4, 2**24), "float16": (2, 2048), "bfloat16": (2, 256), "float64": (8, 2**53),
          "int32": (4, 2**31 - 1), "int64": (8, 2**63 - 1), "int8": (1, 127), "uint8": (1, 255)}
FILL_MAX = 3  # inputs are (index + rank) % 4: small integers, sums exact in every dtype above
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # --timeout: at most a week (a finite, positive number of seconds)


class BenchError(Exception):
    """A failure during the run, reported as one line (exit code 1)."""


class OneLineParser(cli.OneLineParser):
    """collsim's parser (bad arguments: one line on stderr, exit code 2) on every rank: under torchrun
    each process that finds the error prints its line (torchrun may stop rank 0 when another rank
    exits first, so rank 0 alone could leave no message), with its rank when there are several."""

    def error(self, message):  # noqa: D401 - argparse API
        rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE", "1")
        super().error(f"rank {rank}: {message}" if rank is not None and world != "1" else message)


def _sizes_arg(text):
    sizes = [parse_size(t) for t in text.split(",") if t.strip()]
    if not sizes:
        raise CollsimError(f"--sizes {text!r} names no size (e.g. --sizes 8,1K,4M)")
    return sizes


def _name_list(text, canon):
    names = [t.strip().lstrip("^") for t in text.split(",")]
    [canon(n) for n in names]  # raises CollsimError on an unknown name
    return text


def base_parser(prog: str, description: str) -> OneLineParser:
    """The options every AllReduce runner takes: the size sweep, dtype, calls, timing, backend,
    output, timeout, emulated nodes and the NCCL probe (checked by ``check_args``)."""
    p = OneLineParser(prog=prog, description=description)
    p.add_argument("-b", "--minbytes", default="8", help="smallest size, bytes (K/M/G suffixes)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size, bytes")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size multiplication factor")
    p.add_argument("--sizes", help="comma-separated sizes instead of -b/-e/-f, e.g. 8,1K,4M")
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("-w", "--warmup", type=int, default=5, help="untimed calls per size")
    p.add_argument("-n", "--iters", type=int, default=20, help="timed calls per size")
    p.add_argument("--timing", choices=("eager", "graph"), default="eager")
    p.add_argument("--graph-calls", type=int, default=20, help="calls per CUDA graph (graph timing)")
    p.add_argument("--backend", choices=("nccl", "gloo"), default="nccl")
    p.add_argument("--out", help="JSON Lines output file (rank 0 writes it)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds before a hung collective is an error")
    p.add_argument("--emulate-nodes", type=int, default=None, metavar="N",
                   help="give each group of world/N consecutive ranks its own NCCL_HOSTID")
    p.add_argument("--nccl-probe", action="store_true",
                   help="first run a short probe with NCCL INFO logging and record what NCCL chose")
    return p


def build_parser() -> OneLineParser:
    """allreduce_bench's options: ``base_parser``'s, in/out of place, --rotate, NCCL_ALGO/PROTO."""
    from collectives import NAMES
    p = base_parser("allreduce_bench", "collective benchmark, AllReduce by default (see module docstring)")
    p.add_argument("--coll", default="all_reduce", choices=NAMES,
                   help="the collective, as nccl-tests names it (all_gather for all_gather_perf, ...)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--place", choices=("in", "out", "both"),
                   help="in place, out of place, or both per size as nccl-tests (default: in; "
                        "out for alltoall and sendrecv, whose in-place results nccl-tests does not check)")
    g.add_argument("--inplace", dest="place", action="store_const", const="in")
    g.add_argument("--out-of-place", dest="place", action="store_const", const="out")
    p.add_argument("--rotate", action="store_true",
                   help="call i uses slice i mod (max size // size) of the buffer, like nccl-tests (no L2 reuse)")
    p.add_argument("--algo", help="NCCL_ALGO, e.g. Ring, Tree, ^NVLS")
    p.add_argument("--proto", help="NCCL_PROTO, e.g. LL, LL128, Simple")
    p.add_argument("--quick", action="store_true", help="the quick run collsim fit --cluster calibrates on: "
                   "8 B, 64 KiB, 8 MiB, 256 MiB and 1 GiB, NCCL's own choice (no --sizes, -b/-e, --algo, --proto)")
    return p


def collective_sweep(args, world: int) -> None:
    """``args.size_list``: the sizes nccl-tests would print for ``args.coll`` on ``world`` ranks
    (``collectives.layout``: segmented sizes floored, empty and repeated ones left out) and
    ``args.span_list`` each call's elements per buffer slot; ``args.places`` the in-place flags
    in nccl-tests' order (out of place first)."""
    from collectives import UNCHECKED_IN_PLACE, layout
    itemsize, seen = DTYPES[args.dtype][0], {}
    for size in sweep(args):
        lay = layout(args.coll, size, itemsize, world)
        if lay.count:
            seen.setdefault(lay.size, lay.span)
    if not seen:
        raise CollsimError(f"no size gives {args.coll} on {world} ranks a whole 16-byte segment per rank")
    args.size_list, args.span_list = list(seen), list(seen.values())
    place = args.place or ("out" if args.coll in UNCHECKED_IN_PLACE else "in")
    args.places = {"in": [True], "out": [False], "both": [False, True]}[place]
    args.inplace = args.places[-1] if len(args.places) == 1 else None


def sweep(args) -> list[int]:
    """Sizes in bytes: nccl-tests' -b/-e/-f sweep, or --sizes; floored to whole elements."""
    itemsize = DTYPES[args.dtype][0]
    if getattr(args, "quick", False):
        raw = list(QUICK_SIZES)
    elif args.sizes is not None:
        raw = _sizes_arg(args.sizes)
    else:
        lo, hi = parse_size(args.minbytes), parse_size(args.maxbytes)
        if lo > hi:
            raise CollsimError(f"-b {args.minbytes} is larger than -e {args.maxbytes}")
        if args.stepfactor < 2:
            raise CollsimError(f"-f must be at least 2, got {args.stepfactor}")
        raw = size_range(max(lo, 1), max(hi, 1), args.stepfactor).tolist() if hi >= 1 else []
    sizes = sorted({s - s % itemsize for s in raw if s >= itemsize})
    if not sizes:
        raise CollsimError(f"no size holds a whole {args.dtype} element ({itemsize} B)")
    return sizes


def check_args(parser, args, world: int) -> None:
    """The checks of ``base_parser``'s options; a problem is one line and exit code 2. Sets
    ``args.timing`` to "host" for gloo (its clock)."""
    if not (0 <= args.warmup <= MAX_CALLS and 1 <= args.iters <= MAX_CALLS and 1 <= args.graph_calls <= MAX_CALLS):
        parser.error(f"need -w >= 0, -n >= 1 and --graph-calls >= 1 (each at most {MAX_CALLS})")
    if not (math.isfinite(args.timeout) and 0 < args.timeout <= MAX_TIMEOUT_S):
        parser.error(f"--timeout must be a number of seconds > 0 and <= {MAX_TIMEOUT_S:g}, got {args.timeout:g}")
    if args.backend == "gloo":
        for option, given in (("--timing graph", args.timing == "graph"), ("--nccl-probe", args.nccl_probe),
                              ("--emulate-nodes", args.emulate_nodes)):
            if given:
                parser.error(f"{option} needs --backend nccl (gloo runs on the CPU: a host clock, no CUDA graphs)")
    if args.emulate_nodes is not None and (args.emulate_nodes < 1 or world % args.emulate_nodes):
        parser.error(f"--emulate-nodes {args.emulate_nodes} does not divide the world size {world}")
    from collectives import SUMS
    if getattr(args, "coll", "all_reduce") in SUMS and FILL_MAX * world > DTYPES[args.dtype][1]:
        parser.error(f"{args.dtype} cannot hold the exact check sum for {world} ranks")
    if args.backend == "gloo":
        args.timing = "host"


def parse_args(argv):
    """allreduce_bench's arguments, parsed and checked; every problem is one line and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    given = [o for o, v in (("--sizes", args.sizes), ("--algo", args.algo), ("--proto", args.proto)) if v]
    given += [o for o in ("-b", "-e", "--minbytes", "--maxbytes") if o in (sys.argv[1:] if argv is None else argv)]
    if args.quick and given:
        parser.error(f"--quick runs its own five sizes with NCCL's choice: drop {', '.join(given)}")
    if args.coll == "sendrecv" and world < 2:
        parser.error("sendrecv needs at least 2 ranks (torch.distributed sends to no rank itself)")
    try:
        collective_sweep(args, world)
        for name in ("algo", "proto"):
            if getattr(args, name):
                _name_list(getattr(args, name), canonical_algo if name == "algo" else canonical_proto)
    except CollsimError as e:
        parser.error(str(e))
    if args.backend == "gloo" and (args.algo or args.proto):
        parser.error("--algo and --proto (NCCL_ALGO, NCCL_PROTO) need --backend nccl")
    check_args(parser, args, world)
    return args


def rank_env(args, rank: int, world: int, environ: dict) -> dict:
    """Environment variables this rank sets before any communicator exists."""
    env = dict(FORCED_ENV)
    if args.algo:
        env["NCCL_ALGO"] = args.algo
    if args.proto:
        env["NCCL_PROTO"] = args.proto
    if args.timing == "graph" and "NCCL_GRAPH_MIXING_SUPPORT" not in environ:
        # NCCL's default (1) serialises captured calls with NCCL's internal stream; with torch's
        # process-group stream that costs ~6 us per captured call on 2 x H200 (11.3 vs 4.7 us at
        # 8 B; data/h200x2/README.md). Safe here: no graph launch is outstanding when an eager
        # call runs (the timer waits for the replays to end).
        env["NCCL_GRAPH_MIXING_SUPPORT"] = "0"
    if args.emulate_nodes:
        env["NCCL_HOSTID"] = f"collsim-node{rank // (world // args.emulate_nodes)}"
        if "NCCL_SOCKET_IFNAME" not in environ:
            env["NCCL_SOCKET_IFNAME"] = "lo"
    return env


def init(backend: str, timeout_s: float = 120.0):
    """Start the process group from torchrun's RANK/WORLD_SIZE/LOCAL_RANK; returns (rank, world, device)."""
    import torch
    import torch.distributed as dist

    os.environ.update(FORCED_ENV)  # NVLink SHARP / multicast stay off
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    kwargs = {"backend": backend, "timeout": datetime.timedelta(seconds=timeout_s)}
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        kwargs["device_id"] = device
    else:
        device = torch.device("cpu")
    dist.init_process_group(**kwargs)
    return dist.get_rank(), dist.get_world_size(), device


class Clock:
    """Marks on the current CUDA stream (events) or on the host clock (CPU)."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def seconds(self, a, b) -> float:
        if self.cuda:
            b.synchronize()
            return a.elapsed_time(b) / 1e3
        return b - a

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()


def time_each(fn, clock: Clock, iters: int, warmup: int) -> list[float]:
    """Seconds of each of ``iters`` calls of fn() after ``warmup`` untimed calls.

    With a process group up, all ranks meet at a barrier before the timed calls.
    """
    import torch.distributed as dist

    for _ in range(warmup):
        fn()
    clock.sync()
    if dist.is_initialized():
        dist.barrier()
    marks = [clock.mark()]
    for _ in range(iters):
        fn()
        marks.append(clock.mark())
    clock.sync()
    return [clock.seconds(a, b) for a, b in zip(marks, marks[1:])]


def summary(times: list[float]) -> tuple[float, float]:
    """(median, min) of per-call seconds, each the max over ranks (every rank must call it).

    The median is the usual figure; the min resists interference from other work on a
    shared machine (such noise only adds time).
    """
    return max_over_ranks(float(statistics.median(times))), max_over_ranks(min(times))


def max_over_ranks(seconds: float) -> float:
    """The largest value any rank has (every rank must call it): nccl-tests' convention."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([seconds], dtype=torch.float64)
    if dist.get_backend() == "nccl":
        t = t.cuda()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())
