"""``collsim demo``: the quick-start job, predicted AllReduce times next to real measurements.

``collsim demo [--out PNG] [--cluster NAME] [--nodes N] [--data FOLDER]`` (what
``bash scripts/demo.sh`` runs) prints two tables and writes one figure:

1. Predicted time of every algorithm on a preset cluster (event simulation on
   ``ib-400g`` by default: 4 nodes x 8 H100, NVLink inside, one 400 Gb/s
   InfiniBand NIC per GPU), at sizes from 8 B to 1 GiB: each on one channel, then
   NCCL's layouts on 16 channels (rail rings, NCCL's tree, NVLSTree).
2. The bundled 2 x H200 NCCL measurements (``data/h200x2/runner``, ``collsim.measure.bundled``;
   graph timing) beside collsim's NCCL-shaped model (parameters ``data/h200x2/params.json``; fitted
   on the spot if that file is missing) and NCCL's own tuning model (the table NCCL printed in the
   run), with the median and p90 |relative error| of each.

Times are per AllReduce in microseconds, bandwidths in GB/s (nccl-tests' busbw).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from collsim.cli.args import positive_int
from collsim.core.collective import ALLREDUCE
from collsim.errors import CollsimError
from collsim.fit import fit
from collsim.fit.compare import attach_probe, compare
from collsim.fit.points import load_points
from collsim.fitted.params import load_params
from collsim.machine import load_machine
from collsim.measure.bundled import data_path
from collsim.outputs import check_output, plot_format, save_figure
from collsim.sweep import sizes as size_range, sweep
from collsim.units import format_size
from collsim.viz.curves import busbw
from collsim.viz.measured import draw_measured

# (row label, algorithm, parameters): every algorithm on one channel, then NCCL's layouts on 16
# channels (the coll channels NCCL runs on multi-node H100: collsim.nccl.search on ib-400g)
ROWS = [(a, a, {}) for a in ("ring", "double-tree", "hierarchical", "nccl-tree", "halving-doubling",
                             "recursive-doubling", "direct")] + \
       [("ring 16ch", "ring", {"channels": 16}), ("nccl-tree 16ch", "nccl-tree", {"channels": 16}),
        ("nvlstree 16ch", "nvlstree", {"channels": 16})]
LABELS = [label for label, _, _ in ROWS]
TABLE_SIZES = [8, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30]


def simulated(cluster: str, nodes: int | None, sizes) -> tuple[dict, object]:
    """{row label: time_s array} on the machine ``cluster`` (a preset or file; ``ROWS``), and its
    topology."""
    topo = load_machine(cluster, nodes)
    out = {}
    for label, algo, params in ROWS:
        if algo.startswith("nvls") and topo.nvls is None:
            continue                                    # no NVLink SHARP on this machine
        out[label] = np.asarray(sweep([algo], topo.ranks, sizes, method="simulate", topology=topo,
                                      **params)["time_s"], float)
    return out, topo


def data_files(data_dir: Path) -> tuple[list[Path], Path, Path]:
    """(the graph sweeps, the eager file whose probe holds NCCL's printed table, the parameters
    file) under ``data_dir``; the first must exist, the parameters may not."""
    files = sorted((data_dir / "runner").glob("nvlink_*_graph.jsonl"))
    if not files:
        raise CollsimError(f"no bundled measurements under {data_dir / 'runner'}")
    return files, data_dir / "runner" / "nvlink_default_eager.jsonl", data_dir / "params.json"


def measured_vs_models(data_dir: Path):
    """(result of collsim.fit.compare.compare on every point, params, points, how params were
    obtained)."""
    files, probe, pfile = data_files(data_dir)
    points = load_points(files)
    attach_probe(points, probe)  # NCCL's printed table
    if pfile.exists():
        params, how = load_params(pfile), f"parameters {pfile.parent.name}/{pfile.name}"
    else:
        params, how = fit(points)[0], "parameters fitted now on even powers of two"
    return compare(params, points, holdout="auto"), params, points, how


def _pct(summary: dict) -> str:
    """'median% / p90%' of a collsim.fit.summary, or 'n/a' where it has no points."""
    if not summary["n"]:
        return "n/a"
    return (f"{100 * summary['median_abs_rel_error']:.1f}% / "
            f"{100 * summary['p90_abs_rel_error']:.1f}%")


def _fmt_us(t_s: float) -> str:
    return f"{t_s * 1e6:10.1f}" if t_s < 1 else f"{t_s * 1e6:10.3g}"


def run(out: str | None, cluster: str = "ib-400g", nodes: int | None = None,
        data: Path | None = None) -> int:
    """Print both tables and write the figure to ``out`` (none when empty or None; its folder is
    created; checked before any work: a known format, not one of the data files)."""
    data = data_path("h200x2") if data is None else Path(data)
    if out:
        plot_format(out)
        files, probe, pfile = data_files(data)
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        check_output(out, [*files, probe, pfile], "figure")
    grid = size_range(8, 4 << 30, 2)  # the figure's sizes; the table shows TABLE_SIZES of them
    grid_times, topo = simulated(cluster, nodes, grid)
    sizes = np.array(TABLE_SIZES, dtype=np.int64)
    times = {a: t[np.searchsorted(grid, sizes)] for a, t in grid_times.items()}
    print(f"Predicted AllReduce time (us), event simulation on {topo.name}: {topo.nodes} nodes x "
          f"{topo.gpus_per_node} GPUs = {topo.ranks} ranks")
    print(f"  {topo.describe()} (where each number comes from: collsim simulate --list-presets)")
    print(f"{'algorithm':20s}" + "".join(f"{format_size(int(s)):>10s}" for s in sizes))
    for a in times:
        print(f"{a:20s}" + "".join(_fmt_us(t) for t in times[a]))
    best = [min(times, key=lambda a: times[a][i]) for i in range(len(sizes))]
    print(f"{'fastest':20s}" + "".join(f"{b[:9]:>10s}" for b in best))

    result, params, points, how = measured_vs_models(Path(data))
    print(f"\nMeasured on 2 x H200 (NVLink, NCCL 2.28.9, runner graph timing) vs predicted, "
          f"error on {result['points']} points; collsim's fitted model: {how}")
    print(f"{'configuration':52s} {'model_us median/p90':>20s} {'nccl_us median/p90':>23s}")
    rows = [(c["config"], c["model"], c["nccl"]) for c in result["configs"]]
    rows.append((f"all {result['model']['n']} points", result["model"], result["nccl"]))
    for name, ours, theirs in rows:
        print(f"{name:52s} {_pct(ours):>20s} {_pct(theirs):>23s}")
    if out:
        figure(out, grid, grid_times, topo, result, params, points)
        print(f"\nwrote {out}")
    return 0


def figure(path: str, grid, times: dict, topo, result: dict, params, points) -> None:
    """Left: simulated busbw vs size (``times``: {algo: seconds at ``grid`` bytes} on ``topo``).
    Right: measured vs predicted time on 2 x H200 (``result`` of ``measured_vs_models``) and the
    error strip below it (``collsim.viz.measured.draw_measured``). Written whole or not at all
    (``collsim.outputs.save_figure``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 5.5))
    grid_spec = fig.add_gridspec(2, 2, height_ratios=[3, 1.3])
    left = fig.add_subplot(grid_spec[:, 0])
    top = fig.add_subplot(grid_spec[0, 1])
    bottom = fig.add_subplot(grid_spec[1, 1], sharex=top)
    for a in times:
        left.semilogx(grid, busbw(grid, times[a], ALLREDUCE.busbw_factor(topo.ranks)), label=a)
    left.set(xlabel="message size (bytes)", ylabel="busbw (GB/s)",
             title=f"simulated on {topo.name} ({topo.nodes} x {topo.gpus_per_node} GPUs)")
    left.legend(fontsize=8)
    shown = [c["config"] for c in result["configs"]
             if c["config"].startswith(("default", "Ring/Simple", "Tree/LL/"))]
    draw_measured(top, bottom, result, params, points, configs=shown)
    top.set_title("2 x H200 NVLink: measured vs predicted")
    fig.tight_layout()
    save_figure(fig, path)


def cmd_demo(args) -> int:
    return run(args.out or None, args.cluster, args.nodes, args.data)


def register(sub) -> None:
    p = sub.add_parser("demo",
                       help="predicted times on a preset cluster next to the bundled H200 "
                            "measurements")
    p.add_argument("--out", default="out/demo.png", help="figure to write (PNG); '' for none")
    p.add_argument("--cluster", default="ib-400g",
                   help="the machine of the predictions (a preset or file)")
    p.add_argument("--nodes", type=positive_int, default=None,
                   help="resize the cluster to this many nodes")
    p.add_argument("--data",
                   help="folder of the 2 x H200 measurements (default: the bundled data/h200x2)")
    p.set_defaults(func=cmd_demo)
