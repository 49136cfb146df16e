"""How sure a prediction is: an 80% range (``low_us``, ``high_us``) on every predicted time, from
where the cluster's inputs come (``collsim.machine.provenance``: a run of this machine, a log of
this kind, a datasheet with an assumed efficiency, an assumption) and collsim's own measured error
on each kind.

A row's time is part latency (the inputs ``LATENCY``: per-step costs, the network hop, NCCL's
choice) and part bandwidth (``BANDWIDTH``: the ring's efficiency inside a node and per NIC, NCCL's
choice). Its bandwidth share ``share`` is 1 - t(8 B) / t (0 for the smallest sizes, near 1 for the
largest). Each regime is as sure as its least sure input; the range is ``time x exp(-+w)`` with w =
(1 - share) x width[latency][kind] + share x width[bandwidth][kind]: ``widths.json`` (package data)
holds the widths, each the 80th percentile of |log(predicted / measured)| over the measured rows of
that regime and kind of every public and bundled log (``widths_from``, rows of share < 1/2 counted
as latency); ``python scripts/coverage.py`` measures them, leaving each log out in turn to check the
ranges it would have printed (docs/accuracy.md, "Ranges").
"""
from __future__ import annotations

import json
import math
from importlib import resources

import numpy as np

from collsim.machine.provenance import BANDWIDTH, KINDS, LATENCY, NEUTRAL, Input, worst

REGIMES = {"latency": LATENCY, "bandwidth": BANDWIDTH}
QUANTILE = 0.8       # the range holds this share of measured rows
# a width is measured on rows of at least this many logs, else the next less sure kind's
MIN_LOGS = 2
WIDTHS = "widths.json"
SMALLEST = 8         # bytes: the size whose time stands for a call's latency
KIND_WORDS = {"machine": "a run of this machine", "log": "a log of this kind",
              "datasheet": "a datasheet",
              "assumed": "an assumption"}


def packaged_widths() -> dict:
    """``{"latency": {kind: w}, "bandwidth": {kind: w}}`` from ``collsim/fitted/widths.json``."""
    text = resources.files("collsim.fitted").joinpath(WIDTHS).read_text()
    return json.loads(text)["widths"]


def regime_kinds(inputs: dict) -> dict:
    """``{"latency": kind, "bandwidth": kind}``: the least sure input of each regime (inputs by
    name, each a ``collsim.machine.provenance.Input`` or its dict)."""
    def kind(x):
        return x["kind"] if isinstance(x, dict) else x.kind

    def limits(k):
        return k in inputs and not (
            k in NEUTRAL and KINDS.index(kind(inputs[k])) <= KINDS.index("log")
        )
    return {regime: worst([kind(inputs[k]) for k in names if limits(k)] or ["machine"])
            for regime, names in REGIMES.items()}


def harness_key(harness: str, timing: str, gpus_per_process: int) -> str:
    """How a calibrated record names a harness as it ran: "nccl-tests graph 1"."""
    return f"{harness} {timing} {gpus_per_process}"


def harness_input(harness: str, timing: str, gpus_per_process: int, gpus_per_node: int, nodes: int,
                  calibrated: dict | None = None) -> Input:
    """Where the harness's per-call terms come from. CUDA graphs: nccl-tests' from our 2 x H200 with
    both GPUs in one process, the runner's from our pairs' runs 1-6. nccl-tests -G with fewer GPUs
    per process than a node has, or across nodes, was never measured (on runs 2-6 of our pairs, one
    process per GPU, its 8 B-64 KiB rows are 20-25% slow). Eager timing is an assumption: a call
    takes at least the host's launch floor (a line through L01's -g 8 and our pair's -g 2 floors),
    and what launching adds above it is taken as nothing (``collsim.fit.simulated``; our pair's
    eager 8 B-8 MiB rows are up to 28% off). A quick run of the machine under the harness measures
    it (``calibrated``: its ``harness`` and ``harness_us``)."""
    if (calibrated or {}).get("harness") == harness_key(harness, timing, gpus_per_process):
        return Input("machine",
                     f"{harness} {timing}: per-call cost fitted on "
                     f"{calibrated.get('source', 'a run')}")
    if (
        harness == "nccl-tests"
        and timing == "graph"
        and (gpus_per_process < gpus_per_node or nodes > 1)
    ):
        return Input("assumed",
                     f"nccl-tests -G with {gpus_per_process} GPU(s) per process: its per-call cost "
                                "measured with all of a node's GPUs in one process only")
    if timing == "eager":
        return Input("assumed",
                     f"{harness} eager: the launch floor of L01 (-g 8) and our 2 x H200 (-g 2), "
                                "and nothing launching adds above it")
    what = {"nccl-tests": "our 2 x H200 (-g 2)", "runner": "our 2 x H200, runs 1-6"}[harness]
    return Input("log", f"{harness} {timing}: per-call terms measured on {what}")


