"""The collectives of nccl-tests (AllReduce by default) in its vocabulary, launched by torchrun.

``--coll NAME`` picks the collective by nccl-tests' name: all_reduce, all_gather, reduce_scatter,
broadcast and reduce (root 0), alltoall, sendrecv (the ring shift), each as its ``NAME_perf``
measures it: the same size and count columns (for all_gather, reduce_scatter and alltoall the size
is the whole buffer of ranks x count elements), redop and root, time, algbw and busbw (nccl-tests'
factor per collective, ``collsim.core.collective``), #wrong; ``--place both`` out of place then in
place per size, as nccl-tests; buffers, calls and checks per collective in ``collectives.py``::

    torchrun --standalone --nproc-per-node=2 runners/allreduce_bench.py --coll all_gather \
        -b 8 -e 1G --place both --timing graph --out out/ag.jsonl

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
data/h200x2/run6/start/; a start event recorded before the first launch would add
10-25 us). Graph timing sets
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
``--out-of-place`` (``--place out``): torch has no out-of-place AllReduce, Broadcast or Reduce,
so each call is a device copy into the output then the in-place call (the copy is timed; the
others have torch's own out-of-place calls: ``collectives.py``).
``--rotate``: call i uses slice i mod (max size // size) of the buffer, as nccl-tests
does ("to avoid cache effects"), so the calls cycle through up to max-size bytes instead of
reusing one slice that stays in L2. On 2 x H200 this is worth 10-20% at 2-16 MiB for Ring LL
(data/h200x2/README.md "run5/"); compare with nccl-tests with it, and with the same -e.

Checking (``collectives.py``). Rank r fills element i of its input with (i + r) % K (K a prime
that keeps every result exact); after timing the output is zeroed, the input filled again, the
collective called once and every element it defines compared with the exact result; ``wrong``
is the count of differing elements summed over ranks (None, N/A, for in-place alltoall and
sendrecv, which nccl-tests does not check either).

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
(one line ``allreduce_bench: error: rank R: ...``), 2 bad arguments. A rank that dies keeps every
completed size in ``--out``, a full disk leaves no torn line, a hung or stopped rank ends the
command within ``--timeout`` plus a few seconds (``runners/harness.py``).
Test hook: ``COLLSIM_TEST_FAULT=die@rank1:size=4096`` (or ``hang@``, ``stop@``: SIGSTOP itself,
``term@``: SIGTERM itself, ``corrupt@``).
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time

import collectives
from common import DTYPES, BenchError, parse_args
from harness import Session, main as runner_main

FAULTS = {"die": lambda: os._exit(3), "hang": lambda: time.sleep(10**6),
          "stop": lambda: os.kill(os.getpid(), signal.SIGSTOP), "term": lambda: os.kill(os.getpid(), signal.SIGTERM)}


def parse_fault(spec: str | None):
    """``die@rank1:size=4096`` / ``hang@...`` / ``stop@...`` / ``term@...`` (``FAULTS``) /
    ``corrupt@...`` (one wrong element before the check) -> (kind, rank, size) or None."""
    if not spec:
        return None
    m = re.fullmatch(r"(die|hang|stop|term|corrupt)@rank(\d+):size=(\d+)", spec)
    if not m:
        raise BenchError(f"bad COLLSIM_TEST_FAULT {spec!r} (want die@rankR:size=BYTES)")
    return m.group(1), int(m.group(2)), int(m.group(3))


def run(args, argv, rank, world, log_dir) -> int:
    import torch
    fault = parse_fault(os.environ.get("COLLSIM_TEST_FAULT"))
    session = Session(args, rank, world, log_dir)
    itemsize, dtype, coll = DTYPES[args.dtype][0], getattr(torch, args.dtype), args.coll
    device = session.device or "cpu"
    bufs = [torch.empty(max(args.span_list), dtype=dtype, device=device) for _ in range(2)]
    redop, root = collectives.columns(coll)
    for size in session.begin(argv, args.size_list, coll):
        hit = fault is not None and fault[1:] == (rank, size)
        if hit and fault[0] != "corrupt":
            sys.stderr.write(f"allreduce_bench: test fault: rank {rank} {fault[0]}s at size {size}\n")
            sys.stderr.flush()
            FAULTS[fault[0]]()
        lay = collectives.layout(coll, size, itemsize, world)
        n_calls = max(args.warmup, args.iters, args.graph_calls if args.timing == "graph" else 0)
        starts = collectives.slots(bufs[1], lay.span, args.rotate, n_calls)
        for inplace in args.places:
            call = collectives.calls(coll, lay, bufs, starts, inplace, rank, world)
            collectives.fill(coll, call.inp, rank, world, args.dtype)
            time_us = session.timer(call, f"{coll} of {size} B")
            call.out.zero_()  # timing changed the data: check a fresh call (nccl-tests zeroes too)
            collectives.fill(coll, call.inp, rank, world, args.dtype)
            call(0)
            if hit:  # corrupt (die/hang never get here)
                call.out[:1] += 1
            wrong = collectives.count_wrong(coll, call.out, rank, world, lay.count, args.dtype, inplace)
            session.result(lay.size, lay.count, time_us, wrong, redop=redop, root=root, inplace=inplace,
                           algo=args.algo, proto=args.proto)
    session.close()
    return 0


def main(argv=None) -> int:
    return runner_main("allreduce_bench", parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
