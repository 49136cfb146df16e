"""First steps with torch.distributed: the calls of the lecture's "using NCCL" part, on any backend.

A laptop (gloo, CPU), two processes; each rank writes what it saw to OUT/<demo>_rank<R>.json::

    torchrun --standalone --nproc-per-node 2 runners/first_steps.py basics --out out/first
    torchrun --standalone --nproc-per-node 2 runners/first_steps.py ddp-profile --out out/first

GPUs (NCCL; NCCL_DEBUG=INFO prints what NCCL set up, notebook 06 reads such a log), one node or
several::

    NCCL_DEBUG=INFO torchrun --standalone --nproc-per-node 8 \\
        runners/first_steps.py basics --backend nccl --out out/first
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint node0:29500 --rdzv-id f1 \\
        runners/first_steps.py basics --backend nccl --out out/first

Demos (each a function below, shown in notebook 08):

* ``basics``: who am I (RANK, LOCAL_RANK, WORLD_SIZE from torchrun's environment), a send/recv
  between ranks 0 and 1, the lecture's rank + 1 AllReduce done right (its assert holds on any
  number of nodes), then broadcast, reduce, all_gather and reduce_scatter.
* ``ddp-profile``: a small DDP model (bucket_cap_mb 1: several buckets) traced by torch.profiler;
  each rank writes OUT/trace<R>.json (Chrome trace; ``collsim.strategies.trace`` reads it).

Exit code 0; any failure raises (torchrun reports it).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist


def who_am_i() -> dict:
    """torchrun gives every process its identity in the environment (not as --local_rank)."""
    rank = int(os.environ["RANK"])               # unique over all nodes: 0 .. WORLD_SIZE-1
    local_rank = int(os.environ["LOCAL_RANK"])   # which GPU of this node: 0 .. LOCAL_WORLD_SIZE-1
    world_size = int(os.environ["WORLD_SIZE"])   # all processes of all nodes
    return {"rank": rank, "local_rank": local_rank, "world_size": world_size}


def device_for(backend: str, local_rank: int) -> torch.device:
    """NCCL works on the GPU of this process (LOCAL_RANK); gloo on the CPU."""
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def send_recv(rank: int, device) -> list:
    """Point to point: rank 0 sends a tensor, rank 1 receives it (both block until done)."""
    t = torch.zeros(4, device=device)
    if rank == 0:
        t += torch.arange(4.0, device=device)
        dist.send(t, dst=1)
    elif rank == 1:
        dist.recv(t, src=0)
    return t.tolist()


def rank_plus_one(rank: int, world_size: int, device) -> dict:
    """The lecture's example done right: every rank contributes rank + 1, the sum is W(W+1)/2."""
    t = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)      # in place: every rank ends with the sum
    expected = world_size * (world_size + 1) / 2
    assert t.item() == expected, (t.item(), expected)
    return {"sum": t.item(), "expected": expected}


def other_collectives(rank: int, world_size: int, device) -> dict:
    """The other collectives, each on a small tensor whose values say where they came from."""
    out = {}
    b = torch.full((2,), 7.0, device=device) if rank == 0 else torch.zeros(2, device=device)
    dist.broadcast(b, src=0)                     # rank 0's tensor everywhere
    out["broadcast"] = b.tolist()
    r = torch.tensor([float(rank + 1)], device=device)
    dist.reduce(r, dst=0)                        # the sum, on rank 0 only (others: undefined)
    out["reduce"] = r.tolist() if rank == 0 else None
    mine = torch.tensor([float(rank), float(rank)], device=device)
    gathered = [torch.zeros(2, device=device) for _ in range(world_size)]
    dist.all_gather(gathered, mine)              # everybody's tensor, everywhere
    out["all_gather"] = [g.tolist() for g in gathered]
    chunks = [torch.full((2,), float(rank * 10 + c), device=device) for c in range(world_size)]
    part = torch.zeros(2, device=device)
    dist.reduce_scatter(part, chunks)            # chunk c summed over ranks, to rank c
    out["reduce_scatter"] = part.tolist()
    return out


def basics(backend: str) -> dict:
    me = who_am_i()
    dist.init_process_group(backend)             # reads MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    device = device_for(backend, me["local_rank"])
    result = {**me, "backend": dist.get_backend(), "send_recv": send_recv(me["rank"], device),
              "rank_plus_one": rank_plus_one(me["rank"], me["world_size"], device),
              **other_collectives(me["rank"], me["world_size"], device)}
    dist.destroy_process_group()                 # release the communicator before exiting
    return result


def ddp_profile(backend: str, out: Path) -> dict:
    """DDP on 6 small layers with 1 MiB buckets; two iterations traced by torch.profiler."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import ProfilerActivity, profile

    me = who_am_i()
    dist.init_process_group(backend)
    device = device_for(backend, me["local_rank"])
    torch.manual_seed(0)
    layers = [torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU()) for _ in range(6)]
    model = DDP(torch.nn.Sequential(*layers).to(device), bucket_cap_mb=1)
    x = torch.randn(64, 512, device=device)
    for _ in range(2):                           # warm-up: DDP rebuilds its buckets after the first step
        model(x).sum().backward()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if backend == "nccl" else [])
    with profile(activities=activities) as prof:
        for _ in range(2):
            model(x).sum().backward()
    trace = out / f"trace{me['rank']}.json"
    prof.export_chrome_trace(str(trace))
    dist.destroy_process_group()
    return {**me, "trace": trace.name}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("demo", choices=("basics", "ddp-profile"))
    p.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    p.add_argument("--out", required=True, help="folder for <demo>_rank<R>.json (and trace<R>.json)")
    args = p.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = basics(args.backend) if args.demo == "basics" else ddp_profile(args.backend, out)
    (out / f"{args.demo}_rank{result['rank']}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
