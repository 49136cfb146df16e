"""One measured-vs-predicted panel: measured AllReduce times, collsim's model and NCCL's own model
over an error strip (``collsim compare --plot``, ``collsim demo``, ``collsim.widgets.measured``)."""
from __future__ import annotations

import numpy as np

from collsim.fit.compare import config_name
from collsim.nccl.model import predict


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
        self.lines: list[dict] = []          # per colour: measured, collsim, nccl, collsim_err, nccl_err
        top.set(xscale="log", yscale="log", ylabel="time per AllReduce (us)")
        bottom.set(xscale="log", xlabel="message size (bytes)", ylabel="error (%)")
        bottom.axhline(0, color="grey", lw=0.5)
        self.styles = [top.plot([], [], "k-", label="collsim model")[0],
                       top.plot([], [], "k--", label="NCCL tuning model")[0]]

    def show(self, configs=None, max_configs: int = 8) -> list[dict]:
        """Draw the first ``max_configs`` configurations, or those named in ``configs``; returns
        their entries of ``result["configs"]``."""
        shown = [c for c in self.result["configs"] if configs is None or c["config"] in configs][:max_configs]
        while len(self.lines) < len(shown):
            color = f"C{len(self.lines)}"
            self.lines.append({
                "measured": self.top.plot([], [], "o", color=color, ms=4)[0],
                "collsim": self.top.plot([], [], "-", color=color, lw=1.2)[0],
                "nccl": self.top.plot([], [], "--", color=color, lw=1)[0],
                "collsim_err": self.bottom.plot([], [], "-", color=color, marker=".", lw=1)[0],
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
        self.top.legend(handles=[lines["measured"] for lines in self.lines[:len(shown)]] + self.styles,
                        fontsize=7)
        for ax in (self.top, self.bottom):
            ax.relim(visible_only=True)
            ax.autoscale_view()
        return shown

    def _set(self, lines: dict, c: dict) -> None:
        sizes = np.array(c["sizes"], float)
        order = np.argsort(sizes)
        sizes, meas = sizes[order], np.array(c["measured_us"])[order]
        ours, theirs = np.array(c["collsim_us"])[order], np.array(c["nccl_model_us"])[order]
        lines["measured"].set_data(sizes, meas)
        p0 = self.by_name.get(c["config"])
        if self.params is not None and p0 is not None and p0.algo and p0.proto:
            dense = np.unique(np.geomspace(sizes.min(), sizes.max(), 200).astype(np.int64))
            lines["collsim"].set_data(dense, predict(self.params, p0.algo, p0.proto, dense, p0.config))
        else:
            lines["collsim"].set_data(sizes, ours)
        lines["nccl"].set_data(sizes, theirs)
        lines["collsim_err"].set_data(sizes, 100 * (ours / meas - 1))
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

    from collsim.outputs import save_figure
    fig = Figure(figsize=(8, 7))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    draw_measured(top, bottom, result, params, points)
    fig.tight_layout()
    save_figure(fig, path)
