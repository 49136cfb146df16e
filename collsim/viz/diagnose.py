"""The picture of a ``collsim diagnose`` report: measured busbw against the range the hardware
should give.

Per measured run: the measured busbw (points), collsim's expected busbw (solid, ``predict-nccl``)
inside its range (the band's tolerance, shaded), NCCL's own model's (dashed); a run without a
prediction shows its points alone. Optional ``lines``: horizontal references such as a network's
line rate.
"""
from __future__ import annotations

from collsim.diagnose.verdict import BANDS, TOLERANCE
from collsim.outputs import save_figure
from collsim.viz.palette import curve_style


def _tolerance(size: int) -> float:
    return next(TOLERANCE[name] for name, lo, hi in BANDS if lo <= size < hi)


def diagnose_figure(report: dict, path=None, ax=None, lines: dict | None = None,
                    title: str | None = None):
    """A log-log figure of ``report`` (``collsim.diagnose.diagnose``); written to ``path`` when
    given (format by extension); returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(7, 4))
    runs = list(dict.fromkeys([m["run"] for m in report["measured"]]))
    for i, run in enumerate(runs):
        style = curve_style(i)
        pts = sorted((p for p in report["points"] if p["run"] == run), key=lambda p: p["bytes"])
        if pts:
            x = [p["bytes"] for p in pts]
            exp = [p["expected"] for p in pts]
            ax.fill_between(x, [e / (1 + _tolerance(s)) for s, e in zip(x, exp)],
                            [e * (1 + _tolerance(s)) for s, e in zip(x, exp)],
                            color=style["color"], alpha=0.15, lw=0, label=f"{run}: expected range")
            ax.plot(x, exp, "-", color=style["color"], lw=1.5,
                    label=f"{run}: simulated_us (collsim expects)")
            ax.plot(x, [p["nccl"] for p in pts], "--", color=style["color"], lw=1,
                    label=f"{run}: nccl_us (NCCL's model)")
            ax.plot(x, [p["measured"] for p in pts], "o", color=style["color"], ms=4,
                    label=f"{run}: measured")
        else:
            meas = sorted((m for m in report["measured"] if m["run"] == run),
                          key=lambda m: m["bytes"])
            ax.plot([m["bytes"] for m in meas], [max(m["busbw_GBps"], 1e-3) for m in meas], "o",
                    color=style["color"], ms=4, label=f"{run}: measured (no prediction)")
    for j, (label, value) in enumerate((lines or {}).items()):
        ax.axhline(value, color="grey", lw=1, linestyle=curve_style(j + 1)["linestyle"],
                   label=label)
    ax.set(xscale="log", yscale="log", xlabel="message size (bytes)", ylabel="busbw (GB/s)",
           title=title or f"verdict: {report['verdict'].replace('_', ' ')}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    if path is not None:
        save_figure(fig, path)
    return fig
