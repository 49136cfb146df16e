"""One measured-vs-predicted panel: measured AllReduce times, collsim's model and NCCL's own model
over an error strip (``collsim compare --plot``, ``collsim demo``, ``collsim.widgets.measured``)."""
from __future__ import annotations

import numpy as np

from collsim.fit.compare import config_name
from collsim.fitted.model import predict
from collsim.outputs import save_figure


class MeasuredPanel:
    """Measured vs predicted on two axes, for configurations of ``result``
    (``collsim.fit.compare.compare``): ``top`` log-log time vs size (measured points, collsim's
    curve, NCCL's model dashed), ``bottom`` the error of each in percent, one colour per
    configuration. With ``params`` and ``points`` collsim's curve is drawn densely between the
    measured sizes for labelled configurations. ``show`` picks the configurations; it reuses
    the artists, so a widget can move one panel from configuration to configuration. A panel
    of one configuration names it in the title (its legend says "measured"), one of several
    in the legend."""

    def __init__(self, top, bottom, result: dict, params=None, points=None):
        self.top, self.bottom, self.result, self.params = top, bottom, result, params
        self.by_name = {config_name(p): p for p in points or []}
        # per colour: measured, collsim, nccl, collsim_err, nccl_err
        self.lines: list[dict] = []
        top.set(xscale="log", yscale="log", ylabel="time per AllReduce (us)")
        bottom.set(xscale="log", xlabel="message size (bytes)", ylabel="error (%)")
        bottom.axhline(0, color="grey", lw=0.5)
        self.styles = [top.plot([], [], "k-", label="model_us (collsim's fitted model)")[0],
                       top.plot([], [], "k--", label="nccl_us (NCCL's tuning model)")[0]]

    def show(self, configs=None, max_configs: int = 8) -> list[dict]:
        """Draw the first ``max_configs`` configurations, or those named in ``configs``; returns
        their entries of ``result["configs"]``."""
        shown = [c for c in self.result["configs"] if configs is None
                 or c["config"] in configs][:max_configs]
        while len(self.lines) < len(shown):
            color = f"C{len(self.lines)}"
            self.lines.append({
                "measured": self.top.plot([], [], "o", color=color, ms=4)[0],
                "model": self.top.plot([], [], "-", color=color, lw=1.2)[0],
                "nccl": self.top.plot([], [], "--", color=color, lw=1)[0],
                "model_err": self.bottom.plot([], [], "-", color=color, marker=".", lw=1)[0],
                "nccl_err": self.bottom.plot([], [], "--", color=color, marker=".", lw=1)[0]})
        for i, lines in enumerate(self.lines):
            for line in lines.values():
                line.set_visible(i < len(shown))
            if i < len(shown):
                self._set(lines, shown[i])
                name = "" if len(shown) == 1 else f"{shown[i]['config']} "
                lines["measured"].set_label(name + "measured")
        what = shown[0]["config"] if len(shown) == 1 else "measured vs predicted"
        self.top.set_title(f"{what} ({self.result['points']} points)")
        self.top.legend(handles=[lines["measured"] for lines in self.lines[:len(shown)]]
                        + self.styles,
                        fontsize=7)
        for ax in (self.top, self.bottom):
            ax.relim(visible_only=True)
            ax.autoscale_view()
        return shown

    def _set(self, lines: dict, c: dict) -> None:
        sizes = np.array(c["sizes"], float)
        order = np.argsort(sizes)
        sizes, meas = sizes[order], np.array(c["measured_us"])[order]
        ours, theirs = np.array(c["model_us"])[order], np.array(c["nccl_us"])[order]
        lines["measured"].set_data(sizes, meas)
        p0 = self.by_name.get(c["config"])
        if self.params is not None and p0 is not None and p0.algo and p0.proto:
            dense = np.unique(np.geomspace(sizes.min(), sizes.max(), 200).astype(np.int64))
            lines["model"].set_data(dense,
                                    predict(self.params, p0.algo, p0.proto, dense, p0.config))
        else:
            lines["model"].set_data(sizes, ours)
        lines["nccl"].set_data(sizes, theirs)
        lines["model_err"].set_data(sizes, 100 * (ours / meas - 1))
        lines["nccl_err"].set_data(sizes, 100 * (theirs / meas - 1))


def draw_measured(top, bottom, result: dict, params=None, points=None, configs=None,
                  max_configs: int = 8) -> MeasuredPanel:
    """``MeasuredPanel`` on ``top`` and ``bottom`` showing ``configs`` (None: the first
    ``max_configs`` configurations of ``result``)."""
    panel = MeasuredPanel(top, bottom, result, params, points)
    panel.show(configs, max_configs)
    return panel


def plot_compare(result: dict, params, points, path) -> None:
    """``draw_measured`` as a figure file at ``path``, in the format of its extension, whole or not
    at all (``collsim compare --plot``; ``collsim.outputs.save_figure``)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 7))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    draw_measured(top, bottom, result, params, points)
    fig.tight_layout()
    save_figure(fig, path)


# the terms of collsim.fitted.model.explain, in stacking order, with one colour each
TERM_COLOURS = {"latency": "#4c72b0", "steps": "#8172b3", "sync": "#64b5cd", "harness": "#937860",
                "launch": "#da8bc3", "bandwidth": "#55a868", "protocol": "#c44e52",
                "channels": "#dd8452", "fill": "#ccb974", "l2": "#8c8c8c", "reuse": "#bcbd22",
                "network": "#17becf"}


class SharesPanel:
    """Where time goes: a stacked bar per size of the shares of collsim's predicted time
    (``collsim.fit.compare.term_shares``), one colour per term (``TERM_COLOURS``), on a log-size
    axis. All bars are one ``PolyCollection`` (one artist, fast to replace); the legend lists every
    term once, at the figure's right edge. ``show`` replaces the bars."""

    def __init__(self, ax):
        from matplotlib.collections import PolyCollection
        from matplotlib.patches import Patch

        self.ax = ax
        ax.set(xscale="log", ylim=(0, 1), xlabel="message size (bytes)", ylabel="share of time")
        self.bars = PolyCollection([], linewidths=0)
        ax.add_collection(self.bars)
        self.legend = ax.figure.legend(handles=[Patch(color=c, label=k)
                                                for k, c in TERM_COLOURS.items()],
                                       fontsize=7, loc="center right", frameon=False,
                                       title="where time goes", title_fontsize=7)

    def show(self, sizes, shares: dict) -> None:
        sizes = np.asarray(sizes, float)
        verts, colours = [], []
        if sizes.size:
            ratio = np.exp(np.median(np.diff(np.log(sizes)))) if sizes.size > 1 else 2.0
            x0, x1 = sizes / ratio ** 0.4, sizes * ratio ** 0.4
            bottom = np.zeros(sizes.size)
            for name in ([k for k in TERM_COLOURS if k in shares]
                         + [k for k in shares if k not in TERM_COLOURS]):
                h = np.asarray(shares[name], float)
                top = bottom + h
                for a, b, lo, hi in zip(x0, x1, bottom, top):
                    if hi > lo:
                        verts.append(((a, lo), (b, lo), (b, hi), (a, hi)))
                        colours.append(TERM_COLOURS.get(name, "0.5"))
                bottom = top
            self.ax.set_xlim(x0.min(), x1.max())
        self.bars.set_verts(verts)
        self.bars.set_facecolor(colours)
