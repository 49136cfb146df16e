"""The strategies measured on 2 x H200 (data/h200x2/) beside collsim's predictions: DDP overlap
and CUDA graphs. ``collsim.strategies.knobs`` does the NCCL variables and NCCL's per-size choice.

* ``ddp_rows(data)``: per (bucket_cap_mb, hook) the measured DDP iteration and three predictions of
  ``collsim.strategies.overlap`` fed with the measured per-layer compute, each with other AllReduce
  times: the measured AllReduce-only times ("measured AR"), a ring closed form with alpha/beta
  fitted on the runner's eager sweep (``fit_alpha_beta``), and ``collsim.fitted.model``
  (``model_params``: data/h200x2/params.json when committed, else fitted here). ``hidden_fraction``:
  the share of the time the model says overlap hides (one stream - predicted) that the measurement
  did hide (one stream - measured); None with one bucket.
* ``launch_fit(data)`` / ``graph_rows(data)``: ``collsim.strategies.launch_overhead`` against the
  eager vs graph AllReduce sweep: host seconds per eager call fitted on the small sizes (<= 32 KiB),
  then the eager time predicted at every size from the graph time (device time) and that host cost.
* ``step_rows(data)``: the compute + AllReduce + update step, predicted from its single-op timings.

Times in seconds (``*_us`` keys: microseconds), sizes in bytes. Reproduce the tables:
``python -m collsim.strategies.tables data/h200x2`` (markdown on stdout).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from collsim.cost import fit_alpha_beta
from collsim.errors import CollsimError
from collsim.fit import fit
from collsim.fit.compare import predictions
from collsim.fit.points import Point, load_points
from collsim.fitted.layout import Config
from collsim.fitted.params import load_params
from collsim.measure import load as load_meas, read_records
from collsim.measure.files import require_files
from collsim.strategies import knobs
from collsim.strategies.ddp import load, predict
from collsim.strategies.launch_overhead import LaunchModel, Op, fit_host_s, per_call_s, pipeline
from collsim.strategies.overlap import closed_form_cost

DDP_FILE = "strategies/ddp_h200x2.jsonl"
GRAPH_FILE = "strategies/graph_step_h200x2.jsonl"
EAGER_DEFAULT = "runner/nvlink_default_eager.jsonl"
FIT_FILES = [f"runner/nvlink_{a}_{p}_{t}.jsonl" for a in ("Ring", "Tree")
             for p in ("LL", "LL128", "Simple")
             for t in ("eager", "graph")]
HOST_FIT_MAX_BYTES = 32768


def _records(path) -> list[dict]:
    try:
        return read_records(path)
    except OSError as e:
        raise CollsimError(f"{path}: cannot read ({e})") from None


def model_params(data):
    """(collsim.fitted.model params, where they came from): data/params.json if present, else
    ``collsim.fit.fit`` on the runner's labelled NVLink sweeps (hold-out "odd")."""
    data = Path(data)
    if (data / "params.json").exists():
        return load_params(data / "params.json"), f"{data.name}/params.json"
    params, _ = fit(load_points(require_files(*(data / f for f in FIT_FILES))), "odd")
    return params, "fitted here on runner/nvlink_<algo>_<proto>_{eager,graph}.jsonl (hold-out odd)"


def model_cost(params, meta: dict, ranks: int = 2, timing: str = "eager"):
    """bytes -> seconds from collsim.fitted.model for the (algorithm, protocol) NCCL picks at that
    size (its logged choice in ``meta``'s probe, else the argmin of NCCL's table)."""
    cfg = Config(ranks, timing=timing)

    def cost(nbytes: int) -> float:
        ours, _, _ = predictions(params, [Point(int(nbytes), 0.0, None, None, cfg, 0, meta)])
        return float(ours[0]) * 1e-6
    return cost


