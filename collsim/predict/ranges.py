"""How sure a prediction is: an 80% range (``low_us``, ``high_us``) on every predicted time, from where the
cluster's inputs come (``collsim.machine.provenance``: a run of this machine, a log of this kind, a datasheet
with an assumed efficiency, an assumption) and collsim's own measured error on each kind.

A row's time is part latency (the inputs ``LATENCY``: per-step costs, the network hop, NCCL's choice) and part
bandwidth (``BANDWIDTH``: the ring's efficiency inside a node and per NIC, NCCL's choice). Its bandwidth share
``share`` is 1 - t(8 B) / t (0 for the smallest sizes, near 1 for the largest). Each regime is as sure as its
least sure input; the range is ``time x exp(-+w)`` with w = (1 - share) x width[latency][kind] + share x
width[bandwidth][kind]: ``widths.json`` (package data) holds the widths, each the 80th percentile of |log(predicted
/ measured)| over the measured rows of that regime and kind of every public and bundled log (``widths_from``,
rows of share < 1/2 counted as latency); ``python scripts/coverage.py`` measures them, leaving each log out in
turn to check the ranges it would have printed (docs/accuracy.md, "Ranges").
"""
from __future__ import annotations

import json
import math
from importlib import resources

import numpy as np

from collsim.machine.provenance import BANDWIDTH, KINDS, LATENCY, worst

REGIMES = {"latency": LATENCY, "bandwidth": BANDWIDTH}
QUANTILE = 0.8       # the range holds this share of measured rows
MIN_LOGS = 2         # a width is measured on rows of at least this many logs, else the next less sure kind's
WIDTHS = "widths.json"
SMALLEST = 8         # bytes: the size whose time stands for a call's latency
KIND_WORDS = {"machine": "a run of this machine", "log": "a log of this kind", "datasheet": "a datasheet",
              "assumed": "an assumption"}


def packaged_widths() -> dict:
    """``{"latency": {kind: w}, "bandwidth": {kind: w}}`` from ``collsim/fitted/widths.json``."""
    text = resources.files("collsim.fitted").joinpath(WIDTHS).read_text()
    return json.loads(text)["widths"]


def regime_kinds(inputs: dict) -> dict:
    """``{"latency": kind, "bandwidth": kind}``: the least sure input of each regime (inputs by name, each a
    ``collsim.machine.provenance.Input`` or its dict)."""
    def kind(x):
        return x["kind"] if isinstance(x, dict) else x.kind
    return {regime: worst(kind(inputs[k]) for k in names if k in inputs) for regime, names in REGIMES.items()}


def bandwidth_share(time_us: float, smallest_us: float) -> float:
    """1 - t(``SMALLEST``) / t, within 0..1: the share of a row's time its bytes take."""
    return float(min(1.0, max(0.0, 1.0 - smallest_us / time_us))) if time_us > 0 else 0.0


def half_width(share: float, kinds: dict, widths: dict | None = None) -> float:
    """w of a row of bandwidth ``share`` whose regimes are as sure as ``kinds`` (``regime_kinds``)."""
    widths = widths or packaged_widths()
    return (1 - share) * widths["latency"][kinds["latency"]] + share * widths["bandwidth"][kinds["bandwidth"]]


def time_range(time_us: float, share: float, kinds: dict, widths: dict | None = None) -> tuple[float, float]:
    """(low_us, high_us): the 80% range of ``time_us`` (module docstring)."""
    w = half_width(share, kinds, widths)
    return time_us * math.exp(-w), time_us * math.exp(w)


def widths_from(rows) -> dict:
    """The widths measured on ``rows`` (each {"log", "error": log(pred / meas), "share", "kinds"}): per regime
    and kind the ``QUANTILE`` of |error| over its rows, where they come from ``MIN_LOGS`` logs or more; a kind
    measured on fewer takes the next less sure kind's width, the least sure the largest of its regime; a kind
    is never narrower than a surer one."""
    out = {}
    for regime in REGIMES:
        mine = [r for r in rows if (r["share"] < 0.5) == (regime == "latency")]
        measured = {}
        for kind in KINDS:
            errs = [abs(r["error"]) for r in mine if r["kinds"][regime] == kind]
            if len({r["log"] for r in mine if r["kinds"][regime] == kind}) >= MIN_LOGS:
                measured[kind] = float(np.quantile(errs, QUANTILE))
        widest = max(measured.values(), default=1.0)
        w, last = {}, 0.0
        for i, kind in enumerate(KINDS):
            later = [measured[k] for k in KINDS[i:] if k in measured]
            last = max(last, measured.get(kind, later[0] if later else widest))
            w[kind] = round(last, 4)
        out[regime] = w
    return out


def busbw_range(row: dict, ranks: int) -> tuple[float, float]:
    """(low, high) busbw (GB/s) of a predicted row ({"bytes", "low_us", "high_us"}): the time range read as
    bandwidth (the longest time is the lowest busbw)."""
    factor = 2.0 * (ranks - 1) / ranks if ranks > 1 else 1.0
    return (row["bytes"] / 1e3 / row["high_us"] * factor, row["bytes"] / 1e3 / row["low_us"] * factor)


def range_note(result: dict) -> str:
    """One line under a table of ``result`` (``predict_nccl``'s): how sure each regime is and why."""
    inputs = result["inputs"]
    parts = []
    for regime, names in REGIMES.items():
        kind = result["range"][regime]
        name = next(k for k in names if k in inputs and inputs[k]["kind"] == kind)
        parts.append(f"{regime} from {KIND_WORDS[kind]} ({name}: {inputs[name]['source']})")
    return "80% range: " + "; ".join(parts)
