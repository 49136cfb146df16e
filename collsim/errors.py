"""Errors that users can cause: the CLI prints them as one line and exits 2.

``require_int`` and ``require_number`` check one value and name it in the error, so every
module checks its inputs the same way; ``describe`` shows a value from a file in such a message,
short and on one line, whatever it holds.
"""
from __future__ import annotations

import math
import numbers
import re
import reprlib


class CollsimError(ValueError):
    """Bad input (an argument, a file, a schedule) described in one line."""


class CollsimWarning(UserWarning):
    """Input collsim used in part (a log cut off inside a row), described in one line; the CLI
    prints it as ``collsim: warning: ...``."""


class _Short(reprlib.Repr):
    def repr_int(self, x, level):  # repr of a huge int is slow, or refused past 4300 digits
        return (super().repr_int(x, level) if x.bit_length() < 200
                else f"<an integer of {x.bit_length()} bits>")


_SHORT = _Short()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 2, 40, 40, 40
_SHORT.maxdict = _SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxset = 4
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_.+-]{1,40}")


def describe(value) -> str:
    """``value`` as a short one-line repr for an error message: at most about 60 characters,
    nested and long values elided (``reprlib``: the cost does not grow with the value), control
    characters escaped (repr does)."""
    return _SHORT.repr(value)


def describe_key(key) -> str:
    """A JSON object key for a dotted error path (``link_GBps.nvlink``): a short plain name as it
    is, anything else (long, odd characters) as ``describe`` shows it."""
    return key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else describe(key)


def require_int(what: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int, or CollsimError naming ``what``: not a whole number (bools are not),
    below ``minimum`` or above ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise CollsimError(f"{what} must be an integer, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise CollsimError(f"{what} must be >= {minimum}, got {describe(value)}")
    if maximum is not None and value > maximum:
        raise CollsimError(f"{what} must be <= {maximum}, got {describe(value)}")
    return int(value)


def require_number(what: str, value, minimum: float | None = None, positive: bool = False,
                   maximum: float | None = None) -> float:
    """``value`` as a finite float, or CollsimError naming ``what``: not a number (bools are not),
    NaN or infinite, below ``minimum``, not > 0 when ``positive``, or above ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise CollsimError(f"{what} must be a finite number, got {describe(value)}")
    if minimum is not None and value < minimum:
        raise CollsimError(f"{what} must be >= {minimum:g}, got {value:g}")
    if positive and not value > 0:
        raise CollsimError(f"{what} must be > 0, got {value:g}")
    if maximum is not None and value > maximum:
        raise CollsimError(f"{what} must be <= {maximum:g}, got {value:g}")
    return float(value)
