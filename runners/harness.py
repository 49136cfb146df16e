"""What the runners (``allreduce_bench.py``, ``schedule_bench.py``) do around the calls they
time: start-up (process group, a gloo group for the host side, the NCCL probe, NCCL's version),
the gated clocks, one result record per size, the error line. The fill and the exact check of
each collective's result are ``collectives.py``'s.

Clocks (``Timer``). gloo: -w untimed calls, a barrier, -n calls on the host clock. NCCL eager:
-w untimed calls and a GPU sync, then the ranks' clocks start together: a host barrier, a GPU
spin of about 1 ms (``torch.cuda._sleep``), an untimed one-element all_reduce, the start event,
the -n calls, the end event; every clock starts when that all_reduce ends, the same moment on
every GPU, with the first timed call already queued. NCCL graph: eager warm-up (at least one
call), --graph-calls k calls captured in one ``torch.cuda.CUDAGraph``, one untimed replay, then
the gated start and ceil(n/k) replays; time per call = elapsed / (replays x k). Times are
microseconds per call, each rank's own average; ``Session.result`` combines the ranks.

Failures (``main``). Every record is one write of one line (``collsim.measure.JsonlWriter``), so
a rank killed at any moment (kill -9, SIGTERM) leaves every completed size in ``--out``; a write
that fails (a full disk) cuts the file back to its last complete line and ends the run with one
line. A rank that stops answering (hung, SIGSTOP) is an error after ``--timeout`` seconds on the
ranks waiting for it, which then SIGKILL the run's other ranks on their host
(``stop_local_peers``: torchrun would wait 30 s for a stopped one), so the command ends within
``--timeout`` plus a few seconds.

Runs on every rank; torch is imported inside functions only (argument errors come before it).
"""
from __future__ import annotations

import math
import os
import signal
import socket
import sys
import time
from datetime import timedelta

from common import BenchError, rank_env
from nccl_probe import probe_child, run_probe
from provenance import build_meta, debug_file_version, probe_log_dir, rank_info

from collsim.measure import TABLE_HEADER, JsonlWriter, format_row, result_record

PEERS: list = []  # every rank's rank_info once this process's Session knows them (stop_local_peers)
GATE_CYCLES = 2_000_000  # GPU clock cycles the timed calls wait behind (~1 ms at 2 GHz)


def wait_event(event, timeout: float, what: str) -> None:
    """Poll a CUDA event; a peer that died or hung becomes an error after ``timeout`` s."""
    deadline, delay = time.monotonic() + timeout, 1e-5
    while not event.query():
        if time.monotonic() > deadline:
            raise BenchError(f"{what} did not finish within --timeout {timeout:g} s (a rank died or hung?)")
        time.sleep(delay)
        delay = min(2 * delay, 0.01)


class Timer:
    """Times ``call(i)`` (the i-th call of one size) per the module docstring."""

    def __init__(self, args, cpu_group):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.args, self.cpu_group = torch, dist, args, cpu_group
        self.one = torch.zeros(1, device="cuda") if args.backend == "nccl" else None

    def align(self):
        """Start the ranks' clocks together: a host barrier, a GPU spin long enough for the host
        to queue what follows, a one-element all_reduce."""
        self.dist.barrier(group=self.cpu_group)
        self.torch.cuda._sleep(GATE_CYCLES)
        self.dist.all_reduce(self.one)

    def sync(self, what):
        ev = self.torch.cuda.Event()
        ev.record()
        wait_event(ev, self.args.timeout, what)

    def __call__(self, call, what: str) -> float:
        """Microseconds per call of ``call(i)``; ``what`` names it in a timeout error."""
        a, torch, dist = self.args, self.torch, self.dist
        if a.backend == "gloo":
            for i in range(a.warmup):
                call(i)
            dist.barrier(group=self.cpu_group)
            t0 = time.perf_counter()
            for i in range(a.iters):
                call(i)
            return (time.perf_counter() - t0) * 1e6 / a.iters
        for i in range(max(a.warmup, 1 if a.timing == "graph" else 0)):
            call(i)
        self.sync(what)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if a.timing == "eager":
            self.align()
            start.record()
            for i in range(a.iters):
                call(i)
            end.record()
            wait_event(end, a.timeout, what)
            return start.elapsed_time(end) * 1e3 / a.iters
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            for i in range(a.graph_calls):
                call(i)
        graph.replay()
        self.sync(what)
        replays = max(1, math.ceil(a.iters / a.graph_calls))
        self.align()
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        wait_event(end, a.timeout, what)
        graph.reset()
        return start.elapsed_time(end) * 1e3 / (replays * a.graph_calls)


