"""NCCL's own view of the benchmark's run: the ``--nccl-probe`` child processes.

With ``--nccl-probe`` (implied by ``--emulate-nodes``) ``allreduce_bench.py`` and
``schedule_bench.py`` make a separate, logged run before timing: every rank starts one
child process, the same script (``launch_probe``)::

    COLLSIM_PROBE=ADDR:PORT NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING \\
        NCCL_DEBUG_FILE=LOG_DIR/probe.RANK.log RANK=r WORLD_SIZE=n \\
        python runners/allreduce_bench.py ARGS...    # or schedule_bench.py

whose ``main`` sees ``COLLSIM_PROBE`` and calls ``probe_child``: a fresh NCCL
communicator (rendezvous on rank 0's TCPStore at ADDR:PORT), one in-place call of the
run's collective (``--coll``; schedule_bench: all_reduce) per size of the sweep, nothing timed.
``run_probe`` waits for the child (at most 2 x --timeout + 60 s), parses its log
(``collsim.nccl.log``) and gathers every rank's view on rank 0, which stores it under
``nccl_probe`` in the meta record (``nodes_nccl``: NCCL's nNodes). The timed runs never run with
that logging (NCCL_DEBUG=WARN at most, to read the version).
"""
from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

from common import DTYPES, BenchError
from provenance import probe_log_dir

from collsim.nccl.log import parse_file

PROBE_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,GRAPH,TUNING"}


def launch_probe(args, rank: int, world: int, addr: str, port: int, log_dir: str):
    """Start this rank's probe child: the same script with NCCL INFO logging on."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHELASTIC_")}
    env.update(PROBE_ENV, NCCL_DEBUG_FILE=os.path.join(log_dir, f"probe.{rank}.log"),
               COLLSIM_PROBE=f"{addr}:{port}", RANK=str(rank), WORLD_SIZE=str(world))
    cmd = [sys.executable, os.path.abspath(sys.argv[0])] + sys.argv[1:]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def probe_child(args, rank: int, world: int) -> int:
    """The probe: one call per size with NCCL INFO logging (env set by the parent)."""
    import torch
    import torch.distributed as dist
    addr, port = os.environ["COLLSIM_PROBE"].rsplit(":", 1)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    store = dist.TCPStore(addr, int(port), world, False, timeout=timedelta(seconds=args.timeout))
    dist.init_process_group("nccl", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=args.timeout), device_id=device)
    from collectives import calls, layout
    coll = getattr(args, "coll", "all_reduce")   # schedule_bench: AllReduce
    itemsize = DTYPES[args.dtype][0]
    spans = getattr(args, "span_list", None) or [size // itemsize for size in args.size_list]
    bufs = [torch.zeros(max(spans), dtype=getattr(torch, args.dtype), device=device) for _ in range(2)]
    for size in args.size_list:
        calls(coll, layout(coll, size, itemsize, world), bufs, [0], True, rank, world)(0)
    torch.cuda.synchronize()
    dist.destroy_process_group()
    return 0


def run_probe(args, rank, world, infos, cpu_group) -> dict | None:
    """Run the probe children; rank 0 returns the parsed log (all ranks' layout merged)."""
    import torch.distributed as dist
    store = None
    if rank == 0:
        store = dist.TCPStore("0.0.0.0", 0, world, True, timeout=timedelta(seconds=args.timeout),
                              wait_for_workers=False)
    single = len({i["host"] for i in infos}) == 1
    where = [("127.0.0.1" if single else infos[0]["host"], store.port if store else 0)]
    dist.broadcast_object_list(where, src=0, group=cpu_group)
    log_dir = probe_log_dir()
    proc = launch_probe(args, rank, world, where[0][0], where[0][1], log_dir)
    try:
        output, _ = proc.communicate(timeout=2 * args.timeout + 60)
    except Exception:
        proc.kill()
        raise BenchError("the NCCL probe did not finish in time") from None
    if proc.returncode != 0:
        tail = (output.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"the NCCL probe failed (exit {proc.returncode}): {tail}")
    log = parse_file(os.path.join(log_dir, f"probe.{rank}.log"))
    mine = {"rank": rank, "comms": log.comms, "trees": log.trees, "ring_links": log.ring_links,
            "tree_links": log.tree_links, "log_dir": log_dir}
    everyone = [None] * world
    dist.all_gather_object(everyone, mine, group=cpu_group)
    if rank != 0:
        return None
    probe = log.to_dict()
    probe["per_rank"] = everyone
    if args.emulate_nodes:
        check_node_count(args.emulate_nodes, probe["n_nodes"], log_dir)
    return probe


def check_node_count(asked: int, reported: int | None, log_dir: str) -> None:
    """--emulate-nodes must show up as NCCL's own nNodes."""
    if reported != asked:
        raise BenchError(f"--emulate-nodes {asked}: NCCL reports nNodes {reported} (logs in {log_dir})")
