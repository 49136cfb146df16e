"""One colour-blind-safe palette for every picture (Okabe and Ito, "Color Universal Design", 2008;
the copy colour is Paul Tol's "wine", from his colour-blind-safe schemes).

Chunk grids: the fraction of the ranks' data a cell holds is a single-hue blue ramp (it differs in
lightness, which every colour vision keeps); the exact sum is yellow, a contribution counted twice
vermillion and also marked with a cross, so no state is told by hue alone. Transfers (arrows in the
grid, bars in timelines): reduce orange, copy wine (dark purple-red). Curves: the Okabe-Ito colours
in a fixed order, each with its own line style. ``tests/viz/test_viz.py`` checks that these colours
stay apart (CIELAB distance) under simulated protanopia, deuteranopia and tritanopia.
"""
from __future__ import annotations

OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "purple": "#CC79A7",
             "vermillion": "#D55E00", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000"}
EXACT = OKABE_ITO["yellow"]          # a cell holding the exact sum
# a cell holding some contribution more than once (also crossed)
OVER = OKABE_ITO["vermillion"]
REDUCE = OKABE_ITO["orange"]         # a reduce transfer (the receiver adds)
# a copy transfer (the receiver overwrites): Tol's wine, dark enough to
COPY = "#882255"
                                     # stand apart from the darker blues for protanopes too
HELD_RAMP = ("Blues", 0.12, 0.72)    # colormap and range for "fraction of the ranks' data held"
CURVE_COLOURS = tuple(OKABE_ITO[k] for k in ("blue", "orange", "green", "purple", "vermillion",
                                             "sky", "black"))
CURVE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (3, 1)), (0, (1, 1)))


def curve_style(i: int) -> dict:
    """Line keywords of the i-th curve: an Okabe-Ito colour and a line style (both cycle)."""
    return {"color": CURVE_COLOURS[i % len(CURVE_COLOURS)],
            "linestyle": CURVE_STYLES[i % len(CURVE_STYLES)]}


def rgba(hex_colour: str, alpha: float = 1.0) -> tuple:
    """(r, g, b, alpha) floats of a '#rrggbb' colour."""
    h = hex_colour.lstrip("#")
    return tuple(int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)) + (alpha,)
