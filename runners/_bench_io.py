"""Shared plumbing for the strategy runners (ddp_bench.py, graph_step_bench.py).

Process-group start-up with the forced environment, a clock that times CUDA work
with events and CPU work with perf_counter, and the metadata record. The
environment, rank facts and launcher line come from allreduce_bench's
``bench_support``, AllReduce records from ``collsim.measurements.result_record``
and the JSON Lines writer is ``collsim.measurements.write_jsonl``, so every
runner writes the same vocabulary. Times are seconds; sizes bytes. torch is
imported inside functions.
"""
from __future__ import annotations

import datetime
import os
import shlex
import statistics
import sys
import time

from bench_support import (FORCED_ENV, launcher_command, nccl_env, nccl_header_version,  # also puts the repo on sys.path
                           rank_info)


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

    from collsim.nccl_vars import check_env

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

