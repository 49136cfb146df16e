"""How close one harness's AllReduce times are to another's: the runner vs nccl-tests.

    collsim fidelity --runner RUN.jsonl... --reference NCCL_TESTS.log... [--label ALGO/PROTO]
                     [--min-bytes 8] [--max-bytes 64K] [--out-of-place] [--json]

Both sides may hold several files: repeated runs of one configuration, alternated in one
session so that drift hits both. Every file of both sides must be the same configuration
(algorithm/protocol label, timing, dtype, rank count), else it is an error: nccl-tests text logs
do not record NCCL_ALGO/NCCL_PROTO, so they take ``--label``, else the label in their name
(``graph_Ring_LL.log``), else NCCL's own choice ("default"). Per size, each side's time is the
median over its files of the per-call time (microseconds): the runner's ``time_us_mean`` (mean
over ranks of each rank's average, the convention nccl-tests uses for its ``time``; a file
without it falls back to ``time_us``, the maximum, and the result says so), nccl-tests' in-place
column (``--out-of-place``: the other one). A time that is not a positive finite number, or a
size with wrong elements, is an error naming the file and size (the loaders refuse times that
are not finite numbers >= 0; a zero or missing time is refused here). The ratio is runner /
reference (bus bandwidth is its inverse). Sizes present on both sides only.
"""
from __future__ import annotations

import numpy as np

from collsim.errors import CollsimError
from collsim.measure.files import label_from_name, load_file


def _label(path, label):
    if label or str(path).endswith(".jsonl"):
        return label
    try:
        return label_from_name(path)
    except CollsimError:
        return "default"


def _side(paths, inplace: bool, label, which: str) -> tuple[dict, tuple, set]:
    """({size: [time_us per file]}, the configuration, the statistics used) of one side."""
    by_size, configs, stats = {}, set(), set()
    for path in paths:
        m = load_file(path, _label(path, label))
        for rec in m.records:
            if rec.get("inplace") is not None and bool(rec["inplace"]) != inplace:
                continue
            size = int(rec["size"])
            stat = "time_us_mean" if rec.get("time_us_mean") is not None else "time_us"
            t = rec.get(stat)
            if t is None or t <= 0:  # the loader has checked the type: a finite number >= 0
                raise CollsimError(f"{path}: size {size}: {stat} {t!r} is not a positive number of "
                                   "us")
            if rec.get("wrong"):
                raise CollsimError(f"{path}: size {size}: {rec['wrong']} wrong elements, not a "
                                   "measurement to compare")
            configs.add((rec.get("algo") or "default", rec.get("proto") or "default",
                         rec.get("timing") or m.meta.get("timing"), rec.get("dtype"),
                         rec.get("ranks") or m.meta.get("world_size")))
            stats.add(stat)
            by_size.setdefault(size, []).append(float(t))
    if len(configs) > 1:
        raise CollsimError(f"the {which} files mix configurations: "
                           + "; ".join(_describe(c) for c in sorted(configs, key=str)))
    if not configs:
        raise CollsimError(f"the {which} files hold no {'in' if inplace else 'out-of'}-place "
                           "results")
    return by_size, configs.pop(), stats


def _describe(config) -> str:
    algo, proto, timing, dtype, ranks = config
    return f"{algo}/{proto} {timing} {dtype} {ranks} ranks"


def fidelity(runner, reference, min_bytes: int = 0, max_bytes: int | None = None,
             inplace: bool = True, label: str | None = None) -> dict:
    """Per-size medians of both harnesses and their ratio (runner / reference); "summary"
    holds the number of sizes, the min, median and max ratio and the largest |ratio - 1|;
    "config" the configuration compared, "runner_statistic" the runner time used."""
    ours, config, stats = _side(runner, inplace, label, "runner")
    theirs, ref_config, _ = _side(reference, inplace, label, "reference")
    if config != ref_config:
        raise CollsimError("runner and reference measured different configurations: "
                           f"{_describe(config)} "
                           f"vs {_describe(ref_config)} (nccl-tests logs: pass --label ALGO/PROTO)")
    sizes = sorted(s for s in set(ours) & set(theirs)
                   if s >= min_bytes and (max_bytes is None or s <= max_bytes))
    if not sizes:
        raise CollsimError("the runner and reference files share no sizes in the range asked for")
    rows = []
    for s in sizes:
        a, b = float(np.median(ours[s])), float(np.median(theirs[s]))
        rows.append({"bytes": s, "runner_us": a, "reference_us": b, "ratio": a / b,
                     "runs": [len(ours[s]), len(theirs[s])]})
    ratios = np.array([r["ratio"] for r in rows])
    return {"config": _describe(config), "runner_statistic": "/".join(sorted(stats)), "sizes": rows,
            "summary": {"n": len(rows), "min_ratio": float(ratios.min()),
                        "median_ratio": float(np.median(ratios)),
                        "max_ratio": float(ratios.max()),
                        "max_abs_deviation": float(np.abs(ratios - 1).max())}}
