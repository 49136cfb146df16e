"""Read a ``runners/ddp_bench.py`` file and set its measured DDP times beside
collsim.strategies.overlap's.

``load(path)`` returns a ``DdpRun``: the layers with their measured backward
times and gradient sizes, forward and optimizer-step times, the compression
casts, AllReduce times per wire dtype and the measured DDP iterations.
``predict(run)`` feeds those measurements (and nothing else) to
``collsim.strategies.overlap.simulate`` for every measured (bucket_cap_mb, hook) and
returns one row per configuration: measured and predicted seconds per
iteration, relative error, the no-overlap and one-stream baselines, and whether
collsim's buckets equal the ones DDP reported. Times in seconds, sizes in bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from collsim.errors import CollsimError
from collsim.measure import read_records
from collsim.strategies.overlap import BF16, FP16, Layer, simulate, table_cost

HOOKS = {"bf16": BF16, "fp16": FP16}
WIRE_DTYPE = {None: "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass
class DdpRun:
    meta: dict
    layers: list[Layer]
    forward_s: float
    optimizer_s: float
    casts: dict = field(default_factory=dict)       # hook -> seconds per uncompressed byte per cast
    allreduce: dict = field(default_factory=dict)   # dtype -> ([sizes], [seconds])
    ddp: list = field(default_factory=list)         # the "ddp" records

    def cost(self, dtype: str):
        if dtype not in self.allreduce:
            raise CollsimError(f"no {dtype} AllReduce measurements in this run")
        return table_cost(*self.allreduce[dtype])


def load(path, stat: str = "median") -> DdpRun:
    """Read a ddp_bench JSON Lines file, taking each time's "median" or "min" over calls.

    A malformed or incomplete file is one CollsimError.
    """
    if stat not in ("median", "min"):
        raise CollsimError(f"stat must be 'median' or 'min', got {stat!r}")
    sfx = "_min" if stat == "min" else ""
    by = {}
    for r in read_records(path):
        by.setdefault(r.get("type"), []).append(r)
    for needed in ("meta", "layer", "phase", "ddp", "result"):
        if needed not in by:
            raise CollsimError(f"{path}: no {needed!r} record: not a complete ddp_bench output")
    layers = [Layer(r["name"], r[f"backward{sfx}_s"], tuple(r["param_bytes"]))
              for r in sorted(by["layer"], key=lambda r: r["layer"])]
    phase = by["phase"][0]
    ddp = [dict(r, iteration_s=r[f"iteration{sfx}_s"]) for r in by["ddp"]]
    run = DdpRun(by["meta"][0], layers, phase[f"forward{sfx}_s"],
                 phase[f"optimizer{sfx}_s"], ddp=ddp)
    for c in by.get("cast", []):
        run.casts[c["hook"]] = (c[f"compress{sfx}_s"] + c[f"decompress{sfx}_s"]) / 2 / c["nbytes"]
    for r in sorted(by["result"], key=lambda r: r["size"]):
        sizes, times = run.allreduce.setdefault(r["dtype"], ([], []))
        sizes.append(r["size"])
        times.append(r[f"time{sfx}_us"] * 1e-6)
    return run


def predict(run: DdpRun, cost=None) -> list[dict]:
    """One row per measured DDP configuration: measured vs collsim.strategies.overlap's prediction.

    ``cost`` (bytes -> seconds, for every wire dtype) replaces the run's measured AllReduce
    times, e.g. a closed form or ``collsim.fitted.model``; compute times stay the measured ones.
    """
    rows = []
    for rec in run.ddp:
        name = None if rec["hook"] == "none" else rec["hook"]
        if name is not None and name not in HOOKS:
            raise CollsimError(f"unknown hook {name!r} in ddp record")
        hook = None if name is None else HOOKS[name].with_cast(run.casts.get(name, 0.0))
        r = simulate(run.layers, cost or run.cost(WIRE_DTYPE[name]),
                     rec["bucket_cap_mb"], hook=hook, forward_s=run.forward_s,
                     optimizer_s=run.optimizer_s)
        measured = rec["iteration_s"]
        rows.append({
            "bucket_cap_mb": rec["bucket_cap_mb"], "hook": rec["hook"], "measured_s": measured,
            "predicted_s": r.iteration_s, "error": (r.iteration_s - measured) / measured,
            "one_stream_s": r.one_stream_s, "no_overlap_s": r.no_overlap_s,
            "exposed_comm_s": r.exposed_comm_s, "buckets": [b.nbytes for b in r.buckets],
            "buckets_match": [b.nbytes for b in r.buckets] == rec["bucket_sizes"],
        })
    return rows
