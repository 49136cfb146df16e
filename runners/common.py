"""What every runner shares (nccl-tests' common.cu, for torch.distributed): the AllReduce runners'
arguments and size sweep, the environment each rank gets (NVLS/multicast forced off, emulated nodes),
process-group start-up, clocks (CUDA events for GPU work, perf_counter for CPU work), the metadata
record (machine, versions, every NCCL_* variable, the command) and the NCCL probe's log folder.

Runs on every rank; torch is imported inside functions only, so argument errors are reported before
torch loads (one line, exit code 2). Times are seconds, sizes bytes.
"""
from __future__ import annotations

import datetime
import math
import os
import shlex
import socket
import subprocess
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collsim import cli  # noqa: E402
from collsim.errors import CollsimError  # noqa: E402
from collsim.inputs import MAX_CALLS  # noqa: E402
from collsim.units import parse_size  # noqa: E402
from collsim.nccl.log import canonical_algo, canonical_proto, parse_file  # noqa: E402
from collsim.sweep import sizes as size_range  # noqa: E402

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
    """collsim's parser (bad arguments: one line on stderr, exit code 2) that prints on rank 0
    only under torchrun."""

    def exit(self, status=0, message=None):
        super().exit(status, message if os.environ.get("RANK", "0") == "0" else None)


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
    p = base_parser("allreduce_bench", "AllReduce benchmark (see module docstring)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--inplace", dest="inplace", action="store_true", default=True)
    g.add_argument("--out-of-place", dest="inplace", action="store_false")
    p.add_argument("--rotate", action="store_true",
                   help="call i uses slice i mod (max size // size) of the buffer, like nccl-tests (no L2 reuse)")
    p.add_argument("--algo", help="NCCL_ALGO, e.g. Ring, Tree, ^NVLS")
    p.add_argument("--proto", help="NCCL_PROTO, e.g. LL, LL128, Simple")
    return p


def sweep(args) -> list[int]:
    """Sizes in bytes: nccl-tests' -b/-e/-f sweep, or --sizes; floored to whole elements."""
    itemsize = DTYPES[args.dtype][0]
    if args.sizes is not None:
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
    if FILL_MAX * world > DTYPES[args.dtype][1]:
        parser.error(f"{args.dtype} cannot hold the exact check sum for {world} ranks")
    if args.backend == "gloo":
        args.timing = "host"


def parse_args(argv):
    """allreduce_bench's arguments, parsed and checked; every problem is one line and exit code 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        args.size_list = sweep(args)
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


def nccl_env(environ=os.environ) -> dict:
    """Every NCCL_* and TORCH_NCCL_* variable (what NCCL and torch read)."""
    return {k: v for k, v in sorted(environ.items()) if k.startswith(("NCCL_", "TORCH_NCCL_"))}


def _run(cmd) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _first_line(text: str | None) -> str | None:
    """nvidia-smi prints one line per GPU; the host has one driver."""
    return text.splitlines()[0] if text else text


def launcher_command() -> str | None:
    """The parent process's command line (torchrun's) when /proc shows it."""
    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return None
    return shlex.join(a.decode(errors="replace") for a in raw.split(b"\0") if a) or None


def rank_info(device) -> dict:
    """What each rank contributes to the metadata."""
    import torch
    info = {"host": socket.gethostname(), "pid": os.getpid(),
            "local_rank": int(os.environ.get("LOCAL_RANK", "0"))}
    if device is not None and device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update(device=device.index, gpu=props.name,
                    gpu_memory_bytes=props.total_memory, gpu_uuid=str(getattr(props, "uuid", "")))
    return info


def nccl_header_version(torch) -> str:
    """NCCL's version as "x.y.z" from the torch module passed in."""
    v = torch.cuda.nccl.version()  # the headers torch was built with, not the library that runs
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def build_meta(args, argv, world: int, infos: list, nccl_version: str | None) -> dict:
    import torch
    hosts = [i["host"] for i in infos]
    nodes = args.emulate_nodes or len(set(hosts))
    gpus = sorted({(i["host"], i.get("gpu_uuid") or i.get("device")) for i in infos if "gpu" in i})
    commit = _run(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    dirty = _run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"])
    return {
        "harness": "collsim", "collective": "allreduce", "backend": args.backend,
        "timing": args.timing, "graph_calls": args.graph_calls if args.timing == "graph" else None,
        "dtype": args.dtype, "inplace": args.inplace, "rotate": args.rotate,
        "clock_start": "gated" if args.backend == "nccl" else "barrier",
        "warmup": args.warmup, "iters": args.iters,
        "algo": args.algo, "proto": args.proto, "world_size": world, "nodes": nodes,
        "ranks_per_node": world // nodes, "emulated_nodes": args.emulate_nodes,
        "hosts": sorted(set(hosts)), "ranks": infos,
        "gpu": infos[0].get("gpu"), "gpu_count": len(gpus),
        "driver": _first_line(_run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])),
        "cuda": torch.version.cuda, "torch": torch.__version__, "python": sys.version.split()[0],
        "nccl_version": nccl_version,
        "nccl_compile_version": nccl_header_version(torch) if args.backend == "nccl" else None,
        "env": nccl_env(), "command": shlex.join([sys.executable, sys.argv[0]] + list(argv)),
        "launcher_command": launcher_command(),
        "git_commit": commit, "git_dirty": bool(dirty) if commit else None,
        "time_combine": "time_us: max over ranks of each rank's mean time per call "
                        "(time_us_mean: mean over ranks, as nccl-tests -a 1)",
        "out_of_place_method": None if args.inplace else "device copy into the output, then in-place all_reduce",
    }


def debug_file_version(path) -> str | None:
    """NCCL's runtime version from a debug file (its "NCCL version x.y.z" line)."""
    try:
        return parse_file(path).version
    except (OSError, CollsimError):
        return None


def probe_log_dir() -> str:
    return tempfile.mkdtemp(prefix="collsim-nccl-")


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


def meta_record(runner: str, backend: str, world: int, device, args) -> dict:
    """The first record of every output file: what ran where, with which versions and variables."""
    import torch

    from collsim.nccl.env import check_env

    env = nccl_env()
    return {
        "type": "meta", "harness": "collsim", "runner": runner, "args": vars(args),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": shlex.join([sys.executable] + sys.argv), "launcher_command": launcher_command(),
        "backend": backend, "world_size": world, "rank0": rank_info(device),
        "torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0],
        "nccl_compile_version": nccl_header_version(torch) if backend == "nccl" else None,
        "torch_threads": torch.get_num_threads(), "env": env, "env_problems": check_env(env),
        "forced_env": {k: os.environ.get(k) for k in FORCED_ENV},
    }

