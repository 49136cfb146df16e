"""Closed-form building blocks, shared by the algorithms' records (``Algorithm.closed_form``): the
textbook (store-and-forward) alpha-beta model, where every message of a channel pays its whole
alpha + b beta before the next one leaves. The simulation (``collsim.simulate``) overlaps a
message's latency with the next message's bytes, so these forms are exact where a channel's next
message waits for data anyway (a ring of whole chunks, halving-doubling on one channel) and upper
bounds elsewhere (``Algorithm.exact`` says which; ``tests/test_cost.py`` checks both against the
simulation under schedule-order contention).

Units: seconds, bytes, seconds per byte. A transfer of b bytes lasts d = alpha + b beta (+ b gamma
if it reduces) and holds its channel for d and its ports for h = b beta.

``chain``: K steps in which every rank in use moves one transfer per channel on each of its ports,
in channel order (C channels), every transfer of step k lasting d_k and holding its port h_k, and
every transfer of step k + 1 following its own channel's transfer of step k (its data or its slot).
The critical path then walks the channels 0..C-1 along one port's holds (C - 1 holds of h), and
where the ports of step k are also the ports of step k + 1 (``wrap[k]``) it may go on from channel
C - 1 to channel 0 of step k + 1 after one more hold h_k instead of a whole d_k. Longest path:

    T = sum_k d_k + max over cuts of the steps into intervals I_1..I_J (a cut only after a step k
        with wrap[k]) of  sum_j (C - 1) max_{k in I_j} h_k  -  sum_{cuts k} (d_k - h_k)

With one channel T = sum_k d_k (every step costs its duration: the slots bind). With equal h and
v_k = (C - 1) h - (d_k - h) this is sum_k d_k + (C - 1) h + sum_{k < K-1} max(0, v_k): each step
after which the ports run on adds v_k when it is positive (bandwidth-bound: the ports stay busy and
the alphas hide behind other channels' bytes), nothing otherwise (latency-bound).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Links:
    """alpha (s), beta (s/byte) of the link of one node (intra), between nodes (inter) and between a
    GPU and its NVSwitch (nvls); gamma (s/byte) of a reduction."""

    alpha: float
    beta: float
    gamma: float = 0.0
    alpha_inter: float | None = None
    beta_inter: float | None = None
    alpha_nvls: float | None = None
    beta_nvls: float | None = None

    def inter(self) -> tuple[float, float]:
        return (self.alpha if self.alpha_inter is None else self.alpha_inter,
                self.beta if self.beta_inter is None else self.beta_inter)

    def nvls(self) -> tuple[float, float]:
        return (self.alpha if self.alpha_nvls is None else self.alpha_nvls,
                self.beta if self.beta_nvls is None else self.beta_nvls)


def step(m, alpha: float, beta: float, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """(d, h) of a step moving ``m`` bytes (array over
    sizes): d = alpha + m (beta + gamma), h = m beta."""
    h = m * beta
    return alpha + h + m * gamma, h


def chain(steps: list, channels: int, wrap=None) -> np.ndarray:
    """Exact time of the step chain in the module docstring. ``steps``: list of (d, h, count) with
    d, h arrays over sizes (count identical steps each, the ports running on between them);
    ``wrap``: per entry, whether the ports run on after its last step (default all; the last step
    never cuts)."""
    kept = [(x, w) for x, w in zip(steps, [True] * len(steps) if wrap is None else wrap)
            if x[2] > 0]
    if not kept:
        return 0.0
    steps, wrap = [x for x, _ in kept], [w for _, w in kept]
    total = sum(count * d for d, _, count in steps)
    if channels == 1:
        return total
    c1 = channels - 1
    hs = np.stack([h for _, h, _ in steps])
    if np.all(hs == hs[:1]):                                   # equal holds: cut wherever it pays
        h = hs[0]
        gain = c1 * h
        for j, (d, _, count) in enumerate(steps):
            cuts = count - 1 + (wrap[j] and j < len(steps) - 1)
            gain = gain + cuts * np.maximum(0.0, c1 * h - (d - h))
        return total + gain
    n = np.shape(total)[0] if np.ndim(total) else 1
    cols = [[(float(np.broadcast_to(d, (n,))[i]), float(np.broadcast_to(h, (n,))[i]), count, w)
             for (d, h, count), w in zip(steps, wrap)] for i in range(n)]
    return total + np.array([_cuts(col, c1) for col in cols]).reshape(np.shape(total))


def _cuts(entries: list, c1: int) -> float:
    """max over cuts of sum_j c1 max h - sum (d - h) at the cuts, for one size (``entries``: (d, h,
    count, wrap after the last) runs of identical steps). A monotonic stack holds, for the open
    interval's possible starts grouped by their max h so far (decreasing), the best value before
    them and the best over the stack up to there: O(steps)."""
    before = 0.0                    # best value of the steps before a new interval (0 at the start)
    stack: list = []                # [h max, best start value, best value over the stack so far]
    last = len(entries) - 1
    for j, (d, h, count, w) in enumerate(entries):
        for k in range(count):
            top = before
            while stack and stack[-1][0] <= h:
                top = max(top, stack.pop()[1])
            value = top + c1 * h
            stack.append((h, top, max(stack[-1][2], value) if stack else value))
            cut = k < count - 1 or (w and j < last)
            before = stack[-1][2] - (d - h) if cut else -np.inf
    return stack[-1][2]