class Session:
    """One rank's process group, clocks and output: rank 0 writes the meta record first, then one
    result record per ``result`` call, flushed as measured, and prints them as a table."""

    def __init__(self, args, rank: int, world: int, log_dir: str | None):
        import torch
        import torch.distributed as dist
        self.args, self.rank, self.world, self.dist = args, rank, world, dist
        timeout = timedelta(seconds=args.timeout)
        self.device = None
        if args.backend == "nccl":
            if not torch.cuda.is_available():
                raise BenchError("--backend nccl needs a CUDA GPU (use --backend gloo on CPU)")
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
        dist.init_process_group(args.backend, timeout=timeout, rank=rank, world_size=world, device_id=self.device)
        self.cpu_group = dist.new_group(backend="gloo", timeout=timeout) if self.device is not None else None
        self.infos = [None] * world
        dist.all_gather_object(self.infos, rank_info(self.device), group=self.cpu_group)
        PEERS[:] = self.infos
        self.probe = run_probe(args, rank, world, self.infos, self.cpu_group) \
            if args.nccl_probe or args.emulate_nodes else None
        dist.all_reduce(torch.zeros(1, device=self.device or "cpu"))  # creates the communicator (NCCL logs its version)
        self.timer = Timer(args, self.cpu_group)
        if self.device is not None:
            self.timer.sync("the first all_reduce")
        version = debug_file_version(os.path.join(log_dir, f"run.{rank}.log")) if log_dir else None
        self.version = version or (self.probe or {}).get("version")
        self.out, self.say = None, print

    def begin(self, argv, sizes, desc: str, **meta):
        """Write the meta record (``provenance.build_meta`` updated with ``meta``) and the table
        header on rank 0; return ``sizes`` with a progress bar on rank 0 when tqdm is there and stderr
        is a terminal."""
        if self.rank == 0:
            record = build_meta(self.args, argv, self.world, self.infos, self.version)
            if self.probe is not None:
                record["nccl_probe"], record["nodes_nccl"] = self.probe, self.probe["n_nodes"]
            record.update(meta)
            if self.args.out:
                os.makedirs(os.path.dirname(os.path.abspath(self.args.out)), exist_ok=True)
                self.out = JsonlWriter(self.args.out)
                self.out.write("meta", record)
        try:
            from tqdm import tqdm
            # rank 0 only, and only on a terminal (None): no carriage-return spam in SLURM's log files
            sizes = tqdm(sizes, desc=desc, unit="size", disable=True if self.rank != 0 else None, file=sys.stderr)
            self.say = tqdm.write
        except ImportError:
            pass
        if self.rank == 0:
            self.say(TABLE_HEADER)
        return sizes

    def result(self, size: int, count: int, time_us: float, wrong: int, **fields) -> dict:
        """Every rank's time (us per call) and wrong count combined into one record (time_us the
        max over ranks, time_us_min/time_us_mean the min/mean, wrong the sum, None where a rank
        checked nothing); every rank calls it."""
        import torch
        stats = [torch.zeros(2, dtype=torch.float64) for _ in range(self.world)]
        mine = torch.tensor([time_us, -1 if wrong is None else wrong], dtype=torch.float64)
        self.dist.all_gather(stats, mine, group=self.cpu_group)
        times, wrongs = [float(x[0]) for x in stats], [int(x[1]) for x in stats]
        rec = result_record(size, count, self.args.dtype, max(times), self.world,
                            None if min(wrongs) < 0 else sum(wrongs),
                            collective=getattr(self.args, "coll", "all_reduce"),
                            **fields, timing=self.args.timing, time_us_min=min(times),
                            time_us_mean=sum(times) / self.world)
        if self.rank == 0:
            self.say(format_row(rec))
            if self.out:
                self.out.write("result", rec)
        return rec

    def close(self) -> None:
        if self.out:
            self.out.close()
        self.dist.barrier(group=self.cpu_group)
        self.dist.destroy_process_group()


def stop_local_peers(peers: list) -> None:
    """SIGKILL the other ranks of this run on this host (``peers``: the ranks' ``rank_info``),
    those still children of our launcher (torchrun's agent), so that a stopped or hung one does
    not hold the command (module docstring)."""
    for info in peers:
        pid = info.get("pid")
        if info.get("host") != socket.gethostname() or pid == os.getpid() or not isinstance(pid, int):
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:  # field 4, after "(name)": the parent's pid
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent == os.getppid():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue  # gone already, or not ours


def _terminated(prog: str, rank: int):
    """A SIGTERM handler: one line naming the rank, then exit 143; the records written so far stay
    (each is one whole line)."""
    def handler(signum, _frame):
        sys.stderr.write(f"{prog}: error: rank {rank}: terminated (SIGTERM: the launcher ends the "
                         "run when another rank fails, or the job was cancelled)\n")
        sys.stderr.flush()
        os._exit(128 + signum)
    return handler


def main(prog: str, parse_args, run, argv=None) -> int:
    """A runner's main: parse (bad arguments: one line, exit 2), set the rank's environment
    (``common.rank_env``), act as the NCCL probe child when asked, point NCCL_DEBUG=WARN at a
    temporary file (NCCL's version), then ``run(args, argv, rank, world, log_dir)``; an error is
    one line ``PROG: error: rank R: ...`` and exit code 1, whatever the other ranks do, and this
    host's other ranks are stopped (``stop_local_peers``); so is SIGTERM (exit code 143: the
    launcher ending the run when another rank failed says so on every rank it ends)."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.update(rank_env(args, rank, world, os.environ))
    if os.environ.get("COLLSIM_PROBE"):
        return probe_child(args, rank, world)
    signal.signal(signal.SIGTERM, _terminated(prog, rank))
    log_dir = None
    if args.backend == "nccl" and "NCCL_DEBUG" not in os.environ:
        log_dir = probe_log_dir()
        os.environ.update(NCCL_DEBUG="WARN", NCCL_DEBUG_FILE=os.path.join(log_dir, f"run.{rank}.log"))
    try:
        return run(args, argv, rank, world, log_dir)
    except Exception as e:  # one line, no traceback; the records written so far stay valid
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if isinstance(e, RuntimeError):  # torch's and gloo's errors; collsim's and ours say enough
            msg = f"{type(e).__name__}: {msg}"
        sys.stderr.write(f"{prog}: error: rank {rank}: {msg}\n")
        sys.stderr.flush()
        stop_local_peers(PEERS)
        os._exit(1)  # a hung communicator must not block the exit
