"""A port shared fairly by the transfers crossing it: processor sharing with a cap per transfer.

At any time the transfers on a port split its rate max-min fairly: each gets the same share, or its
cap (``Costs.share``, what one channel moves by itself) if that is less, the others splitting what
it leaves (``rates``). A transfer needs ``size`` seconds of the whole port; it is done when it has
been served that much. The reference loop calls ``rates``; the engine
(``collsim.simulate.ports.shares``) computes the same shares in compiled code.
"""
from __future__ import annotations

# service left (seconds) below which a transfer is done: the rounding of the virtual clock
EPS = 1e-12


def rates(caps: list[float]) -> list[float]:
    """Max-min fair shares of one port (its rate 1) among
    transfers that take at most ``caps`` of it."""
    order = sorted(range(len(caps)), key=caps.__getitem__)
    out, left, n = [0.0] * len(caps), 1.0, len(caps)
    for k, i in enumerate(order):
        level = left / (n - k)
        r = caps[i] if caps[i] < level else level
        out[i] = r
        left -= r
    return out
