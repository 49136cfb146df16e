"""A profiler trace's lanes (``collsim.strategies.trace.trace_lanes``) as a timeline: the backward
functions and DDP's AllReduce launches on the training thread, the AllReduces where they ran."""
from __future__ import annotations

ROWS = (("backward", "backward (training thread)", "tab:blue"),
        ("launch", "AllReduce launched (DDP)", "tab:orange"),
        ("allreduce", "AllReduce running (gloo / NCCL)", "tab:red"))


def draw_trace(ax, lanes: dict, title: str = "") -> None:
    """One row per lane, one bar per event (milliseconds from the first event)."""
    for y, (key, label, colour) in enumerate(ROWS):
        spans = [(s / 1e3, max(d / 1e3, 0.002)) for s, d, _ in lanes.get(key, [])]
        ax.broken_barh(spans, (y - 0.35, 0.7), facecolors=colour, edgecolor="none")
    ax.set_yticks(range(len(ROWS)), [label for _, label, _ in ROWS], fontsize=8)
    ax.set_ylim(-0.6, len(ROWS) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    if title:
        ax.set_title(title, fontsize=10)