def ddp_rows(data, stat: str = "median") -> tuple[list[dict], dict]:
    """Rows per DDP configuration and a dict saying what fed each prediction."""
    data = Path(data)
    run = load(*require_files(data / DDP_FILE), stat)
    eager = load_meas(*require_files(data / EAGER_DEFAULT))
    inplace = [r for r in eager.records if r.get("inplace", True)]
    alpha, beta = fit_alpha_beta([r["size"] for r in inplace],
                                 [r["time_us"] * 1e-6 for r in inplace])
    params, source = model_params(data)
    by_model = {
        "measured_ar": predict(run),
        "closed_form": predict(run, closed_form_cost("ring", 2, alpha, beta)),
        "model": predict(run, model_cost(params, eager.meta)),
    }
    rows = []
    for i, base in enumerate(by_model["measured_ar"]):
        row = {k: base[k] for k in ("bucket_cap_mb", "hook", "measured_s", "one_stream_s",
                                    "no_overlap_s", "buckets", "buckets_match")}
        for name, preds in by_model.items():
            row[f"{name}_s"], row[f"{name}_error"] = preds[i]["predicted_s"], preds[i]["error"]
        hideable = row["one_stream_s"] - row["measured_ar_s"]  # what the model says overlap hides
        row["hidden_fraction"] = ((row["one_stream_s"] - row["measured_s"]) / hideable
                                  if hideable > 0 else None)
        rows.append(row)
    info = {"alpha_s": alpha, "beta_s_per_byte": beta, "params": source, "stat": stat,
            "compute_s": run.forward_s + sum(layer.backward_s for layer in run.layers)
            + run.optimizer_s}
    return rows, info


def _graph_results(data) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    recs = [r for r in _records(Path(data) / GRAPH_FILE) if r.get("type") == "result"]
    by = {(r["size"], r["timing"]): r["time_us"] * 1e-6 for r in recs}
    sizes = np.array(sorted({s for s, _ in by}))
    calls = next((r["calls_per_graph"] for r in recs if r.get("calls_per_graph")), None)
    if calls is None or any((s, t) not in by for s in sizes for t in ("eager", "graph")):
        raise CollsimError(f"{GRAPH_FILE}: needs eager and graph records at every size")
    return (sizes, np.array([by[(s, "eager")] for s in sizes]),
            np.array([by[(s, "graph")] for s in sizes]), calls)


def launch_fit(data):
    """(LaunchModel with the fitted host seconds per eager AllReduce, graph calls per replay)."""
    sizes, eager, graph, calls = _graph_results(data)
    small = sizes <= HOST_FIT_MAX_BYTES
    return LaunchModel(host_s=fit_host_s(eager[small], graph[small])), calls


def graph_rows(data) -> list[dict]:
    """Per size: measured eager and graph seconds per call, predicted eager (the graph time is
    the device time; the host cost is ``launch_fit``'s) and the measured and predicted saving."""
    model, calls = launch_fit(data)
    sizes, eager, graph, _ = _graph_results(data)
    rows = []
    for s, e, g in zip(sizes, eager, graph):
        pred = per_call_s(g, model, calls)
        rows.append({"bytes": int(s), "eager_s": e, "graph_s": g, "predicted_eager_s": pred,
                     "error": pred / e - 1, "fitted_on": bool(s <= HOST_FIT_MAX_BYTES),
                     "saving": 1 - g / e, "predicted_saving": 1 - g / pred})
    return rows


def step_rows(data) -> dict:
    """The step measured (eager, graph) and predicted by ``launch.pipeline`` from each op's
    measured graph time (device) and eager loop time (host, when host-bound: eager > 1.5 x graph;
    the AllReduce's host cost is ``launch_fit``'s)."""
    recs = _records(Path(data) / GRAPH_FILE)
    ops = {(r["op"], r["timing"]): r["per_call_s"] for r in recs if r.get("type") == "op"}
    steps = {r["timing"]: r for r in recs if r.get("type") == "step"}
    if "eager" not in steps or "graph" not in steps:
        raise CollsimError(f"{GRAPH_FILE}: no eager and graph step records")
    model, _ = launch_fit(data)
    seq = []
    for name in steps["eager"]["ops"]:
        dev, loop = ops[(name, "graph")], ops[(name, "eager")]
        host = model.host_s if name == "allreduce" else (loop if loop > 1.5 * dev else 0.0)
        seq.append(Op(name, dev, host))
    eager, spans = pipeline(seq, LaunchModel(host_s=model.host_s))
    graph, _ = pipeline(seq, LaunchModel(host_s=model.host_s), graph=True)
    return {"ops": [(o.name, o.host_s, o.device_s) for o in seq], "spans": spans,
            "measured_eager_s": steps["eager"]["step_s"],
            "measured_graph_s": steps["graph"]["step_s"],
            "measured_eager_min_s": steps["eager"]["step_min_s"], "predicted_eager_s": eager,
            "predicted_graph_s": graph}


