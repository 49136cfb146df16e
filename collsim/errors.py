"""Errors that users can cause: the CLI prints them as one line and exits 2.

``require_int`` and ``require_number`` check one value and name it in the error, so every
module checks its inputs the same way.
"""
from __future__ import annotations

import math
import numbers


class CollsimError(ValueError):
    """Bad input (an argument, a file, a schedule) described in one line."""


def require_int(what: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int, or CollsimError naming ``what``: not a whole number (bools are not),
    below ``minimum`` or above ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CollsimError(f"{what} must be an integer, got {value!r:.60}")
    if minimum is not None and value < minimum:
        raise CollsimError(f"{what} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise CollsimError(f"{what} must be <= {maximum}, got {value}")
    return int(value)


def require_number(what: str, value, minimum: float | None = None, positive: bool = False) -> float:
    """``value`` as a finite float, or CollsimError naming ``what``: not a number (bools are not),
    NaN or infinite, below ``minimum``, or not > 0 when ``positive``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise CollsimError(f"{what} must be a finite number, got {value!r:.60}")
    if minimum is not None and value < minimum:
        raise CollsimError(f"{what} must be >= {minimum:g}, got {value:g}")
    if positive and not value > 0:
        raise CollsimError(f"{what} must be > 0, got {value:g}")
    return float(value)
