"""Time and bus bandwidth against message size, with the sizes where algorithms cross.

Sizes are bytes per rank buffer, times seconds, bandwidths GB/s (1e9 B/s).
``crossovers`` and ``fastest`` are pure numpy; ``CurvesView`` draws (and, for
widgets and animations, redraws by updating its artists rather than rebuilding
the figure).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Mapping

import numpy as np

from collsim.core.collective import get as get_collective
from collsim.errors import CollsimError
from collsim.outputs import save_figure
from collsim.units import algbw_GBps
from collsim.viz.palette import curve_style


@dataclass(frozen=True)
class Crossover:
    """Size (bytes) where ``faster_below`` stops and ``faster_above`` starts being the faster
    one."""

    size: float
    faster_below: str
    faster_above: str
    time_s: float


def _check_series(sizes, series: Mapping[str, np.ndarray]) -> np.ndarray:
    sizes = np.asarray(sizes, dtype=float)
    if sizes.ndim != 1 or len(sizes) < 2 or np.any(sizes <= 0) or np.any(np.diff(sizes) <= 0):
        raise CollsimError("sizes must be at least two positive, increasing byte counts")
    for name, t in series.items():
        t = np.asarray(t, dtype=float)
        if t.shape != sizes.shape or np.any(~np.isfinite(t)) or np.any(t <= 0):
            raise CollsimError(f"times of {name!r} must be {len(sizes)} positive finite seconds")
    return sizes


def crossovers(sizes, series: Mapping[str, np.ndarray],
               fastest_only: bool = False) -> list[Crossover]:
    """Every size where two curves cross, interpolated linearly in log(size) and log(time).

    ``series`` maps a name to times (seconds) at ``sizes`` (bytes, increasing).
    A crossing is reported between two sampled sizes where the sign of
    log(t_a / t_b) changes; the list is sorted by size. ``fastest_only``: only the
    crossings where the fastest curve changes (no third curve below the two there).
    """
    sizes = _check_series(sizes, series)
    ls = np.log(sizes)
    logs = {k: np.log(np.asarray(v, dtype=float)) for k, v in series.items()}
    out = []
    for a, b in combinations(series, 2):
        d = logs[a] - logs[b]
        sign = np.sign(d)
        idx = np.nonzero(sign[:-1] * sign[1:] < 0)[0]
        for i in idx:
            f = d[i] / (d[i] - d[i + 1])
            x = ls[i] + f * (ls[i + 1] - ls[i])
            t = logs[a][i] + f * (logs[a][i + 1] - logs[a][i])
            below, above = (b, a) if d[i] > 0 else (a, b)
            out.append(Crossover(float(np.exp(x)), below, above, float(np.exp(t))))
    if fastest_only:
        def at(name, c):
            return np.exp(np.interp(np.log(c.size), ls, logs[name]))
        out = [c for c in out if all(at(n, c) >= c.time_s * (1 - 1e-9) for n in series
                                     if n not in (c.faster_below, c.faster_above))]
    return sorted(out, key=lambda c: c.size)


def fastest(sizes, series: Mapping[str, np.ndarray]) -> list[str]:
    """Name of the fastest curve at every size (ties go to the first name)."""
    _check_series(sizes, series)
    names = list(series)
    stack = np.vstack([np.asarray(series[k], dtype=float) for k in names])
    return [names[i] for i in np.argmin(stack, axis=0)]


def busbw(sizes, times, factor: float) -> np.ndarray:
    """nccl-tests bus bandwidth in GB/s (1e9 B/s) of ``sizes`` bytes in ``times`` seconds: algbw x
    ``factor`` (``collsim.core.collective.Collective.busbw_factor``, 2(P-1)/P for AllReduce)."""
    return np.asarray(algbw_GBps(sizes, times)) * factor


def _fmt_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.3g} B"


def place_labels(points, sizes, box, gap: float = 5.0,
                 mark: float = 7.0) -> list[tuple[float, float]]:
    """Lower-left corners (pixels) of labels of ``sizes`` (w, h) next to ``points`` (x, y), so that
    no two labels overlap, none covers a point (a square of half-width ``mark`` around each), and
    each stays inside ``box`` (x0, y0, x1, y1) where it can.

    Greedy, in the order given: each label takes the first free place among right-above,
    right-below, left-above, left-below, centred above and centred below its point, then the same
    places moved up or down by whole label heights. A label that finds no free place takes the first
    candidate inside the box (there are more labels than room)."""
    placed: list[tuple[float, float, float, float]] = [(px - mark, py - mark, px + mark, py + mark)
                                                       for px, py in points]
    out = []
    x0, y0, x1, y1 = box
    for (px, py), (w, h) in zip(points, sizes):
        cands = []
        for k in range(6):
            lift = k * (h + gap)
            cands += [(px + gap, py + gap + lift), (px + gap, py - h - gap - lift),
                      (px - w - gap, py + gap + lift), (px - w - gap, py - h - gap - lift),
                      (px - w / 2, py + mark + gap + lift),
                      (px - w / 2, py - h - mark - gap - lift)]
        inside = ([(x, y) for x, y in cands if x >= x0 and y >= y0 and x + w <= x1 and y + h <= y1]
                  or cands)
        free = [(x, y) for x, y in inside
                if all(x + w <= a or b <= x or y + h <= c or d <= y for a, c, b, d in placed)]
        x, y = (free or inside)[0]
        placed.append((x, y, x + w, y + h))
        out.append((x, y))
    return out


class CurvesView:
    """Log-log time (or busbw) vs size for several named curves, crossovers marked.

    ``update`` changes the data of existing lines and markers (no new figure),
    so a widget or animation can call it on every change without flicker.
    Curve names are fixed at construction; each keeps its colour and line style
    (``collsim.viz.palette``). Crossover labels (the size and the curve that is faster above it) are
    placed so that they do not overlap (``place_labels``).
    """

    def __init__(self, names, kind: str = "time", ax=None, max_marks: int = 12):
        if kind not in ("time", "busbw"):
            raise CollsimError(f"kind must be 'time' or 'busbw', got {kind!r}")
        from matplotlib.figure import Figure


        if ax is None:                      # fixed margins: label places computed now stay right
            fig = Figure(figsize=(7, 4.2), dpi=80)
            fig.subplots_adjust(left=0.11, right=0.98, bottom=0.12, top=0.93)
            ax = fig.add_subplot()
        self.ax, self.fig, self.kind = ax, ax.figure, kind
        self.names = list(names)
        self.lines = {n: ax.plot([], [], lw=2, label=n, **curve_style(i))[0]
                      for i, n in enumerate(self.names)}
        self.marks = ax.plot([], [], "o", ms=8, mfc="none", mec="k", mew=1.5,
                             label="crossover")[0]
        self.labels = [ax.text(0, 0, "", fontsize=8, ha="left", va="bottom", visible=False)
                       for _ in range(max_marks)]
        from matplotlib.collections import LineCollection

        # marker -> its label
        self.leaders = LineCollection([], colors="0.4", linewidths=0.8, zorder=1.5)
        ax.add_collection(self.leaders)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size per rank (bytes)")
        ax.set_ylabel("time (s)" if kind == "time" else "bus bandwidth (GB/s)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
        self.crossings: list[Crossover] = []

    def update(self, sizes, series: Mapping[str, np.ndarray], factor: float = 1.0,
               title: str = "", fastest_only: bool = False) -> list[Crossover]:
        """Show ``series`` (seconds at ``sizes`` bytes; a name left out hides its line).

        busbw views multiply by ``factor``. Returns the crossovers marked (``fastest_only``:
        only where the fastest curve changes).
        """
        unknown = set(series) - set(self.names)
        if unknown:
            raise CollsimError(f"no curve named {sorted(unknown)[0]!r} (have "
                               f"{', '.join(self.names)})")
        sizes = _check_series(sizes, series)
        ys = {}
        for n in self.names:
            if n in series:
                t = np.asarray(series[n], dtype=float)
                ys[n] = t if self.kind == "time" else busbw(sizes, t, factor)
                self.lines[n].set_data(sizes, ys[n])
            else:
                self.lines[n].set_data([], [])
        if not ys:
            raise CollsimError("no curves to show")
        self.crossings = crossovers(sizes, series, fastest_only)
        xs = [c.size for c in self.crossings]
        ymarks = [c.time_s if self.kind == "time" else busbw(c.size, c.time_s, factor)
                  for c in self.crossings]
        self.marks.set_data(xs, ymarks)
        allv = np.concatenate(list(ys.values()))
        # whole decades: limits (and so ticks) change rarely, so most updates can be blitted
        limits = ((float(sizes[0]), float(sizes[-1])),
                  (10.0 ** np.floor(np.log10(allv.min())), 10.0 ** np.ceil(np.log10(allv.max()))))
        if limits != self.limits():
            self.ax.set_xlim(*limits[0])
            self.ax.set_ylim(*limits[1])
        self._place(xs, ymarks)
        self.ax.set_title(title, fontsize=10)
        return self.crossings

    def _place(self, xs, ys) -> None:
        """Crossover labels beside their markers, none overlapping another (``place_labels``)."""
        n = min(len(xs), len(self.labels))
        # short: placed close
        texts = [f"{_fmt_bytes(c.size)}\n→{c.faster_above}" for c in self.crossings[:n]]
        px = self.fig.dpi / 72
        fs = self.labels[0].get_fontsize() if self.labels else 8
        sizes = [(0.62 * fs * px * max(len(line) for line in t.split("\n")), 2.9 * fs * px)
                 for t in texts]
        to_px = self.ax.transData
        pts = to_px.transform(np.c_[xs[:n], ys[:n]]) if n else np.zeros((0, 2))
        corners = place_labels(pts, sizes, self.ax.bbox.extents)
        back = to_px.inverted().transform(np.array(corners)) if n else []
        leaders = []
        for (x, y), (w, h), p in zip(corners, sizes, pts):
            # nearest point of the box
            cx, cy = min(max(p[0], x), x + w), min(max(p[1], y), y + h)
            if np.hypot(cx - p[0], cy - p[1]) > 12:                            # not right beside it
                leaders.append(to_px.inverted().transform(np.array([p, (cx, cy)])))
        self.leaders.set_segments(leaders)
        for i, lab in enumerate(self.labels):
            if i < n:
                lab.set_position(tuple(back[i]))
                lab.set_text(texts[i])
                lab.set_visible(True)
            else:
                lab.set_visible(False)
        self.label_boxes = [(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners, sizes)]

    def limits(self) -> tuple:
        """Current (x, y) limits: with the axis kind, all that the non-animated content depends
        on."""
        return self.ax.get_xlim(), self.ax.get_ylim()

    def artists(self) -> list:
        """The artists ``update`` changes when the limits stay (for ``FramePNG``)."""
        return list(self.lines.values()) + [self.marks, self.leaders, self.ax.title] + self.labels


def draw_predicted_busbw(ax, result: dict, measured: dict | None = None) -> None:
    """``collsim predict-nccl``'s result (``collsim.predict.predict_nccl``) on ``ax``: busbw vs
    size, one marker colour per NCCL choice (algorithm/protocol) so the switches show, NCCL's own
    model dashed; with ``measured`` (one file's entry of
    ``collsim.fit.cluster_compare.compare_cluster``) its measured busbw as black crosses."""
    rows = result["rows"]
    sizes = np.array([r["bytes"] for r in rows], float)
    ranks = result["cluster"]["gpus_per_node"] * result["cluster"]["nodes"]
    factor = get_collective(result.get("collective", "all_reduce")).busbw_factor(ranks)
    ax.semilogx(sizes, [r["busbw_GBps"] for r in rows], "-", color="0.3", lw=1.2,
                label="simulated_us (collsim's simulation)")
    ax.semilogx(sizes, busbw(sizes, np.array([r["nccl_us"] for r in rows]) * 1e-6, factor), "--",
                color="0.6", lw=1, label="nccl_us (NCCL's own model)")
    for i, choice in enumerate(dict.fromkeys(f"{r['algo']}/{r['proto']}" for r in rows)):
        pick = [j for j, r in enumerate(rows) if f"{r['algo']}/{r['proto']}" == choice]
        ax.semilogx(sizes[pick], [rows[j]["busbw_GBps"] for j in pick], "o", ms=5, color=f"C{i}",
                    label=choice)
    if measured is not None:
        m = measured["rows"]
        ms = np.array([r["bytes"] for r in m], float)
        ax.semilogx(ms, busbw(ms, np.array([r["measured_us"] for r in m]) * 1e-6, factor), "x",
                    color="k", ms=6, label=f"measured_us ({Path(measured['file']).name[:32]})")
    c = result["cluster"]
    ax.set(xlabel="message size (bytes)", ylabel="busbw (GB/s)",
           title=f"{c.get('name') or 'cluster'}: {c['nodes']} x {c['gpus_per_node']} {c['gpu']}, "
                 f"NCCL {c['nccl']}")
    ax.legend(fontsize=8)


def predicted_busbw_figure(result: dict, path) -> None:
    """``draw_predicted_busbw`` as a figure at ``path``, written whole or not at all, in the format
    of ``path``'s extension (``collsim.outputs.save_figure``)."""
    from matplotlib.figure import Figure


    fig = Figure(figsize=(8, 4.6))
    draw_predicted_busbw(fig.subplots(), result)
    fig.tight_layout()
    save_figure(fig, path)