def _cap(c) -> str:
    return "default (25, 1 MiB first)" if c is None else f"{c:g}"


def markdown(data) -> str:
    """Every table of STRATEGIES.md, from the files in ``data``."""
    rows, info = ddp_rows(data)
    params, source = model_params(data)
    out = [f"### DDP iteration, measured vs predicted ({info['stat']} over 20 iterations)", "",
           "Compute alone (forward + backward + optimizer, measured without DDP): "
           f"{info['compute_s'] * 1e3:.2f} ms. Closed form: ring, P=2, alpha = "
           f"{info['alpha_s'] * 1e6:.1f} us, beta = 1/{1 / info['beta_s_per_byte'] / 1e9:.0f} GB/s "
           f"(fitted on {EAGER_DEFAULT}). collsim model parameters: {info['params']}.", "",
           "| bucket_cap_mb | hook | buckets | measured ms | pred. (measured AR) | pred. (closed "
           "form) | pred. (collsim model) | one stream "
           "ms | no overlap ms | hidden fraction |", "|---" * 10 + "|"]
    for r in rows:
        cells = [f"{r[k + '_s'] * 1e3:.2f} ({r[k + '_error']:+.1%})"
                 for k in ("measured_ar", "closed_form", "model")]
        out.append(f"| {_cap(r['bucket_cap_mb'])} | {r['hook']} | {len(r['buckets'])} | "
                   f"{r['measured_s'] * 1e3:.2f} | "
                   + " | ".join(cells)
                   + f" | {r['one_stream_s'] * 1e3:.2f} | {r['no_overlap_s'] * 1e3:.2f} | "
                   + ("-" if r["hidden_fraction"] is None else f"{r['hidden_fraction']:.2f}")
                   + " |")
    model, calls = launch_fit(data)
    out += ["", f"### AllReduce per call, eager vs CUDA graph ({calls} calls per graph)", "",
            f"Fitted host cost per eager call: {model.host_s * 1e6:.1f} us (median eager time at "
            f"sizes <= {HOST_FIT_MAX_BYTES} B).", "",
            "| size (B) | eager us | graph us | predicted eager us | error | saving measured | "
            "saving predicted |",
            "|---|---|---|---|---|---|---|"]
    for r in graph_rows(data):
        fit = " (fit)" if r["fitted_on"] else ""
        out.append(f"| {r['bytes']} | {r['eager_s'] * 1e6:.1f} | {r['graph_s'] * 1e6:.1f} | "
                   f"{r['predicted_eager_s'] * 1e6:.1f}{fit} | {r['error']:+.1%} | "
                   f"{r['saving']:.0%} | {r['predicted_saving']:.0%} |")
    st = step_rows(data)
    out += ["", "### Compute + AllReduce + update step", "", "| op | host us (eager) | device us |",
            "|---|---|---|"]
    out += [f"| {n} | {h * 1e6:.1f} | {d * 1e6:.1f} |" for n, h, d in st["ops"]]
    out += ["", "| timing | measured us | predicted us | error |", "|---|---|---|---|"]
    for t in ("eager", "graph"):
        m, p = st[f"measured_{t}_s"], st[f"predicted_{t}_s"]
        out.append(f"| {t} | {m * 1e6:.1f} | {p * 1e6:.1f} | {p / m - 1:+.1%} |")
    out += ["", knobs.markdown(data, params, source)]
    return "\n".join(out)


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if len(args) != 1:
            raise CollsimError("usage: python -m collsim.strategies.tables DATA_FOLDER (e.g. "
                               "data/h200x2)")
        print(markdown(args[0]))
    except CollsimError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
