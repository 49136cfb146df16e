"""AllReduce benchmark in nccl-tests vocabulary, launched by torchrun.

One node, 2 GPUs (NCCL; graph timing; NCCL's own view from a probe)::

    torchrun --standalone --nproc-per-node=2 runners/allreduce_bench.py \\
        -b 8 -e 4G -f 2 -w 5 -n 20 --timing graph --nccl-probe --out out/ar_graph.jsonl

Several nodes (run on every node; or ``runners/launch_torchrun.sh``)::

    torchrun --nnodes=2 --nproc-per-node=8 --rdzv-backend=c10d \\
        --rdzv-endpoint=node0:29500 --rdzv-id=ar1 runners/allreduce_bench.py -b 8 -e 1G --out ar.jsonl

SLURM (one torchrun per node; see ``runners/slurm_allreduce.sbatch``)::

    srun --nodes=2 --ntasks-per-node=1 bash -c 'torchrun --nnodes=$SLURM_NNODES \\
        --nproc-per-node=8 --rdzv-backend=c10d --rdzv-endpoint=$MASTER_ADDR:29500 \\
        --rdzv-id=$SLURM_JOB_ID runners/allreduce_bench.py -b 8 -e 1G --out ar.jsonl'

CPU only (tests): ``torchrun --standalone --nproc-per-node=4 runners/allreduce_bench.py
--backend gloo -b 8 -e 1M``. Two emulated nodes on one host (one rank per group
of ``world/N`` consecutive ranks shares an ``NCCL_HOSTID``; sockets over ``lo``)::

    torchrun --standalone --nproc-per-node=2 runners/allreduce_bench.py --emulate-nodes 2 ...

Timing. ``eager``: ``-w`` untimed calls, a GPU sync and a host barrier, then
``-n`` calls enqueued back to back between two CUDA events (nothing else per
call: buffers are views of one allocation, no host syncs). ``graph``: eager
warm-up (at least one call), then ``--graph-calls`` k calls captured in one
``torch.cuda.CUDAGraph``, one untimed replay, then ceil(n/k) replays between
CUDA events; time per call = elapsed / (replays x k). The timed calls are queued
before the clocks start (below), so a timed size carries a fixed cost of only 1-3 us
spread over its calls, 0.01-0.03 us per call at ``-n 100`` (2 x H200,
data/h200x2/run6/start/; with the start event recorded before the first launch, as
until run 5, it was 10-25 us). Graph timing sets
``NCCL_GRAPH_MIXING_SUPPORT=0`` unless you set it (NCCL's default costs a
captured torch all_reduce ~6 us per call; data/h200x2/README.md). ``gloo``: host clock.
Each rank averages its own calls; ``time_us`` is the maximum over ranks of
those averages; ``time_us_min`` the minimum and ``time_us_mean`` the mean
(nccl-tests 2.19 reports the mean over ranks by default, ``-a 1``; ``-a 3`` max).
The ranks' clocks start together: after a host barrier each rank enqueues a GPU spin of
about 1 ms (``torch.cuda._sleep``), an untimed one-element all_reduce, the start event
and the timed calls, so every clock starts when that all_reduce ends, the same moment on
every GPU however far apart the hosts left the barrier, with the first timed call already
queued (a host barrier alone left the ranks up to a few hundred us apart, and the early
rank's average carried that skew / calls).
``--out-of-place``: torch has no out-of-place AllReduce, so each call is a
device copy into the output then an in-place all_reduce (the copy is timed).
``--rotate``: call i uses slice i mod (max size // size) of the buffer, as nccl-tests
does ("to avoid cache effects"), so the calls cycle through up to max-size bytes instead of
reusing one slice that stays in L2. On 2 x H200 this is worth 10-20% at 2-16 MiB for Ring LL
(data/h200x2/README.md "run5/"); compare with nccl-tests with it, and with the same -e.

Checking. Rank r fills element i with (i + r) % 4; after timing the buffer is
filled again, reduced once and every element compared with the exact sum;
``wrong`` is the count of differing elements summed over ranks.

Output (``--out``): JSON Lines, a meta record then one result record per size,
flushed as measured (schema in ``collsim/measure/__init__.py``). NCCL runs set
``NCCL_DEBUG=WARN`` into a temporary file (unless NCCL_DEBUG is set) to read
NCCL's runtime version; ``--nccl-probe`` (implied by ``--emulate-nodes``) runs
each rank once more as a child process with ``NCCL_DEBUG=INFO
NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING``, one call per size, and stores the parsed
log under ``nccl_probe`` in the meta (``runners/nccl_probe.py``); timed calls never
run with that logging.
``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` and
``NVSHMEM_DISABLE_NVLS=1`` are always set. Exit codes: 0 done, 1 run failed
(one line ``allreduce_bench: error: rank R: ...``), 2 bad arguments.
Test hook: ``COLLSIM_TEST_FAULT=die@rank1:size=4096`` (or ``hang@...``, ``corrupt@...``).
"""
from __future__ import annotations

