"""The grid's colours: a cell's by the fraction of the ranks' contributions it holds
(``held_color``, ``cell_colors``: ``collsim.viz.palette``'s blues, yellow for the exact sum,
vermillion where a contribution is counted more than once), the transfers' (``REDUCE_RGBA``,
``COPY_RGBA``), and the legend explaining them, for a figure (``legend_handles``) or a widget
(``legend_html``). Shared by ``grid``, ``machine`` and ``tree_motion``."""
from __future__ import annotations

import html

import numpy as np

from collsim.viz import palette

REDUCE_RGBA = palette.rgba(palette.REDUCE, 0.9)
COPY_RGBA = palette.rgba(palette.COPY, 0.9)


def held_color(fraction):
    """RGBA of a cell holding ``fraction`` (0-1) of the ranks' contributions: pale to dark blue."""
    from matplotlib import colormaps

    name, lo, hi = palette.HELD_RAMP
    return colormaps[name](lo + (hi - lo) * np.asarray(fraction, float))


def cell_colors(distinct: np.ndarray, over: np.ndarray, ranks: int) -> np.ndarray:
    """RGBA (…, 4) per cell: blues by fraction held, yellow for the exact sum, vermillion if
    over-counted."""
    rgba = held_color(distinct / max(ranks, 1))
    done = (distinct == ranks) & ~over
    rgba[done] = palette.rgba(palette.EXACT)
    rgba[over] = palette.rgba(palette.OVER)
    return rgba


def legend_handles():
    """Patches explaining the grid's colours (for a matplotlib legend): the blues are samples of
    ``held_color`` (a cell holding 2 of 8 ranks' data is the "¼" blue, not "own data only")."""
    from matplotlib.patches import Patch

    return [*(Patch(color=held_color(f), label=f"{t} of the ranks' data")
              for f, t in ((0.25, "¼"), (0.5, "½"), (0.75, "¾"))),
            Patch(color=palette.EXACT, label="exact sum"),
            Patch(color=palette.OVER, label="a contribution\ncounted twice (×)"),
            Patch(color=REDUCE_RGBA[:3], label="reduce transfer\n(receiver adds)"),
            Patch(color=COPY_RGBA[:3], label="copy transfer\n(receiver overwrites)")]


def legend_html() -> str:
    """The grid's colour legend as one line of HTML (cheaper than drawing it in the figure): a
    gradient bar for the fraction of ranks whose data a cell holds, then the other colours."""

    from matplotlib.colors import to_hex

    stops = ", ".join(to_hex(held_color(f)) for f in (0, 0.25, 0.5, 0.75, 1))
    bar = ("fraction of ranks' data held: 0<span "
           "style='display:inline-block;width:6em;height:0.9em;margin:0 "
           f"0.3em;vertical-align:middle;background:linear-gradient(to right, {stops})'></span>1; "
           "black lines: node boundaries")
    items = (f"<span style='display:inline-block;width:0.9em;height:0.9em;margin:0 0.3em 0 0.8em;"
             f"background:{to_hex(h.get_facecolor())}'></span>"
             f"{html.escape(h.get_label().replace(chr(10), ' '))}"
             for h in legend_handles() if "ranks' data" not in h.get_label())
    return "<div style='font-size:85%'>" + bar + "".join(items) + "</div>"
