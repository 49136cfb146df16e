"""DDP iteration time against bucket_cap_mb, with and without bf16 gradient compression.

Measures, on every rank at once (each figure is the max over ranks of each rank's median,
and under *_min_s / time_min_us of each rank's minimum; rank 0 writes):
1. Without DDP: forward, each layer's backward (one block at a time, last first), the
   optimizer step, and the casts a bf16 hook does: the inputs collsim.strategies.overlap needs.
2. With DDP, for each bucket_cap_mb and hook: seconds per iteration (forward, backward
   with DDP's bucketed AllReduce overlapped, optimizer step) and DDP's own bucket sizes.
3. dist.all_reduce alone at every bucket size seen (float32, and bfloat16 for the hook),
   so the model can be fed measured communication times.

Output: JSON Lines, first a "meta" record, then records with "type" = "layer", "phase",
"cast", "ddp" and "result" (one AllReduce size, collsim.measure vocabulary: size, count,
dtype, time_us, algbw_GBps, busbw_GBps, wrong, ranks). Times in seconds unless the key says
_us; sizes in bytes. collsim.strategies.ddp.load reads it back and compares it with collsim.strategies.overlap.

Command lines (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are forced by the script):
  # 2 GPUs on one node (NCCL), about a minute:
  torchrun --standalone --nproc-per-node 2 runners/ddp_bench.py --out data/ddp/h200x2.jsonl
  # CPU, 2 processes over gloo, tiny model (what tests/runners/test_ddp_bench_gloo.py runs):
  torchrun --standalone --nproc-per-node 2 runners/ddp_bench.py --backend gloo --layers 4 \\
      --width 256 --batch 32 --caps 0.25,8 --hooks none,fp16 --iters 10 --out /tmp/ddp_gloo.jsonl
  # 2 nodes x 8 GPUs:
  torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 \\
      runners/ddp_bench.py --out ddp_2x8.jsonl
  # SLURM: srun --nodes 2 --ntasks-per-node 1 torchrun --nnodes 2 --nproc-per-node 8 \\
  #   --rdzv-backend c10d --rdzv-endpoint $(hostname):29500 runners/ddp_bench.py --out ddp.jsonl
"""
from __future__ import annotations

import argparse
import copy
import gc

from common import Clock, init, summary, time_each
from provenance import meta_record

from collsim.measure import result_record, write_jsonl


def build_model(layers: int, width: int, device):
    import torch.nn as nn

    blocks = [nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(layers)]
    return nn.Sequential(*blocks).to(device)


def measure_layers(model, x, clock, iters, warmup):
    """(median, min) seconds of each block's backward (block order), of the forward and of the
    optimizer step (with zero_grad), without DDP."""
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    inputs, outputs = [], []

    def forward():
        inputs.clear(), outputs.clear()
        h = x
        for i, block in enumerate(model):  # the first block's input needs no gradient, as in DDP
            h = h.detach().requires_grad_(i > 0)
            inputs.append(h)
            h = block(h)
            outputs.append(h)
        return h

    per_block = [[] for _ in model]
    fwd, step = [], []
    for it in range(warmup + iters):
        clock.sync()
        m0 = clock.mark()
        out = forward()
        loss = out.float().pow(2).mean()
        m1 = clock.mark()
        g = torch.autograd.grad(loss, out)[0]
        marks = []
        for i in range(len(model) - 1, -1, -1):
            outputs[i].backward(g)
            g = inputs[i].grad
            marks.append(clock.mark())
        m2 = clock.mark()
        opt.step()
        opt.zero_grad(set_to_none=False)
        m3 = clock.mark()
        if it >= warmup:
            fwd.append(clock.seconds(m0, m1))
            step.append(clock.seconds(m2, m3))
            starts = [m1] + marks[:-1]
            for k, (a, b) in enumerate(zip(starts, marks)):
                per_block[len(model) - 1 - k].append(clock.seconds(a, b))
    return [summary(t) for t in per_block], summary(fwd), summary(step)