import math
import os
import re
import sys
import time
from datetime import timedelta

from common import (DTYPES, BenchError, build_meta, debug_file_version, parse_args,
                           probe_log_dir, rank_env, rank_info)
from nccl_probe import probe_child, run_probe

from collsim.errors import CollsimError
from collsim.measure import TABLE_HEADER, JsonlWriter, format_row, result_record

CHUNK = 1 << 26  # elements per fill/check kernel batch (bounds temporary memory)
GATE_CYCLES = 2_000_000  # GPU clock cycles the timed calls wait behind (~1 ms at 2 GHz)


def fill(buf, rank: int) -> None:
    """Element i := (i + rank) % 4."""
    import torch
    for s in range(0, buf.numel(), CHUNK):
        idx = torch.arange(s, min(s + CHUNK, buf.numel()), device=buf.device, dtype=torch.int64)
        buf[s:s + idx.numel()].copy_((idx + rank) % 4)


def count_wrong(buf, world: int) -> int:
    """Elements differing from sum over r < world of (i + r) % 4."""
    import torch
    wrong = 0
    for s in range(0, buf.numel(), CHUNK):
        idx = torch.arange(s, min(s + CHUNK, buf.numel()), device=buf.device, dtype=torch.int64)
        expect = torch.full_like(idx, 6 * (world // 4))
        for r in range(world % 4):
            expect += (idx + r) % 4
        wrong += int((buf[s:s + idx.numel()].double() != expect.double()).sum())
    return wrong


def parse_fault(spec: str | None):
    """``die@rank1:size=4096`` / ``hang@...`` / ``corrupt@...`` (one wrong element
    before the check) -> (kind, rank, size) or None."""
    if not spec:
        return None
    m = re.fullmatch(r"(die|hang|corrupt)@rank(\d+):size=(\d+)", spec)
    if not m:
        raise BenchError(f"bad COLLSIM_TEST_FAULT {spec!r} (want die@rankR:size=BYTES)")
    return m.group(1), int(m.group(2)), int(m.group(3))


def wait_event(event, timeout: float, what: str) -> None:
    """Poll a CUDA event; a peer that died or hung becomes an error after ``timeout`` s."""
    deadline, delay = time.monotonic() + timeout, 1e-5
    while not event.query():
        if time.monotonic() > deadline:
            raise BenchError(f"{what} did not finish within --timeout {timeout:g} s (a rank died or hung?)")
        time.sleep(delay)
        delay = min(2 * delay, 0.01)


def call_buffers(buf, count: int, rotate: bool, calls: int) -> list:
    """The views of ``buf`` that calls 0, 1, ... use, call i taking entry i mod len: one
    ``count``-element slice, or with ``rotate`` consecutive slices, as many as fit in ``buf``
    and at most ``calls`` (nccl-tests: offset = size x (iteration mod max_bytes // size))."""
    n = min(buf.numel() // count, max(calls, 1)) if rotate and count else 1
    return [buf[j * count:(j + 1) * count] for j in range(n)]


class Timer:
    """Times ``call`` (one all_reduce) on one size, per the module docstring."""

    def __init__(self, args, cpu_group):
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.args, self.cpu_group = torch, dist, args, cpu_group
        self.one = torch.zeros(1, device="cuda") if args.backend == "nccl" else None

    def align(self):
        """Start the ranks' clocks together (module docstring): a host barrier, a GPU spin
        long enough for the host to queue what follows, a one-element all_reduce."""
        self.dist.barrier(group=self.cpu_group)
        self.torch.cuda._sleep(GATE_CYCLES)
        self.dist.all_reduce(self.one)

    def sync(self, what):
        ev = self.torch.cuda.Event()
        ev.record()
        wait_event(ev, self.args.timeout, what)

    def __call__(self, call, size) -> float:
        """``call(i)`` runs the i-th all_reduce of the size (``call_buffers``)."""
        a, torch, dist = self.args, self.torch, self.dist
        what = f"all_reduce of {size} B"
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


def run(args, argv, rank, world, log_dir, fault) -> int:
    import torch
    import torch.distributed as dist
    timeout = timedelta(seconds=args.timeout)
    device = None
    if args.backend == "nccl":
        if not torch.cuda.is_available():
            raise BenchError("--backend nccl needs a CUDA GPU (use --backend gloo on CPU)")
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
        torch.cuda.set_device(device)
    dist.init_process_group(args.backend, timeout=timeout, rank=rank, world_size=world,
                            device_id=device)
    cpu_group = dist.new_group(backend="gloo", timeout=timeout) if device is not None else None
    infos = [None] * world
    dist.all_gather_object(infos, rank_info(device), group=cpu_group)
    probe = run_probe(args, rank, world, infos, cpu_group) if args.nccl_probe or args.emulate_nodes else None

    itemsize, dtype = DTYPES[args.dtype][0], getattr(torch, args.dtype)
    buf = torch.empty(max(args.size_list) // itemsize, dtype=dtype, device=device or "cpu")
    src = None if args.inplace else torch.empty_like(buf)
    dist.all_reduce(buf[:1])  # creates the communicator: NCCL has printed its version now
    timer = Timer(args, cpu_group)
    if device is not None:
        timer.sync("the first all_reduce")
    version = debug_file_version(os.path.join(log_dir, f"run.{rank}.log")) if log_dir else None
    version = version or (probe or {}).get("version")

    out = None
    if rank == 0:
        meta = build_meta(args, argv, world, infos, version)
        if probe is not None:
            meta["nccl_probe"], meta["nodes_nccl"] = probe, probe["n_nodes"]
        if args.out:
            os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
            out = JsonlWriter(args.out)
            out.write("meta", meta)
    sizes = args.size_list
    try:
        from tqdm import tqdm
        sizes = tqdm(sizes, desc="allreduce", unit="size", disable=rank != 0, file=sys.stderr)
        say = tqdm.write
    except ImportError:
        say = print
    if rank == 0:
        say(TABLE_HEADER)
    for size in sizes:
        hit = fault is not None and fault[1:] == (rank, size)
        if hit and fault[0] != "corrupt":
            sys.stderr.write(f"allreduce_bench: test fault: rank {rank} {fault[0]}s at size {size}\n")
            sys.stderr.flush()
            os._exit(3) if fault[0] == "die" else time.sleep(10**6)
        count = size // itemsize
        calls = max(args.warmup, args.iters, args.graph_calls if args.timing == "graph" else 0)
        outs = call_buffers(buf, count, args.rotate, calls)
        ins = None if src is None else call_buffers(src, count, args.rotate, calls)
        if ins is None:
            def call(i):
                dist.all_reduce(outs[i % len(outs)])
        else:
            def call(i):
                outs[i % len(outs)].copy_(ins[i % len(ins)])
                dist.all_reduce(outs[i % len(outs)])
        t = outs[0]
        fill(t if ins is None else ins[0], rank)
        time_us = timer(call, size)
        fill(t if ins is None else ins[0], rank)  # timing changed the data: check a fresh call
        call(0)
        if hit:  # corrupt (die/hang never get here)
            t[:1] += 1
        wrong = count_wrong(t, world)
        stats = [torch.zeros(2, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(stats, torch.tensor([time_us, wrong], dtype=torch.float64), group=cpu_group)
        times = [float(x[0]) for x in stats]
        rec = result_record(size, count, args.dtype, max(times), world, sum(int(x[1]) for x in stats),
                            inplace=args.inplace, algo=args.algo, proto=args.proto,
                            timing=args.timing,
                            time_us_min=min(times), time_us_mean=sum(times) / world)
        if rank == 0:
            say(format_row(rec))
            if out:
                out.write("result", rec)
    if out:
        out.close()
    dist.barrier(group=cpu_group)
    dist.destroy_process_group()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.update(rank_env(args, rank, world, os.environ))
    if os.environ.get("COLLSIM_PROBE"):
        return probe_child(args, rank, world)
    log_dir = None
    if args.backend == "nccl" and "NCCL_DEBUG" not in os.environ:
        log_dir = probe_log_dir()
        os.environ.update(NCCL_DEBUG="WARN", NCCL_DEBUG_FILE=os.path.join(log_dir, f"run.{rank}.log"))
    try:
        return run(args, argv, rank, world, log_dir, parse_fault(os.environ.get("COLLSIM_TEST_FAULT")))
    except Exception as e:  # one line, no traceback; the records written so far stay valid
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
        if isinstance(e, (RuntimeError, CollsimError)) and not isinstance(e, BenchError):
            msg = f"{type(e).__name__}: {msg}"
        sys.stderr.write(f"allreduce_bench: error: rank {rank}: {msg}\n")
        sys.stderr.flush()
        os._exit(1)  # a hung communicator must not block the exit


if __name__ == "__main__":
    sys.exit(main())
