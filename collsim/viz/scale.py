"""busbw as a cluster grows (``collsim predict-nccl --nodes 2,4,...,2048 --plot``): ``draw_scale``,
``scale_figure``.

One panel per message size: busbw against the node count (log scale), a line per algorithm simulated
(``collsim.predict.scale.scale_nccl``'s rows), NCCL's choice at every node count a ringed marker on
the line of the algorithm it picks.
"""
from __future__ import annotations

from collsim.outputs import save_figure
from collsim.units import format_size


def draw_scale(ax, result: dict, size: int) -> None:
    """``scale_nccl``'s ``result`` for ``size`` bytes on ``ax`` (module docstring)."""
    rows = [r for r in result["rows"] if r["bytes"] == size and r["busbw_GBps"] is not None]
    algos = list(dict.fromkeys(r["algo"] for r in sorted(rows, key=lambda r: r["algo"])))
    for i, a in enumerate(algos):
        mine = sorted((r for r in rows if r["algo"] == a), key=lambda r: r["nodes"])
        ax.plot([r["nodes"] for r in mine], [r["busbw_GBps"] for r in mine], "-o", ms=3, lw=1.2,
                color=f"C{i}", label=a)
    chosen = sorted((r for r in rows if r["nccl_choice"]), key=lambda r: r["nodes"])
    ax.plot([r["nodes"] for r in chosen], [r["busbw_GBps"] for r in chosen], "o", ms=10,
            mfc="none", mec="k", mew=1.2, label="NCCL's choice")
    ax.set_xscale("log", base=2)
    counts = sorted({r["nodes"] for r in rows})
    ax.set_xticks(counts, [str(n) for n in counts], minor=False)
    ax.minorticks_off()
    c = result["cluster"]
    ax.set(xlabel=f"nodes of {c['gpus_per_node']} {c['gpu']}", ylabel="busbw (GB/s)",
           title=f"{c.get('name') or 'cluster'}: AllReduce of {format_size(size)}")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def scale_figure(result: dict, path) -> None:
    """``draw_scale`` for every size of ``result`` as one figure at ``path`` (format of its
    extension), written whole or not at all (``collsim.outputs.save_figure``)."""
    from matplotlib.figure import Figure

    sizes = result["sizes"]
    fig = Figure(figsize=(6.4 * len(sizes), 4.4), layout="constrained")
    axes = fig.subplots(1, len(sizes), squeeze=False)[0]
    for ax, size in zip(axes, sizes):
        draw_scale(ax, result, size)
    save_figure(fig, path)