def measure_casts(nbytes, dtype, device, clock, iters, warmup):
    """Seconds to cast nbytes of float32 gradients to dtype and back (a compression hook's casts)."""
    import torch

    buf = torch.randn(nbytes // 4, device=device)
    low = buf.to(dtype)
    down = summary(time_each(lambda: buf.to(dtype), clock, iters, warmup))
    up = summary(time_each(lambda: buf.copy_(low), clock, iters, warmup))
    return down, up


def run_ddp(model, x, cap_mb, hook, device, clock, iters, warmup, bucket_view):
    """Median seconds per DDP iteration and DDP's rebuilt bucket sizes (bytes, launch order)."""
    import torch
    from torch.nn.parallel import DistributedDataParallel as DDP

    ids = [device.index] if device.type == "cuda" else None
    ddp = DDP(copy.deepcopy(model), device_ids=ids, bucket_cap_mb=cap_mb, gradient_as_bucket_view=bucket_view)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

    def step():
        loss = ddp(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=not bucket_view)

    times = time_each(step, clock, iters, max(warmup, 2))  # buckets are rebuilt after iteration 1
    sizes = ddp._get_ddp_logging_data().get("rebuilt_bucket_sizes", "")
    return times, [int(s) for s in str(sizes).split(",") if s.strip()]


def measure_allreduce(nbytes, dtype, device, clock, iters, warmup, world):
    """One allreduce record (nccl-tests vocabulary) for a message of nbytes of dtype."""
    import torch
    import torch.distributed as dist

    itemsize = torch.tensor([], dtype=dtype).element_size()
    count = max(1, nbytes // itemsize)
    t = torch.ones(count, dtype=dtype, device=device)
    sec, sec_min = summary(time_each(lambda: dist.all_reduce(t), clock, iters, warmup))
    t.fill_(1)
    dist.all_reduce(t)
    wrong = int((t.float() != world).sum().item())
    return result_record(count * itemsize, count, str(dtype).split(".")[-1], sec * 1e6, world, wrong,
                         timing="eager", inplace=True, time_min_us=sec_min * 1e6)


def parse_caps(text: str):
    caps = []
    for tok in text.split(","):
        tok = tok.strip()
        caps.append(None if tok == "default" else float(tok))
    return caps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="auto", choices=["auto", "nccl", "gloo"])
    p.add_argument("--layers", type=int, default=16, help="Linear+ReLU blocks")
    p.add_argument("--width", type=int, default=4096, help="features per Linear")
    p.add_argument("--batch", type=int, default=256, help="rows per rank")
    p.add_argument("--caps", default="default,1,5,25,100,2048",
                   help="bucket_cap_mb values, comma separated; 'default' leaves DDP's default (25, 1 MiB first)")
    p.add_argument("--hooks", default="none,bf16",
                   help="comma list of none, bf16, fp16 (default_hooks.<name>_compress_hook); DDP allows bf16 "
                        "with NCCL only, so use fp16 on gloo")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--ar-iters", type=int, default=50, help="timed calls per AllReduce-only size")
    p.add_argument("--no-bucket-view", action="store_true", help="gradient_as_bucket_view=False")
    p.add_argument("--out", required=True, help="JSON Lines output (written by rank 0)")
    args = p.parse_args(argv)
    if min(args.layers, args.width, args.batch, args.iters, args.ar_iters) < 1 or args.warmup < 0:
        p.error("--layers, --width, --batch, --iters and --ar-iters must be >= 1, --warmup >= 0")
    try:
        caps = parse_caps(args.caps)
    except ValueError:
        p.error(f"--caps {args.caps!r}: expected numbers (MB) or 'default', comma separated")
    if any(c is not None and c <= 0 for c in caps):
        p.error("--caps values must be > 0")

    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    rank, world, device = init(args.backend)
    backend = dist.get_backend()
    torch.manual_seed(0)
    clock = Clock(device)
    model = build_model(args.layers, args.width, device)
    x = torch.randn(args.batch, args.width, device=device)
    meta = meta_record("ddp_bench", backend, world, device, args)
    hooks = {}  # name -> (hook, wire dtype)
    for name in args.hooks.split(","):
        hook = getattr(default_hooks, f"{name}_compress_hook", None)
        if name == "none":
            hooks[name] = (None, torch.float32)
        elif hook is None:
            meta.setdefault("skipped_hooks", {})[name] = "not in this torch's default_hooks"
        elif name == "bf16" and backend != "nccl":  # DDP refuses it: "requires CUDA 11+ and NCCL 2.10+"
            meta.setdefault("skipped_hooks", {})[name] = "DDP allows bf16_compress_hook with NCCL only"
        else:
            hooks[name] = (hook, getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[name]))
    records = [meta]

    backward, fwd, opt_s = measure_layers(model, x, clock, args.iters, args.warmup)
    for i, (block, t) in enumerate(zip(model, backward)):
        records.append({"type": "layer", "layer": i, "name": f"block{i}", "backward_s": t[0],
                        "backward_min_s": t[1],
                        "param_bytes": [q.numel() * q.element_size() for q in block.parameters()]})
    grad_bytes = sum(q.numel() * q.element_size() for q in model.parameters())
    records.append({"type": "phase", "forward_s": fwd[0], "forward_min_s": fwd[1], "optimizer_s": opt_s[0],
                    "optimizer_min_s": opt_s[1], "grad_bytes": grad_bytes})
    for name, (_, dtype) in hooks.items():
        if dtype != torch.float32:
            down, up = measure_casts(grad_bytes, dtype, device, clock, args.iters, args.warmup)
            records.append({"type": "cast", "hook": name, "nbytes": grad_bytes, "compress_s": down[0],
                            "compress_min_s": down[1], "decompress_s": up[0], "decompress_min_s": up[1]})

    sizes = {grad_bytes}
    for cap in caps:
        for name, (hook, _) in hooks.items():
            times, buckets = run_ddp(model, x, cap, hook, device, clock, args.iters, args.warmup,
                                     not args.no_bucket_view)
            gc.collect()  # free this configuration's copy of the model before the next one
            if device.type == "cuda":
                torch.cuda.empty_cache()
            sizes.update(buckets)
            med, low = summary(times)
            records.append({"type": "ddp", "bucket_cap_mb": cap, "hook": name,
                            "iteration_s": med, "iteration_min_s": low,
                            "iters": len(times), "bucket_sizes": buckets,
                            "gradient_as_bucket_view": not args.no_bucket_view})
    for nbytes in sorted(sizes):
        for dtype in sorted({d for _, d in hooks.values()} | {torch.float32}, key=str):
            records.append(measure_allreduce(nbytes * dtype.itemsize // 4, dtype, device, clock, args.ar_iters,
                                             args.warmup, world))
    if rank == 0:
        write_jsonl(args.out, records)
        print(f"ddp_bench: wrote {len(records)} records to {args.out}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
