"""Timelines of the strategies: DDP buckets against the backward pass, and host vs device launches.

* ``overlap_figure(results)``: one panel per ``collsim.strategies.overlap.OverlapResult`` (e.g. one
  stream, small buckets, one bucket), rows "compute" and "comm", one bar per event coloured
  by kind (forward, backward, AllReduce, casts, optimizer), times in milliseconds; the
  AllReduce bars are labelled with their bucket index.
* ``launch_figure(runs)``: one panel per ``collsim.strategies.launch_overhead.pipeline`` timeline,
  rows "host" (the time each op takes to issue) and "GPU" (when it runs), times in microseconds.

``stream_bars(events)`` is the pure part (tested without drawing). matplotlib is imported
inside the figure functions.
"""
from __future__ import annotations

from collsim.errors import CollsimError

COLOURS = {"forward": "#9ecae1", "backward": "#3182bd", "compress": "#fd8d3c",
           "allreduce": "#e6550d", "decompress": "#fdae6b", "optimizer": "#31a354"}
ROWS = ("compute", "comm")


def stream_bars(events) -> dict:
    """{row: [(start, duration, kind, label)]} in seconds, for each stream that has events."""
    out: dict = {}
    for e in events:
        if e.stream not in ROWS or e.kind not in COLOURS:
            raise CollsimError(f"unknown stream/kind {e.stream}/{e.kind} in overlap events")
        out.setdefault(e.stream, []).append((e.start_s, e.end_s - e.start_s, e.kind, e.label))
    return out


def overlap_figure(results: dict, width: float = 10.0):
    """Figure with one panel per {title: OverlapResult}, on a shared time axis (ms)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if not results:
        raise CollsimError("overlap_figure needs at least one result")
    fig, axes = plt.subplots(len(results), 1, figsize=(width, 1.5 + 1.1 * len(results)),
                             sharex=True, squeeze=False)
    for ax, (title, res) in zip(axes[:, 0], results.items()):
        bars = stream_bars(res.events)
        for y, row in enumerate(ROWS):
            for start, dur, kind, label in bars.get(row, []):
                ax.broken_barh([(start * 1e3, dur * 1e3)], (y - 0.4, 0.8), facecolor=COLOURS[kind],
                               edgecolor="white", linewidth=0.5)
                if kind == "allreduce" and dur > 0.03 * res.iteration_s:
                    ax.text((start + dur / 2) * 1e3, y, label.split()[-1], ha="center", va="center",
                            fontsize=7, color="white")
        ax.axvline(res.iteration_s * 1e3, color="black", lw=1)
        ax.set_yticks(range(len(ROWS)), ROWS)
        ax.set_ylim(-0.6, 1.6)
        ax.set_title(f"{title}: {res.iteration_s * 1e3:.2f} ms, exposed communication "
                     f"{res.exposed_comm_s * 1e3:.2f} ms", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("time (ms)")
    fig.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], loc="upper center",
               ncol=len(COLOURS), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def launch_figure(runs: dict, width: float = 10.0):
    """Figure with one panel per {title: (total_s, spans)} from
    ``collsim.strategies.launch_overhead.pipeline`` (us)."""
    import matplotlib.pyplot as plt

    if not runs:
        raise CollsimError("launch_figure needs at least one timeline")
    fig, axes = plt.subplots(len(runs), 1, figsize=(width, 1.2 + 1.1 * len(runs)), sharex=True,
                             squeeze=False)
    names = sorted({s.name for _, spans in runs.values() for s in spans})
    colour = {n: f"C{i}" for i, n in enumerate(names)}
    for ax, (title, (total, spans)) in zip(axes[:, 0], runs.items()):
        for s in spans:
            if s.host_end_s > s.host_start_s:
                ax.broken_barh([(s.host_start_s * 1e6, (s.host_end_s - s.host_start_s) * 1e6)],
                               (0.6, 0.8), facecolor=colour[s.name], alpha=0.5, edgecolor="white")
            ax.broken_barh([(s.device_start_s * 1e6, (s.device_end_s - s.device_start_s) * 1e6)],
                           (-0.4, 0.8), facecolor=colour[s.name], edgecolor="white")
        ax.set_yticks([0, 1], ["GPU", "host"])
        ax.set_title(f"{title}: {total * 1e6:.1f} us", fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("time (us)")
    axes[0, 0].legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colour.values()],
                      labels=list(colour), fontsize=7, ncol=len(colour), loc="upper right")
    fig.tight_layout()
    return fig
