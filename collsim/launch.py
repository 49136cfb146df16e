"""Who am I? What torchrun tells each process, and what the lecture's PyTorch example reads instead.

torchrun starts ``nproc_per_node`` processes on each of ``nnodes`` nodes and gives each, in its
environment: RANK (0 .. WORLD_SIZE-1, unique over all nodes), LOCAL_RANK (0 .. nproc_per_node-1,
its GPU on its node), WORLD_SIZE (all processes), LOCAL_WORLD_SIZE, GROUP_RANK (its node), and
MASTER_ADDR / MASTER_PORT for the rendezvous. It passes no ``--local_rank`` argument (the old
``torch.distributed.launch`` did, unless ``--use-env``).

The lecture's example takes its rank from ``--local_rank`` and its world size from
``torch.cuda.device_count()``: the GPUs of one machine. ``lecture_identity`` says what each process
would get that way; ``torchrun_identity`` what it should use. Pure Python: no torch needed.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys

from collsim.errors import CollsimError, require_int
from collsim.inputs import read_text


def torchrun_env(nnodes: int, nproc_per_node: int) -> list[dict]:
    """The environment torchrun gives each process of ``nnodes`` x ``nproc_per_node``, in RANK
    order."""
    n = require_int("nnodes", nnodes, 1)
    g = require_int("nproc_per_node", nproc_per_node, 1)
    return [{"RANK": str(node * g + local), "LOCAL_RANK": str(local), "WORLD_SIZE": str(n * g),
             "LOCAL_WORLD_SIZE": str(g), "GROUP_RANK": str(node)} for node in range(n)
            for local in range(g)]


def torchrun_identity(env: dict) -> dict:
    """rank, world_size and the local GPU index, read as a torchrun process should."""
    return {"rank": int(env["RANK"]), "world_size": int(env["WORLD_SIZE"]),
            "device": int(env["LOCAL_RANK"])}


def lecture_identity(env: dict, gpus_per_node: int, local_rank_arg: int | None = None) -> dict:
    """rank and world_size as the lecture's example computes them: ``--local_rank`` (None: torchrun
    passes no such argument) and ``torch.cuda.device_count()`` (``gpus_per_node``)."""
    return {"rank": local_rank_arg, "world_size": gpus_per_node, "device": local_rank_arg}


def identity_table(nnodes: int, nproc_per_node: int) -> list[dict]:
    """Per process: its node, the torchrun identity, and the lecture's identity with --local_rank
    taken from LOCAL_RANK (the most charitable reading: as if the launcher passed it)."""
    rows = []
    for env in torchrun_env(nnodes, nproc_per_node):
        rows.append({"node": int(env["GROUP_RANK"]), "torchrun": torchrun_identity(env),
                     "lecture": lecture_identity(env, nproc_per_node, int(env["LOCAL_RANK"]))})
    return rows


def problems(rows: list[dict]) -> list[str]:
    """What breaks with the lecture's identities: ranks claimed twice, a world size that is not the
    number of processes, an expected sum that is not the one all_reduce computes."""
    out = []
    ranks = [r["lecture"]["rank"] for r in rows]
    dup = sorted({x for x in ranks if ranks.count(x) > 1})
    if dup:
        out.append(f"ranks {dup} are claimed by {len(rows) // len(set(ranks))} processes each: the "
                   "rendezvous cannot form one group (it hangs or fails)")
    worlds = {r["lecture"]["world_size"] for r in rows}
    if worlds != {len(rows)}:
        out.append(f"world size {sorted(worlds)} != {len(rows)} processes")
        w = len(rows)
        expected = [wl * (wl + 1) // 2 for wl in sorted(worlds)]
        out.append(f"its assert expects {expected} where an AllReduce over all {w} processes gives "
                   f"{w * (w + 1) // 2}")
    return out


def function_source(path, name: str) -> str:
    """The source text of top-level function ``name`` in the Python file ``path`` (read, not
    imported: showing a torch script's function needs no torch)."""

    text = read_text(path, "Python file")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(text, node)
    raise CollsimError(f"{path}: no function {name!r}")


def run_torchrun(script, args, nproc: int = 2, timeout: float = 120.0, cwd=None):
    """Run ``torchrun --standalone --nproc-per-node NPROC script args...`` with this Python (one
    compute thread per process); returns the finished process. A failure raises CollsimError with
    the end of its output."""

    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           f"--nproc-per-node={int(nproc)}", str(script), *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CollsimError(f"torchrun {script} did not finish in {timeout:g} s") from None
    if proc.returncode != 0:
        raise CollsimError(f"torchrun {script} failed ({proc.returncode}): "
                           f"{(proc.stderr or proc.stdout)[-1500:]}")
    return proc
