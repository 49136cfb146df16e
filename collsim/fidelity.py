"""How close one harness's AllReduce times are to another's: the runner vs nccl-tests.

    collsim fidelity --runner RUN.jsonl... --reference NCCL_TESTS.log... [--min-bytes 8]
                     [--max-bytes 64K] [--out-of-place] [--json]

Both sides may hold several files: repeated runs of the same sweep, alternated in one session
so that drift hits both. Per size, each side's time is the median over its files of the per-call
time (microseconds): the runner's ``time_us_mean`` (mean over ranks of each rank's average, the
convention nccl-tests uses for its ``time``), nccl-tests' in-place column (``--out-of-place``:
the other one; the runner's records say which they are). The ratio is runner / reference: time
for small messages, bus bandwidth (GB/s) is its inverse. Sizes present on both sides only.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError


def _times(paths, inplace: bool) -> dict:
    """{size: [time_us per file]} from runner JSON Lines or nccl-tests output."""
    from collsim.measurements import load
    from collsim.nccl_tests import import_nccl_tests
    by_size: dict = {}
    for path in paths:
        m = load(path) if str(path).endswith(".jsonl") else import_nccl_tests(path, "default")
        for rec in m.records:
            t = rec.get("time_us_mean") or rec.get("time_us")
            if rec.get("inplace") is not None and bool(rec["inplace"]) != inplace or not t or t <= 0:
                continue
            by_size.setdefault(int(rec["size"]), []).append(float(t))
    return by_size


def fidelity(runner, reference, min_bytes: int = 0, max_bytes: int | None = None,
             inplace: bool = True) -> dict:
    """Per-size medians of both harnesses and their ratio (runner / reference); "summary"
    holds the number of sizes, the min, median and max ratio and the largest |ratio - 1|."""
    ours, theirs = _times(runner, inplace), _times(reference, inplace)
    sizes = sorted(s for s in set(ours) & set(theirs)
                   if s >= min_bytes and (max_bytes is None or s <= max_bytes))
    if not sizes:
        raise CollsimError("the runner and reference files share no sizes in the range asked for")
    rows = []
    for s in sizes:
        a, b = float(np.median(ours[s])), float(np.median(theirs[s]))
        rows.append({"size": s, "runner_us": a, "reference_us": b, "ratio": a / b,
                     "runs": [len(ours[s]), len(theirs[s])]})
    ratios = np.array([r["ratio"] for r in rows])
    return {"sizes": rows, "summary": {"n": len(rows), "min_ratio": float(ratios.min()),
                                       "median_ratio": float(np.median(ratios)),
                                       "max_ratio": float(ratios.max()),
                                       "max_abs_deviation": float(np.abs(ratios - 1).max())}}
