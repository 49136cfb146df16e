"""Step-by-step animations of a schedule, exportable as GIF (Pillow) or HTML (jshtml).

Frame k shows the grid at the start of step k with its transfers (the last
frame: the final state); with a simulation result, a timeline below shades the
same step. Frames update the existing artists (``GridView.show``,
``TimelineView.highlight``): the figure is built once.

    anim = animate_schedule(schedule, result=sim)   # sim from collsim.simulate.simulate
    save_gif(anim, "ring.gif")                      # or: html = to_html(anim)
"""
from __future__ import annotations

from collsim.core.schedule import Schedule
from collsim.errors import CollsimError
from collsim.viz.grid import GridView
from collsim.viz.timeline import timeline_view

MAX_FRAMES = 400


def animate_schedule(schedule: Schedule, result=None, by: str = "link", interval_ms: int = 700):
    """A ``matplotlib.animation.FuncAnimation`` with one frame per step plus the final state.

    ``result``: a ``collsim.simulate.SimResult`` of ``schedule`` (adds the timeline).
    """
    from matplotlib.animation import FuncAnimation
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure


    frames = schedule.n_steps + 1
    if frames > MAX_FRAMES:
        raise CollsimError(f"{frames} frames is too many to animate (at most {MAX_FRAMES}): "
                           "use fewer ranks or slices")
    if result is None:
        fig = Figure(figsize=(7, 5), dpi=80, layout="constrained")
        axes = [fig.add_subplot()]
    else:
        fig = Figure(figsize=(8, 8), dpi=80, layout="constrained")
        axes = fig.subplots(2, 1, height_ratios=[3, 2])
    FigureCanvasAgg(fig)
    grid = GridView(schedule, ax=axes[0])
    timeline = None
    if result is not None:
        if result.schedule is not schedule:
            raise CollsimError("the simulation result belongs to another schedule")
        timeline = timeline_view(result, by, ax=axes[1])

    fig.canvas.draw()
    fig.set_layout_engine("none")      # lay out once: frames must not shift (or cost a re-layout)

    def update(k):
        grid.show(k)
        if timeline is not None:
            timeline.highlight(k)
        return grid.artists() + (timeline.artists() if timeline else [])

    anim = FuncAnimation(fig, update, frames=frames, interval=interval_ms, blit=False,
                         repeat=True)
    anim.grid, anim.timeline = grid, timeline
    return anim


def save_gif(anim, path, fps: float = 1.5) -> None:
    """Write ``anim`` to ``path`` as an animated GIF with Pillow."""
    from matplotlib.animation import PillowWriter

    anim.save(path, writer=PillowWriter(fps=fps))


def to_html(anim) -> str:
    """Self-contained HTML (JavaScript player, frames embedded as PNG) for notebooks or pages."""
    return anim.to_jshtml()
