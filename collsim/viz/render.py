"""Fast PNG frames of a figure whose few changing artists are redrawn over a cached background.

Widgets show these bytes in an ``ipywidgets.Image``: the figure is never
rebuilt or re-displayed, so nothing flickers, and a frame that only changes
the "animated" artists (the grid colours, arrows, a cursor) costs a blit
instead of a full draw.

Text is by far the slowest thing matplotlib draws (about 1 ms per tick label
on a small machine), so the background is cached in two layers: the full
background per ``use(key, axes)`` (returning to a state seen before costs no
drawing at all), and each axis' ticks and labels per its own key (a new state
redraws only the axes whose ticks changed; the rest is pasted from strips
cached when they were first drawn).
"""
from __future__ import annotations

import io
from collections import OrderedDict


class FramePNG:
    """PNG bytes of ``fig``; ``frame()`` redraws only ``animated`` artists over a cached background.

    ``use(key, axes)`` names the state of everything not animated: ``key`` the
    content inside the axes (a hashable the caller changes whenever that
    changes), ``axes`` a mapping from matplotlib ``Axis`` objects (bottom x and
    left y axes) to the state of their ticks and labels. The layout is fixed
    at the first full draw.
    """

    def __init__(self, fig, animated=(), cache: int = 24):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        self.cache_size = cache
        self._cache: OrderedDict = OrderedDict()      # (key, axis keys) -> full background
        self._strips: OrderedDict = OrderedDict()     # (axis, its key) -> region of its ticks
        self.key, self.axes = None, {}
        self.full_draws = 0                           # frames that had to draw a background
        self.set_animated(animated)

    def set_animated(self, artists) -> None:
        """Artists redrawn on every frame (the rest is the cached background)."""
        self.animated = list(artists)
        for a in self.animated:
            a.set_animated(True)

    def use(self, key, axes=None) -> None:
        """Select the background of state ``key`` with axes' tick states ``axes`` ({Axis: key})."""
        self.key, self.axes = key, dict(axes or {})
        for axis in self.axes:
            axis.set_animated(True)                   # drawn (or pasted) separately

    def _state(self):
        return self.key, tuple((id(a), k) for a, k in self.axes.items())

    def invalidate(self) -> None:
        """Forget the current background (after changing static content without a new key)."""
        self._cache.pop(self._state(), None)
        for s in [s for s in self._strips if s[0] in self.axes]:
            del self._strips[s]

    def _strip_bbox(self, axis):
        """Display box of the axis' ticks and labels: below (x) or left of (y) its axes."""
        from matplotlib.transforms import Bbox

        box, fig = axis.axes.bbox, self.fig.bbox
        if axis.axis_name == "x":
            return Bbox.from_extents(fig.x0, fig.y0, fig.x1, box.y0)
        return Bbox.from_extents(fig.x0, box.y0, box.x0, box.y1)

    def _draw_background(self):
        canvas = self.canvas
        canvas.draw()
        self.full_draws += 1
        self.fig.set_layout_engine("none")            # keep the layout fixed from now on
        for axis, k in self.axes.items():
            strip = self._strips.get((axis, k))
            if strip is None:
                self.fig.draw_artist(axis)
                self._strips[(axis, k)] = canvas.copy_from_bbox(self._strip_bbox(axis))
                while len(self._strips) > 4 * self.cache_size:
                    self._strips.popitem(last=False)
            else:
                canvas.restore_region(strip)
        return canvas.copy_from_bbox(self.fig.bbox)

    def frame(self) -> bytes:
        from PIL import Image

        canvas, state = self.canvas, self._state()
        background = self._cache.get(state)
        if background is None:
            background = self._cache[state] = self._draw_background()
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(state)
            canvas.restore_region(background)
        for a in self.animated:
            if a.get_visible():
                self.fig.draw_artist(a)
        img = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).convert("RGB")
        out = io.BytesIO()
        img.save(out, format="png", compress_level=1)
        return out.getvalue()
