"""Fast PNG frames of a figure whose few changing artists are redrawn over a cached background.

Widgets show these bytes in an ``ipywidgets.Image``: the figure is never
rebuilt or re-displayed, so nothing flickers, and a frame that only changes
the "animated" artists (the grid colours, arrows, a cursor) costs a blit
instead of a full draw.

Text is by far the slowest thing matplotlib draws (about 1 ms per tick label
on a small machine, more for a new string), so for the Axes passed to
``use(key, overlay)`` the frame draws the ticks, tick labels and axis labels
itself with PIL (about 0.05 ms a label, the same DejaVu Sans font): the
matplotlib background then holds no axis text and depends only on ``key``.
Animated plain ``Text`` artists (cell labels, titles) are drawn by PIL too,
last, over the other animated artists.
"""
from __future__ import annotations

import io
import re
from collections import OrderedDict
from functools import lru_cache

import numpy as np

_SUP = str.maketrans("0123456789-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


class FramePNG:
    """PNG bytes of ``fig``; ``frame()`` redraws only ``animated`` artists over a cached background.

    ``use(key, overlay)`` names the state of everything not animated (``key``,
    a hashable the caller changes whenever that content changes) and the Axes
    whose axis text the frame draws (see the module docstring). The layout is
    fixed at the first full draw (give the figure fixed margins).
    """

    def __init__(self, fig, animated=(), cache: int = 24):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        self.cache_size = cache
        self._cache: OrderedDict = OrderedDict()      # key -> full background
        self.key, self.overlay = None, []
        self.full_draws = 0                           # frames that had to draw a background
        self.set_animated(animated)

    def set_animated(self, artists) -> None:
        """Artists redrawn on every frame (the rest is the cached background)."""
        self.animated = list(artists)
        for a in self.animated:
            a.set_animated(True)

    def use(self, key, overlay=()) -> None:
        """Select the background of state ``key``; the axes of ``overlay`` (Axes) are drawn by
        PIL."""
        self.key, self.overlay = key, list(overlay)
        for ax in self.overlay:
            ax.xaxis.set_visible(False)               # left out of the background
            ax.yaxis.set_visible(False)

    def _draw_background(self):
        self.canvas.draw()
        self.full_draws += 1
        self.fig.set_layout_engine("none")            # keep the layout fixed from now on
        return self.canvas.copy_from_bbox(self.fig.bbox)

    def frame(self) -> bytes:
        from PIL import Image, ImageDraw

        canvas = self.canvas
        background = self._cache.get(self.key)
        if background is None:
            background = self._cache[self.key] = self._draw_background()
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(self.key)
            canvas.restore_region(background)
        texts = []
        for a in self.animated:
            if a.get_visible():
                if _pil_text(a):
                    texts.append(a)
                else:
                    self.fig.draw_artist(a)
        img = Image.frombuffer("RGBA", canvas.get_width_height(),
                               canvas.buffer_rgba()).convert("RGB")
        draw = ImageDraw.Draw(img)
        for t in texts:
            _draw_text(draw, t, img.height, self.fig.dpi / 72)
        for ax in self.overlay:
            for axis in (ax.xaxis, ax.yaxis):
                _draw_axis(img, draw, axis, self.fig.dpi / 72)
        out = io.BytesIO()
        img.save(out, format="png", compress_level=1)
        return out.getvalue()


@lru_cache(maxsize=16)
def _font(px: int):
    from matplotlib.font_manager import FontProperties, findfont
    from PIL import ImageFont

    return ImageFont.truetype(findfont(FontProperties()), px)


def plain_text(label: str) -> str:
    """A tick label without mathtext: '$\\mathdefault{10^{-3}}$' -> '10⁻³'."""
    s = re.sub(r"\^\{([^}]*)\}", lambda m: m.group(1).translate(_SUP), label)
    for tex, text in (("\\mathdefault", ""), ("\\times", "×"), ("$", ""), ("{", ""), ("}", "")):
        s = s.replace(tex, text)
    return s


_H = {"left": "l", "center": "m", "right": "r"}
_V = {"top": "a", "center": "m", "center_baseline": "m", "bottom": "d", "baseline": "d"}


def _pil_text(artist) -> bool:
    """Whether ``artist`` is plain horizontal text that PIL can draw in its place."""
    from matplotlib.text import Text

    return (type(artist) is Text and artist.get_text() != "" and artist.get_rotation() == 0
            and "$" not in artist.get_text())


def _draw_text(draw, t, height: int, px_per_pt: float) -> None:
    """Draw the matplotlib ``Text`` ``t`` (its position, alignment, size and colour) with PIL."""
    from matplotlib.colors import to_rgba

    x, y = t.get_transform().transform(t.get_position())
    anchor = _H[t.get_horizontalalignment()] + _V[t.get_verticalalignment()]
    colour = tuple(round(255 * c) for c in to_rgba(t.get_color())[:3])
    draw.multiline_text((x, height - y), t.get_text(), fill=colour, anchor=anchor, spacing=2,
                        font=_font(max(6, round(t.get_fontsize() * px_per_pt))),
                        align=t.get_horizontalalignment())


def _draw_axis(img, draw, axis, px_per_pt: float) -> None:
    """Ticks (out, 3.5 pt), tick labels and the axis label of a bottom x or left y ``axis``."""

    ax, height = axis.axes, img.height
    box = ax.bbox
    lo, hi = sorted(axis.get_view_interval())
    locs = np.asarray(axis.get_majorticklocs(), float)
    locs = locs[(locs >= lo - 1e-9 * abs(hi - lo)) & (locs <= hi + 1e-9 * abs(hi - lo))]
    ticks = axis.get_major_ticks(len(locs))
    shown = bool(ticks) and ticks[0].label1.get_visible()   # off e.g. on a shared x axis
    labels = ([plain_text(t) for t in axis.major.formatter.format_ticks(locs)] if shown
              else [""] * len(locs))
    size = ticks[0].label1.get_fontsize() if ticks else 10
    font = _font(max(6, round(size * px_per_pt)))
    tick, pad = 3.5 * px_per_pt, 3.5 * px_per_pt
    x_axis = axis.axis_name == "x"
    pts = ax.transData.transform(np.c_[locs, locs])
    extent = 0.0                                       # label depth beyond the axes (pixels)
    for p, text in zip(pts, labels):
        if x_axis:
            x, y = p[0], height - box.y0
            draw.line([(x, y), (x, y + tick)], fill="black", width=1)
            if text:
                b = draw.textbbox((x, y + tick + pad), text, font=font, anchor="mt")
                draw.text((x, y + tick + pad), text, fill="black", font=font, anchor="mt")
                extent = max(extent, b[3] - y)
        else:
            x, y = box.x0, height - p[1]
            draw.line([(x - tick, y), (x, y)], fill="black", width=1)
            if text:
                b = draw.textbbox((x - tick - pad, y), text, font=font, anchor="rm")
                draw.text((x - tick - pad, y), text, fill="black", font=font, anchor="rm")
                extent = max(extent, x - b[0])
    name = axis.label.get_text()
    if name:
        lfont = _font(max(6, round(axis.label.get_fontsize() * px_per_pt)))
        gap = max(extent, tick) + 4 * px_per_pt
        if x_axis:
            draw.text(((box.x0 + box.x1) / 2, height - box.y0 + gap), name, fill="black",
                      font=lfont, anchor="mt")
        else:
            _vertical_text(img, name, lfont, box.x0 - gap, height - (box.y0 + box.y1) / 2)


def _vertical_text(img, text: str, font, right: float, middle: float) -> None:
    """``text`` rotated 90° (reading upwards), its right edge at x=``right``, centred on
    ``middle``."""
    mask = _rotated_mask(text, font)
    x, y = round(right - mask.width), round(middle - mask.height / 2)
    img.paste((0, 0, 0), (x, y, x + mask.width, y + mask.height), mask)


@lru_cache(maxsize=64)
def _rotated_mask(text: str, font):
    from PIL import Image, ImageDraw

    left, top, right, bottom = font.getbbox(text)
    mask = Image.new("L", (right - left + 2, bottom - top + 2), 0)
    ImageDraw.Draw(mask).text((1 - left, 1 - top), text, fill=255, font=font)
    return mask.rotate(90, expand=True)
