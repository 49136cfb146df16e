"""Are the ranges right, and what does a quick run buy: leave-one-log-out over every public and
bundled log (``collsim.fit.sim_sets.SETS``; a log is one set: one machine's run), what
``scripts/accuracy_tables.py`` writes into docs/accuracy.md.

Ranges (``range_rows``, ``leave_one_out``): every measured row predicted from its description (as
``compare --cluster`` does) with its bandwidth share and the kind of each input; a log's rows are
then judged with the widths measured on the other logs' rows
(``collsim.predict.ranges.widths_from``), the inputs the log itself calibrated (``CALIBRATES``)
counted as what they would be without it (``WITHOUT``), and its rows that such an input decides
never measure a width (they are fitted, not predicted).

Quick run (``quick_checks``): on each log holding at least two of ``QUICK_SIZES`` and something
else, the description is calibrated on its quick file's quick sizes alone
(``collsim.fit.quick.fit_quick``) and scored on its other sizes and on the set's other files (forced
algorithms, the other harness). Those rows, of inputs of kind "machine", measure the ranges of
calibrated descriptions.
"""
from __future__ import annotations

import numpy as np

from collsim.fit import summary
from collsim.fit.quick import fit_series
from collsim.fit.sim_sets import Series, load_series
from collsim.inputs import QUICK_SIZES
from collsim.machine.provenance import BANDWIDTH, LATENCY, worst
from collsim.predict import predict_nccl
from collsim.predict.ranges import QUANTILE, REGIMES, half_width, regime_kinds, widths_from

RUN1 = ("h200/nccl-tests graph", "h200/nccl-tests eager", "h200/runner graph", "h200/runner eager")
# the inputs each log calibrated (data/public/README.md, collsim.fit.simulated,
# collsim.machine.networks)
CALIBRATES = {**{s: {"step"} for s in RUN1}, "h200/nccl-tests graph": {"step", "harness"},
              "h200/nccl-tests eager": {"step", "harness"}, "L01": {"intra", "step", "harness"},
              "L15": {"nic", "hop", "step"},
              "P01": {"hop"}, "P02": {"intra"}, "P03": {"nic"}, "P05": {"hop"}}
# what such an input's kind would be without the log: another log of the kind, a maintainer's
# figure, nothing
WITHOUT = {("L01", "intra"): "datasheet", ("L15", "nic"): "datasheet", ("L15", "hop"): "datasheet",
           ("P01", "hop"): "assumed", ("P02", "intra"): "assumed", ("P03", "nic"): "assumed",
           ("P05", "hop"): "assumed", ("h200/nccl-tests graph", "harness"): "assumed"}


def _rows(log: str, s: Series, result: dict, quick: bool = False) -> list[dict]:
    own = CALIBRATES.get(log, set()) if not quick else set()
    inputs = {k: dict(v) for k, v in result["inputs"].items()}
    for name in own:
        if name in inputs and inputs[name]["kind"] != "machine":
            inputs[name]["kind"] = WITHOUT.get((log, name), inputs[name]["kind"])
    kinds = regime_kinds(inputs)
    out = []
    for r, t in zip(result["rows"], s.times):
        regime = "latency" if r["bandwidth_share"] < 0.5 else "bandwidth"
        fitted = bool(own & set(LATENCY if regime == "latency" else BANDWIDTH))
        out.append({"log": log, "file": s.file, "bytes": int(r["bytes"]),
                    "error": float(np.log(r["time_us"] / t)),
                    "share": r["bandwidth_share"], "kinds": kinds, "fitted": fitted,
                    "quick": quick})
    return out


def range_rows(series: list[Series] | None = None) -> list[dict]:
    """Every measured row of ``series`` (default all sets) as predicted from its description (module
    docstring): {"log", "file", "bytes", "error" (log predicted / measured), "share", "kinds",
    "fitted"}."""
    out = []
    for s in series if series is not None else load_series():
        out += _rows(s.set, s, predict_nccl(s.cluster, s.sizes, *s.args))
    return out