def schedule_input(coll: str) -> dict:
    """``{"schedule": Input}`` where collective ``coll``'s own costs were never calibrated (the p2p
    sends of AlltoAll and SendRecv: no calibration log runs them; public logs P09, P10, P12 and P13
    check them, docs/accuracy.md), else ``{}`` (its schedule's costs are the calibrated ring's or
    tree's)."""
    if coll not in ("alltoall", "sendrecv"):
        return {}
    return {"schedule": Input("assumed", f"{coll}: NCCL's p2p sends costed as its ring's steps and "
                                         "channels (no calibration log runs p2p)")}


def bandwidth_share(time_us: float, smallest_us: float) -> float:
    """1 - t(``SMALLEST``) / t, within 0..1: the share of a row's time its bytes take."""
    return float(min(1.0, max(0.0, 1.0 - smallest_us / time_us))) if time_us > 0 else 0.0


def half_width(share: float, kinds: dict, widths: dict | None = None) -> float:
    """w of a row of bandwidth ``share`` whose regimes are as sure as ``kinds``
    (``regime_kinds``)."""
    widths = widths or packaged_widths()
    return (1 - share) * widths["latency"][kinds["latency"]] + share * widths["bandwidth"][kinds[
        "bandwidth"]]


def time_range(time_us: float, share: float, kinds: dict,
               widths: dict | None = None) -> tuple[float, float]:
    """(low_us, high_us): the 80% range of ``time_us`` (module docstring)."""
    w = half_width(share, kinds, widths)
    return time_us * math.exp(-w), time_us * math.exp(w)


def ranges_of(times_us, smallest_us: float, kinds: dict, widths: dict | None = None) -> list[tuple]:
    """(low_us, high_us, bandwidth share) of each of ``times_us``, rows of one prediction whose
    ``SMALLEST`` size takes ``smallest_us``, its regimes as sure as ``kinds`` (``regime_kinds``)."""
    widths = widths or packaged_widths()
    out = []
    for t in times_us:
        share = bandwidth_share(t, smallest_us)
        out.append((*time_range(t, share, kinds, widths), share))
    return out


def widths_from(rows) -> dict:
    """The widths measured on ``rows`` (each {"log", "error": log(pred / meas), "share", "kinds"}):
    per regime and kind the ``QUANTILE`` of |error| over its rows, where they come from ``MIN_LOGS``
    logs or more; a kind measured on fewer takes the next less sure kind's width, the least sure the
    largest of its regime; a log, datasheet or assumption is never narrower than a surer one of them
    (a run of the machine is measured as it is: a quick fit can miss a harness's small sizes more
    than the logs' calibration does)."""
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
            width = measured.get(kind, later[0] if later else widest)
            # a run of the machine is measured as it is, may miss more
            if kind != "machine":
                last = max(last, width)
            w[kind] = round(width if kind == "machine" else last, 4)
        out[regime] = w
    return out


def busbw_range(row: dict, factor: float) -> tuple[float, float]:
    """(low, high) busbw (GB/s) of a predicted row ({"bytes", "low_us", "high_us"}) under the
    collective's busbw ``factor`` (``collsim.core.collective.Collective.busbw_factor``): the time
    range read as bandwidth (the longest time is the lowest busbw)."""
    return (row["bytes"] / 1e3 / row["high_us"] * factor,
            row["bytes"] / 1e3 / row["low_us"] * factor)


def kernel_only(row: dict) -> dict:
    """A predicted row ({"time_us", "kernel_us", "low_us", "high_us", "busbw_GBps", ...}) as the
    kernel alone, for measurements that time the kernel on the GPU (NCCL Inspector): its time
    ``kernel_us``, its range and busbw scaled by kernel / time."""
    k = row["kernel_us"] / row["time_us"] if row["time_us"] > 0 else 1.0
    return {**row, "time_us": row["kernel_us"], "low_us": row["low_us"] * k,
            "high_us": row["high_us"] * k, "busbw_GBps": row["busbw_GBps"] / k if k > 0 else 0.0}


def range_note(result: dict) -> str:
    """One line under a table of ``result`` (``predict_nccl``'s): how sure each regime is and
    why."""
    inputs = result["inputs"]
    parts = []
    for regime, names in REGIMES.items():
        kind = result["range"][regime]
        name = next(k for k in names if k in inputs and inputs[k]["kind"] == kind)
        parts.append(f"{regime} from {KIND_WORDS[kind]} ({name}: {inputs[name]['source']})")
    return "80% range: " + "; ".join(parts)
