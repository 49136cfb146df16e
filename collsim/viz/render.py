"""Fast PNG frames of a figure whose few changing artists are redrawn over a cached background.

Widgets show these bytes in an ``ipywidgets.Image``: the figure is never
rebuilt or re-displayed, so nothing flickers, and a frame that only changes
the "animated" artists (the grid colours, arrows, a cursor) costs a blit
instead of a full draw.
"""
from __future__ import annotations

import io


class FramePNG:
    """PNG bytes of ``fig``; ``frame()`` redraws only ``animated`` artists unless ``invalidate()`` was called."""

    def __init__(self, fig, animated=()):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        self.set_animated(animated)

    def set_animated(self, artists) -> None:
        """Artists redrawn on every frame (the rest is cached); invalidates the cache."""
        self.animated = list(artists)
        for a in self.animated:
            a.set_animated(True)
        self._background = None

    def invalidate(self) -> None:
        """Call after changing anything that is not one of the animated artists (limits, ticks)."""
        self._background = None

    def frame(self) -> bytes:
        from PIL import Image

        canvas = self.canvas
        if self._background is None:
            canvas.draw()
            self.fig.set_layout_engine("none")   # keep the layout fixed from now on
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        else:
            canvas.restore_region(self._background)
        for a in self.animated:
            if a.get_visible():
                self.fig.draw_artist(a)
        img = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba())
        out = io.BytesIO()
        img.save(out, format="png", compress_level=1)
        return out.getvalue()
