"""The quick-start job: predicted AllReduce times next to real measurements.

``collsim demo`` (what ``bash scripts/demo.sh`` runs) prints two tables and writes one figure:

1. Predicted time of every algorithm on a preset cluster (event simulation on
   ``ib-400g`` by default: 4 nodes x 8 H100, NVLink inside, one 400 Gb/s
   InfiniBand NIC per GPU), at sizes from 8 B to 1 GiB.
2. The bundled 2 x H200 NCCL measurements (``data/h200x2/runner``, graph
   timing) beside collsim's NCCL-shaped model (parameters
   ``data/h200x2/params.json``; fitted on the spot if that file is missing)
   and NCCL's own tuning model (the table NCCL printed in the run), with the
   median and p90 |relative error| of each.

Times are per AllReduce in microseconds, bandwidths in GB/s (nccl-tests' busbw).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from collsim.errors import CollsimError

DATA = Path(__file__).resolve().parent.parent / "data" / "h200x2"
ALGOS = ["ring", "tree", "hierarchical", "hierarchical-nccl", "halving-doubling", "recursive-doubling", "direct"]
TABLE_SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30]


def simulated(preset: str, nodes: int | None, sizes) -> tuple[dict, object]:
    """{algo: time_s array} on the preset, and the topology."""
    from collsim.sweep import sweep
    from collsim.topology import get_preset
    topo = get_preset(preset, nodes=nodes)
    table = sweep(ALGOS, topo.ranks, sizes, method="simulate", topology=topo)
    out = {a: np.asarray(table["time_s"][table["algo"] == a], float) for a in ALGOS}
    return out, topo


def measured_vs_models(data_dir: Path = DATA):
    """(result of collsim.compare.compare on every point, params, points, how params were obtained)."""
    from collsim.compare import attach_probe, compare
    from collsim.fit import fit, load_params, load_points
    files = sorted((data_dir / "runner").glob("nvlink_*_graph.jsonl"))
    if not files:
        raise CollsimError(f"no bundled measurements under {data_dir / 'runner'}")
    points = load_points(files)
    attach_probe(points, data_dir / "runner" / "nvlink_default_eager.jsonl")  # NCCL's printed table
    pfile = data_dir / "params.json"
    if pfile.exists():
        params, how = load_params(pfile), f"parameters {pfile.relative_to(data_dir.parent.parent)}"
    else:
        params, how = fit(points)[0], "parameters fitted now on even powers of two"
    return compare(params, points, holdout="auto"), params, points, how


def _pct(summary: dict) -> str:
    """'median% / p90%' of a collsim.fit.summary, or 'n/a' where it has no points."""
    if not summary["n"]:
        return "n/a"
    return f"{100 * summary['median_abs_rel_error']:.1f}% / {100 * summary['p90_abs_rel_error']:.1f}%"


def _fmt_us(t_s: float) -> str:
    return f"{t_s * 1e6:10.1f}" if t_s < 1 else f"{t_s * 1e6:10.3g}"


def run(out: str | None, preset: str = "ib-400g", nodes: int | None = None) -> int:
    from collsim.measurements import format_size
    from collsim.sweep import sizes as size_range
    grid = size_range(8, 4 << 30, 2)  # the figure's sizes; the table shows TABLE_SIZES of them
    grid_times, topo = simulated(preset, nodes, grid)
    sizes = np.array(TABLE_SIZES, dtype=np.int64)
    times = {a: t[np.searchsorted(grid, sizes)] for a, t in grid_times.items()}
    print(f"Predicted AllReduce time (us), event simulation on {topo.name}: {topo.nodes} nodes x "
          f"{topo.gpus_per_node} GPUs = {topo.ranks} ranks")
    print(f"  ({topo.source})")
    print(f"{'algorithm':20s}" + "".join(f"{format_size(int(s)):>10s}" for s in sizes))
    for a in ALGOS:
        print(f"{a:20s}" + "".join(_fmt_us(t) for t in times[a]))
    best = [min(ALGOS, key=lambda a: times[a][i]) for i in range(len(sizes))]
    print(f"{'fastest':20s}" + "".join(f"{b[:9]:>10s}" for b in best))

    result, params, points, how = measured_vs_models()
    print(f"\nMeasured on 2 x H200 (NVLink, NCCL 2.28.9, runner graph timing) vs predicted, "
          f"error on {result['points']} points; collsim: {how}")
    print(f"{'configuration':52s} {'collsim median/p90':>20s} {'NCCL model median/p90':>23s}")
    rows = [(c["config"], c["collsim"], c["nccl_model"]) for c in result["configs"]]
    rows.append((f"all {result['collsim']['n']} points", result["collsim"], result["nccl_model"]))
    for name, ours, theirs in rows:
        print(f"{name:52s} {_pct(ours):>20s} {_pct(theirs):>23s}")
    if out:
        figure(out, grid, grid_times, topo, result)
        print(f"\nwrote {out}")
    return 0


def figure(path: str, grid, times: dict, topo, result: dict) -> None:
    """Left: simulated busbw vs size (``times``: {algo: seconds at ``grid`` bytes} on ``topo``).
    Right: measured vs predicted time on 2 x H200 (``result`` of ``measured_vs_models``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from collsim.sweep import busbw_factor
    from collsim.viz.curves import busbw
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    for a in ALGOS:
        left.semilogx(grid, busbw(grid, times[a], busbw_factor(topo.ranks)), label=a)
    left.set(xlabel="message size (bytes)", ylabel="busbw (GB/s)",
             title=f"simulated on {topo.name} ({topo.nodes} x {topo.gpus_per_node} GPUs)")
    left.legend(fontsize=8)
    for i, c in enumerate(c for c in result["configs"] if c["config"].startswith(("default", "Ring/Simple", "Tree/LL/"))):
        s = np.array(c["sizes"], float)
        o = np.argsort(s)
        right.loglog(s[o], np.array(c["measured_us"])[o], "o", color=f"C{i}", ms=4, label=f"{c['config']} measured")
        right.loglog(s[o], np.array(c["collsim_us"])[o], "-", color=f"C{i}", lw=1.2)
        right.loglog(s[o], np.array(c["nccl_model_us"])[o], "--", color=f"C{i}", lw=1)
    right.plot([], [], "k-", label="collsim model")
    right.plot([], [], "k--", label="NCCL's own model")
    right.set(xlabel="message size (bytes)", ylabel="time per AllReduce (us)",
              title="2 x H200 NVLink: measured vs predicted")
    right.legend(fontsize=7)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
