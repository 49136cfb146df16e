"""Eager vs CUDA-graph AllReduce across sizes, and a small compute + AllReduce + update step.

NCCL only (CUDA graphs capture NCCL kernels); without CUDA it prints why and exits 0.
Measures, per rank (figures are the max over ranks of each rank's median over --reps):
1. dist.all_reduce per call at each size: ``calls`` eager calls back to back, and one CUDA
   graph of ``calls`` captured calls replayed (as nccl-tests -G): "result" records with
   timing "eager" / "graph" (collsim.measure vocabulary, wrong = elements != world).
2. The step's operations alone, per call, eager loop and graph: "op" records (mm, the
   step's all_reduce, the update), so collsim.strategies.launch_overhead can be fed host and device times.
3. The step itself: ``layers`` matmuls (batch x width by width x width), an all_reduce of
   the gradient buffer (width x width float32), an SGD-style update p -= lr * g; eager and
   as one graph replay: "step" records, seconds per step.
Times in seconds (time_us in result records); sizes in bytes.

Command lines (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are forced by the script):
  # 2 GPUs on one node, well under a minute:
  torchrun --standalone --nproc-per-node 2 runners/graph_step_bench.py --out data/graph/h200x2.jsonl
  # 2 nodes x 8 GPUs:
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
      runners/graph_step_bench.py --out graph_2x8.jsonl
"""
from __future__ import annotations

import argparse
import os
import sys

from common import Clock, init, summary
from provenance import meta_record

from collsim.measure import result_record, write_jsonl
from collsim.units import parse_size


def per_call(fn, calls, reps, clock, graph):
    """(median, min) seconds per call of fn: ``calls`` calls per repetition, eager or one graph."""
    import torch
    import torch.distributed as dist

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream, as graph capture requires
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    if graph:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        run = g.replay
    else:
        def run():
            for _ in range(calls):
                fn()
    run()
    clock.sync()
    dist.barrier()
    times = []
    for _ in range(reps):
        a = clock.mark()
        run()
        b = clock.mark()
        times.append(clock.seconds(a, b) / calls)
    return summary(times)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="8,64,512,4K,32K,256K,1M,4M,16M,64M,256M",
                   help="AllReduce sizes, bytes (K/M/G suffixes)")
    p.add_argument("--calls", type=int, default=20, help="calls per repetition (= per graph)")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions")
    p.add_argument("--layers", type=int, default=4, help="matmuls in the step")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--out", required=True, help="JSON Lines output (written by rank 0)")
    args = p.parse_args(argv)
    if not (1 <= args.batch <= args.width) or args.layers < 1 or args.calls < 1 or args.reps < 1:
        p.error("need 1 <= --batch <= --width, --layers >= 1, --calls >= 1 and --reps >= 1")

    import torch

    if not torch.cuda.is_available():
        if os.environ.get("RANK", "0") == "0":
            print("graph_step_bench: skipped: needs CUDA and NCCL (no CUDA device here); nothing written")
        return 0
    import torch.distributed as dist

    rank, world, device = init("nccl")
    clock = Clock(device)
    records = [meta_record("graph_step_bench", "nccl", world, device, args)]
    for size in (parse_size(s) for s in args.sizes.split(",")):
        t = torch.ones(max(1, size // 4), device=device)
        for timing in ("eager", "graph"):
            med, low = per_call(lambda: dist.all_reduce(t), args.calls, args.reps, clock, timing == "graph")
            t.fill_(1)
            dist.all_reduce(t)
            wrong = int((t != world).sum().item())
            records.append(result_record(t.numel() * 4, t.numel(), "float32", med * 1e6, world, wrong,
                                         timing=timing, inplace=True, time_min_us=low * 1e6,
                                         calls_per_graph=args.calls if timing == "graph" else None))

    torch.manual_seed(0)
    weights = [torch.randn(args.width, args.width, device=device) / args.width ** 0.5 for _ in range(args.layers)]
    x = torch.randn(args.batch, args.width, device=device)
    hs = [torch.empty(args.batch, args.width, device=device) for _ in range(args.layers)]
    grad = torch.zeros(args.width, args.width, device=device)
    param = torch.zeros(args.width, args.width, device=device)

    def mm():
        torch.mm(x, weights[0], out=hs[0])

    def allreduce():
        dist.all_reduce(grad)

    def update():
        param.add_(grad, alpha=-1e-3)

    def step():
        h = x
        for w, out in zip(weights, hs):
            h = torch.mm(h, w, out=out)
        grad[: args.batch].copy_(h)  # the "gradient": the last activations into the flat buffer
        allreduce()
        update()

    ops = {"mm": mm, "allreduce": allreduce, "update": update, "copy": lambda: grad[: args.batch].copy_(hs[-1])}
    for name, fn in ops.items():
        for timing in ("eager", "graph"):
            med, low = per_call(fn, args.calls, args.reps, clock, timing == "graph")
            records.append({"type": "op", "op": name, "timing": timing, "per_call_s": med, "per_call_min_s": low})
    for timing in ("eager", "graph"):
        med, low = per_call(step, args.calls, args.reps, clock, timing == "graph")
        records.append({"type": "step", "timing": timing, "step_s": med, "step_min_s": low,
                        "layers": args.layers, "width": args.width, "batch": args.batch,
                        "grad_bytes": grad.numel() * 4, "ops": ["mm"] * args.layers + ["copy", "allreduce", "update"]})
    if rank == 0:
        write_jsonl(args.out, records)
        print(f"graph_step_bench: wrote {len(records)} records to {args.out}")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
