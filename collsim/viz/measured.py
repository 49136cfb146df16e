"""One measured-vs-predicted panel: measured AllReduce times, collsim's model and NCCL's own model
over an error strip (``collsim compare --plot``, ``collsim demo``)."""
from __future__ import annotations

import numpy as np

from collsim.fit.compare import config_name
from collsim.nccl.model import predict


def draw_measured(top, bottom, result: dict, params=None, points=None, configs=None, max_configs: int = 8) -> None:
    """Measured vs predicted on two axes: ``top`` log-log time vs size (measured points, collsim's
    curve, NCCL's model dashed), ``bottom`` the error of each in percent, one colour per
    configuration of ``result`` (``collsim.fit.compare.compare``), the first ``max_configs`` or
    those named in ``configs``. With ``params`` and ``points`` collsim's curve is drawn densely
    between the measured sizes for labelled configurations."""
    by_name = {config_name(p): p for p in points or []}
    shown = [c for c in result["configs"] if configs is None or c["config"] in configs][:max_configs]
    for i, c in enumerate(shown):
        color, p0 = f"C{i}", by_name.get(c["config"])
        sizes = np.array(c["sizes"], float)
        order = np.argsort(sizes)
        top.loglog(sizes, c["measured_us"], "o", color=color, ms=4, label=f"{c['config']} measured")
        if params is not None and p0 is not None and p0.algo and p0.proto:
            dense = np.unique(np.geomspace(sizes.min(), sizes.max(), 200).astype(np.int64))
            top.loglog(dense, predict(params, p0.algo, p0.proto, dense, p0.config), "-", color=color, lw=1.2)
        else:
            top.loglog(sizes[order], np.array(c["collsim_us"])[order], "-", color=color, lw=1.2)
        top.loglog(sizes[order], np.array(c["nccl_model_us"])[order], "--", color=color, lw=1)
        meas = np.array(c["measured_us"])
        for key, style in (("collsim_us", "-"), ("nccl_model_us", "--")):
            err = 100 * (np.array(c[key]) / meas - 1)
            bottom.semilogx(sizes[order], err[order], style, color=color, marker=".", lw=1)
    top.plot([], [], "k-", label="collsim model")
    top.plot([], [], "k--", label="NCCL tuning model")
    top.set_ylabel("time per AllReduce (us)")
    top.legend(fontsize=7)
    top.set_title(f"measured vs predicted ({result['points']} points)")
    bottom.axhline(0, color="grey", lw=0.5)
    bottom.set_xlabel("message size (bytes)")
    bottom.set_ylabel("error (%)")


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
