"""The grid at large sizes: chunk columns grouped into at most ``MAX_COLUMNS`` bins, and arrows that
share a column spread across it (``collsim.viz.grid.GridView`` uses both).

A bin's colour is its atoms' weighted mean fraction of the ranks' data (weights: the atoms' element
counts), the exact-sum yellow only when every atom in it holds the exact sum, vermillion (crossed)
when any atom holds a contribution twice: nothing wrong hides in an average. A transfer's arrow sits
in the middle of the bins its elements cover; transfers of one step with the same sender, receiver,
operation and bins are drawn once.
"""
from __future__ import annotations

import numpy as np

MAX_COLUMNS = 64


def column_bins(bounds: np.ndarray, max_columns: int = MAX_COLUMNS) -> np.ndarray:
    """Bin index of every atom (``bounds``: the checker's atom boundaries): the identity up to
    ``max_columns`` atoms, else ``max_columns`` bins of consecutive atoms, balanced by element
    count."""
    n = len(bounds) - 1
    if n <= max_columns:
        return np.arange(n)
    mid = (bounds[:-1] + bounds[1:]) / 2 - bounds[0]
    return np.minimum((mid * max_columns // (bounds[-1] - bounds[0])).astype(int), max_columns - 1)


def binned(distinct: np.ndarray, over: np.ndarray, bins: np.ndarray, weights: np.ndarray,
           ranks: int):
    """(mean distinct, any over, all exact) per (rank, bin) of one step's (ranks, atoms) state."""
    nb = int(bins.max()) + 1
    wsum = np.bincount(bins, weights, nb)
    mean = np.stack([np.bincount(bins, row * weights, nb) for row in distinct]) / wsum
    anyover = np.stack([np.bincount(bins, row, nb) for row in over.astype(float)]) > 0
    exact_atoms = ((distinct == ranks) & ~over).astype(float)
    allexact = np.stack([np.bincount(bins, row, nb)
                         for row in exact_atoms]) == np.bincount(bins, minlength=nb)
    mean = np.where(allexact, ranks, np.minimum(mean, ranks - 1e-6 if ranks > 1 else mean))
    return mean, anyover


def arrow_columns(first: np.ndarray, end: np.ndarray, src, dst, op, bins: np.ndarray,
                  ranks: int = 8):
    """(x, width, keep) of a step's arrows: x in bin units, spread across the column where several
    arrows share it, and which transfers to keep (one per sender, receiver, op and bins). Widths
    shrink where columns are few and ranks many, so an arrow stays taller than wide on a roughly
    square grid."""
    b0, b1 = bins[first], bins[end - 1]
    key = np.stack([src, dst, op, b0, b1], axis=1)
    _, keep = np.unique(key, axis=0, return_index=True)
    keep = np.sort(keep)
    centre = (b0[keep] + b1[keep]) / 2
    sign = np.sign(np.asarray(dst)[keep] - np.asarray(src)[keep])
    n_columns = int(bins.max()) + 1
    # few, wide columns: keep arrows narrow on screen
    scale = min(1.0, n_columns / max(ranks, 8))
    x = centre + 0.12 * sign * scale
    width = np.full(len(keep), 0.16 * scale)
    col = np.round(centre * 2).astype(int)            # arrows whose centres fall on one column
    for c in np.unique(col):
        idx = np.flatnonzero(col == c)
        if len(idx) > 1:                              # side by side across the column, not on top
            span = b1[keep][idx[0]] - b0[keep][idx[0]] + 1
            x[idx] = centre[idx] - 0.4 * span + (np.arange(len(idx)) + 0.5) * 0.8 * span / len(idx)
            width[idx] = np.minimum(width[idx], 0.5 * 0.8 * span / len(idx))
    return x, width, keep
