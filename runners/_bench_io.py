"""Shared plumbing for the strategy runners (ddp_bench.py, graph_step_bench.py).

Environment forcing, process-group start-up, a clock that times CUDA work with
events and CPU work with perf_counter, the metadata record and the JSON Lines
writer. Times are seconds; sizes bytes. torch is imported inside functions so
that importing this module stays cheap.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, collsim may not be installed
    sys.path.insert(0, str(ROOT))

# NVLink SHARP / multicast stay off on the shared H200 machine.
FORCED_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def force_env() -> None:
    os.environ.update(FORCED_ENV)


def init(backend: str, timeout_s: float = 120.0):
    """Start the process group from torchrun's RANK/WORLD_SIZE/LOCAL_RANK; returns (rank, world, device)."""
    import torch
    import torch.distributed as dist

    force_env()
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
    """Seconds of each of ``iters`` calls of fn() after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn()
    clock.sync()
    marks = [clock.mark()]
    for _ in range(iters):
        fn()
        marks.append(clock.mark())
    clock.sync()
    return [clock.seconds(a, b) for a, b in zip(marks, marks[1:])]


def median(xs) -> float:
    return float(statistics.median(xs))


def meta_record(runner: str, backend: str, world: int, device, args) -> dict:
    """The first record of every output file: what ran where, with which versions and variables."""
    import torch

    from collsim.nccl_vars import check_env

    nccl = None
    if torch.cuda.is_available() and hasattr(torch.cuda, "nccl"):
        try:
            nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:  # noqa: BLE001 - an optional fact, recorded as null
            nccl = None
    env = {k: v for k, v in sorted(os.environ.items())
           if k.startswith(("NCCL_", "TORCH_NCCL", "TORCH_SYMM", "NVSHMEM_", "OMP_NUM_THREADS"))}
    return {
        "kind": "meta", "runner": runner, "argv": sys.argv, "args": vars(args),
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(), "python": platform.python_version(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "nccl_header": nccl, "backend": backend, "world_size": world,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch_threads": torch.get_num_threads(), "env": env, "env_problems": check_env(env),
    }


def write_jsonl(path: str, records: list[dict]) -> None:
    """Write records as JSON Lines (one object a line), creating the folder."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