def leave_one_out(rows: list[dict]) -> dict:
    """Per log: its rows judged with the widths of the others' unfitted rows; {"logs": {log:
    summary}, "all": summary, "widths": the widths of every unfitted row (what ``widths.json``
    holds)}."""
    logs, judged = {}, []
    for log in dict.fromkeys(r["log"] for r in rows):
        widths = widths_from([r for r in rows if r["log"] != log and not r["fitted"]])
        mine = [{**r, "w": half_width(r["share"], r["kinds"], widths)} for r in rows
                if r["log"] == log]
        judged += mine
        logs[log] = _judge(mine)
    return {"logs": logs, "all": _judge(judged),
            "widths": widths_from([r for r in rows if not r["fitted"]]),
            "sure": _judge([r for r in judged if _sure(r)]),
            "unsure": _judge([r for r in judged if not _sure(r)])}


def _sure(row: dict) -> bool:
    """Whether every input deciding the row comes from a log of its kind or a run of the machine."""
    return worst(row["kinds"].values()) in ("machine", "log")


def _judge(rows: list[dict]) -> dict:
    if not rows:
        return {"n": 0, "inside": 0, "coverage": None, "median_half_width": None,
                "median_abs_error": None}
    inside = [abs(r["error"]) <= r["w"] for r in rows]
    kinds = {regime: sorted({r["kinds"][regime] for r in rows}) for regime in REGIMES}
    return {"n": len(rows), "inside": int(sum(inside)), "coverage": float(np.mean(inside)),
            "median_half_width": float(np.median([np.sinh(r["w"]) for r in rows])),
            "median_abs_error": float(np.median([abs(np.expm1(r["error"])) for r in rows])),
            "kinds": kinds,
            "fitted": int(sum(r["fitted"] for r in rows)),
            "sure": bool(all(_sure(r) for r in rows))}


def _quick(s: Series) -> Series | None:
    """``s`` cut to its quick sizes; None unless it holds 2 of them and another size."""
    mask = np.isin(s.sizes, QUICK_SIZES)
    if mask.sum() < 2 or mask.all():
        return None
    return Series(s.set, s.file, s.cluster, s.args, s.sizes[mask], s.times[mask])


def quick_checks(series: list[Series] | None = None, log=print) -> tuple[dict, list[dict]]:
    """Per log with a quick file (its default choice, the nccl-tests one first): the fitted values,
    the median |time error| on the other sizes of that file and on the set's other files, before
    (the description) and after (calibrated on the quick sizes); and those rows for the ranges
    (module docstring)."""
    series = series if series is not None else load_series()
    by_set: dict = {}
    for s in series:
        by_set.setdefault(s.set, []).append(s)
    table, rows = {}, []
    for name, members in by_set.items():
        ordered = sorted(members, key=lambda s: (s.args[0] != "default", "runner" in s.file))
        quick = next((q for q in ((s, _quick(s)) for s in ordered) if q[1]), None)
        if quick is None:
            continue
        s, cut = quick
        fit = fit_series(s.cluster, [cut], f"{s.file}'s quick sizes")
        cluster = fit["cluster"]
        before, after, other = [], [], []
        for m in members:
            held = ~np.isin(m.sizes, QUICK_SIZES) if m is s else np.ones(len(m.sizes), bool)
            if not held.any():
                continue
            sizes, times = m.sizes[held], m.times[held]
            was = predict_nccl(m.cluster, sizes, *m.args)["rows"]
            now = predict_nccl(cluster, sizes, *m.args)
            before.append(np.abs([r["time_us"] / t - 1 for r, t in zip(was, times)]))
            after.append(np.abs([r["time_us"] / t - 1 for r, t in zip(now["rows"], times)]))
            other.append(np.full(len(sizes), m is not s))
            rows += _rows(name, Series(name, m.file, cluster, m.args, sizes, times), now,
                          quick=True)
        b, a, o = (np.concatenate(x) for x in (before, after, other))
        table[name] = {"file": s.file, "values": fit["values"], "quick_sizes": int(fit["points"]),
                       "before": summary(b), "after": summary(a), "other_sizes": summary(a[~o]),
                       "other_files": summary(a[o])}
        log(
            f"{name}: {fit['values']} median {100 * np.median(b):.1f}% -> "
            f"{100 * np.median(a):.1f}%")
    return table, rows


__all__ = ["CALIBRATES", "QUANTILE", "leave_one_out", "quick_checks", "range_rows"]
