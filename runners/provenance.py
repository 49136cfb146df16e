"""What a runner's output says about where it ran (every runner's first record): machine, GPUs,
driver, CUDA, torch and NCCL versions, every NCCL_* variable, the exact command and launcher, the
git commit; and the NCCL probe's log folder and the runtime version read back from it.

Runs on every rank; torch is imported inside functions only.
"""
from __future__ import annotations

import datetime
import os
import shlex
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from collectives import out_of_place_method
from common import FORCED_ENV, REPO

from collsim.errors import CollsimError
from collsim.nccl.log import parse_file


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
        "harness": "collsim", "collective": getattr(args, "coll", "all_reduce"), "backend": args.backend,
        "timing": args.timing, "graph_calls": args.graph_calls if args.timing == "graph" else None,
        "dtype": args.dtype, "inplace": args.inplace, "rotate": args.rotate,
        "places": ["in" if p else "out" for p in getattr(args, "places", [args.inplace])],
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
        "out_of_place_method": out_of_place_method(args),
    }


def debug_file_version(path) -> str | None:
    """NCCL's runtime version from a debug file (its "NCCL version x.y.z" line)."""
    try:
        return parse_file(path).version
    except (OSError, CollsimError):
        return None


def probe_log_dir() -> str:
    return tempfile.mkdtemp(prefix="collsim-nccl-")


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

