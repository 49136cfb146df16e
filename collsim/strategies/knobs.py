"""NCCL variables swept on 2 x H200 (data/h200x2/vars/) beside collsim.fitted.model and NCCL's own
model, and what NCCL chose per size (the runner's NCCL_DEBUG probe).

* ``SWEEPS``: each variable's files and settings; the first setting is the reference.
* ``vars_rows(data, params)``: per (variable, setting, size) the measured time, collsim's
  prediction (``collsim.fit.compare.predictions``: the file's NCCL_BUFFSIZE, channel bound, P2P and
  node count go into ``nccl_layout.Config``) and NCCL's model's (its table ignores NCCL_BUFFSIZE and
  NCCL_MAX_NCHANNELS). ``knob_effects`` turns them into "which knob matters when": the ratio of
  each setting's time to the reference's at the smallest and largest size, measured and predicted.
* ``probe_rows(data, params)``: per size the (algorithm, protocol) NCCL logged, its table's
  time for that choice, collsim's prediction for it (the graph run's configuration, harness
  included), and the measured graph and eager times.

Times in microseconds, sizes in bytes. ``python -m collsim.strategies.tables data/h200x2`` prints
these tables with the others.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from collsim.errors import CollsimError
from collsim.fit.compare import predictions
from collsim.fit.points import load_points
from collsim.fitted.model import predict
from collsim.measure.files import require_files
from collsim.nccl.decision import nccl_table
from collsim.nccl.tuning import algo_time_us, choose

SWEEPS = {
    "NCCL_BUFFSIZE (Ring Simple)": [("4 MiB (default)", "vars_buffsize_4M"),
                                    ("1 MiB", "vars_buffsize_1M"), ("16 MiB", "vars_buffsize_16M")],
    "channels (Ring Simple)": [("default (24)", "vars_buffsize_4M"),
                               ("MAX_NCHANNELS=2", "vars_maxch_2"),
                               ("MAX_NCHANNELS=8", "vars_maxch_8"),
                               ("MAX_NCHANNELS=16", "vars_maxch_16"),
                               ("MIN_NCHANNELS=32", "vars_minch_32")],
    "NCCL_P2P_DISABLE (NCCL's choice)": [("0: NVLink P2P", "vars_p2p_nvlink"),
                                         ("1: through host memory", "vars_p2p_disable")],
    "socket threads x sockets (2 emulated nodes, lo, eager)": [
        ("1 x 1", "vars_socket_1x1"), ("2 x 2", "vars_socket_2x2"), ("4 x 4", "vars_socket_4x4")],
}
PROBE_FILE = "runner/nvlink_default_eager.jsonl"
GRAPH_DEFAULT = "runner/nvlink_default_graph.jsonl"


def vars_rows(data, params) -> list[dict]:
    """One row per (variable, setting, size): measured_us, model_us, nccl_us."""
    rows = []
    for var, settings in SWEEPS.items():
        for setting, stem in settings:
            points = load_points(require_files(Path(data) / "vars" / f"{stem}.jsonl"))
            ours, theirs, _ = predictions(params, points)
            for p, o, t in zip(points, ours, theirs):
                rows.append({"variable": var, "setting": setting, "bytes": p.size,
                             "measured_us": p.time_us, "model_us": float(o), "nccl_us": float(t)})
    return rows


def knob_effects(rows) -> list[dict]:
    """Per (variable, setting): time / reference time at the smallest and the largest size,
    measured and predicted by collsim, and collsim's median |error| over the setting's sizes."""
    out = []
    for var in dict.fromkeys(r["variable"] for r in rows):
        mine = [r for r in rows if r["variable"] == var]
        ref_name = mine[0]["setting"]
        ref = {r["bytes"]: r for r in mine if r["setting"] == ref_name}
        for setting in dict.fromkeys(r["setting"] for r in mine):
            rs = sorted((r for r in mine if r["setting"] == setting and r["bytes"] in ref),
                        key=lambda r: r["bytes"])
            err = np.abs(np.array([r["model_us"] / r["measured_us"] - 1 for r in rs]))
            entry = {"variable": var, "setting": setting, "small": rs[0]["bytes"],
                     "large": rs[-1]["bytes"], "collsim_median_abs_error": float(np.nanmedian(err))}
            for end, r in (("small", rs[0]), ("large", rs[-1])):
                base = ref[r["bytes"]]
                entry[f"measured_ratio_{end}"] = r["measured_us"] / base["measured_us"]
                entry[f"collsim_ratio_{end}"] = r["model_us"] / base["model_us"]
            out.append(entry)
    return out


def probe_rows(data, params) -> list[dict]:
    """Per size of the probe: NCCL's logged choice, NCCL's table time for it, collsim's
    prediction for it (graph timing), and the measured graph and eager times (us)."""
    eager = load_points(require_files(Path(data) / PROBE_FILE))
    meta = eager[0].meta
    probe = meta.get("nccl_probe") or {}
    if not probe.get("choices"):
        raise CollsimError(f"{PROBE_FILE}: no NCCL probe choices in its meta")
    cfg = eager[0].config
    table, _ = nccl_table(meta, cfg.ranks, cfg.nodes, cfg.intra)
    measured_eager = {p.size: p.time_us for p in eager}
    graph = {p.size: p for p in load_points(require_files(Path(data) / GRAPH_DEFAULT))}
    rows = []
    for c in probe["choices"]:
        if c.get("func", "AllReduce") != "AllReduce":
            continue
        size, algo, proto = int(c["bytes"]), c["algo"], c["proto"]
        argmin, g = choose(table, [size])[0], graph.get(size)
        rows.append({"bytes": size, "algo": algo, "proto": proto,
                     "channels": c["channel_hi"] - c["channel_lo"] + 1,
                     "nccl_us": float(algo_time_us(table, algo, proto, [size])[0]),
                     "table_argmin": f"{argmin[0]}/{argmin[1]}",
                     "model_us": np.nan if g is None
                     else float(predict(params, algo, proto, [size], g.config)[0]),
                     "graph_us": np.nan if g is None else g.time_us,
                     "eager_us": measured_eager.get(size, np.nan)})
    return rows


def markdown(data, params, source: str) -> str:
    """The NCCL-variable tables of STRATEGIES.md from the files in ``data``, predicted with
    ``params`` (``source`` says where they came from)."""
    rows = vars_rows(data, params)
    out = [f"### NCCL variables: measured vs collsim.fitted.model (parameters: {source}) and "
           "NCCL's model", ""]
    for var, settings in SWEEPS.items():
        names = [s for s, _ in settings]
        out += [f"**{var}** (us per call: measured / collsim / NCCL's model)", "",
                "| size (B) | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
        sizes = sorted({r["bytes"] for r in rows if r["variable"] == var})
        for s in sizes:
            cells = []
            for name in names:
                r = next((r for r in rows if r["variable"] == var and r["setting"] == name
                          and r["bytes"] == s), None)
                cells.append("-" if r is None else
                             f"{r['measured_us']:.1f} / {r['model_us']:.1f} / {r['nccl_us']:.1f}")
            out.append(f"| {s} | " + " | ".join(cells) + " |")
        out.append("")
    out += ["**Which knob matters when** (time / reference time; measured vs collsim)", "",
            "| variable | setting | smallest size: measured | collsim | largest size: measured | "
            "collsim | collsim median abs. error |", "|---|---|---|---|---|---|---|"]
    for e in knob_effects(rows):
        out.append(f"| {e['variable']} | {e['setting']} | {e['measured_ratio_small']:.2f} | "
                   f"{e['collsim_ratio_small']:.2f} "
                   f"| {e['measured_ratio_large']:.2f} | {e['collsim_ratio_large']:.2f} | "
                   f"{e['collsim_median_abs_error']:.0%} |")
    out += ["", f"### What NCCL chose per size ({PROBE_FILE} probe) and what its model predicted",
            "",
            "| size (B) | NCCL chose | channels | NCCL model us | collsim us | measured graph us | "
            "measured eager us |",
            "|---|---|---|---|---|---|---|"]
    for r in probe_rows(data, params):
        out.append(f"| {r['bytes']} | {r['algo']}/{r['proto']} | {r['channels']} | "
                   f"{r['nccl_us']:.1f} | {r['model_us']:.1f} | {r['graph_us']:.1f} | "
                   f"{r['eager_us']:.1f} |")
    return "\n".join(out)
