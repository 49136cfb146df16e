"""A Hockney link (``Link``: alpha seconds per message, beta seconds per byte) and its form in
machine files (``link_from_dict``: ``bandwidth_GBps`` and ``latency_us``, or ``alpha_s`` and
``beta_s_per_byte``, each within ``collsim.inputs``' bounds); ``collsim.machine.topology`` builds
its machines from them."""
from __future__ import annotations

import math
from dataclasses import dataclass

from collsim.errors import CollsimError, describe
from collsim.inputs import MAX_SECONDS, MAX_SECONDS_PER_BYTE


@dataclass(frozen=True)
class Link:
    """A Hockney link: ``alpha`` seconds per message plus ``beta`` seconds per byte."""

    alpha: float
    beta: float

    def __post_init__(self):
        for name, v, lo in (("alpha", self.alpha, 0.0), ("beta", self.beta, None)):
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) \
                    or v < 0 or (lo is None and v == 0):
                raise CollsimError(f"link {name} must be a finite number "
                                   f"{'>= 0' if lo == 0 else '> 0'}, got {v!r}")

    @classmethod
    def from_GBps(cls, bandwidth_GBps: float, latency_us: float) -> "Link":
        """A link of ``bandwidth_GBps`` (1e9 bytes/s) and ``latency_us`` (microseconds)."""
        if not bandwidth_GBps > 0:
            raise CollsimError(f"link bandwidth must be > 0 GB/s, got {bandwidth_GBps!r}")
        return cls(float(latency_us) * 1e-6, 1.0 / (float(bandwidth_GBps) * 1e9))

    bandwidth_GBps = property(lambda self: 1.0 / self.beta / 1e9)
    latency_us = property(lambda self: self.alpha * 1e6)

    def time(self, nbytes) -> float:
        """Seconds to send ``nbytes`` bytes."""
        return self.alpha + nbytes * self.beta

    def to_dict(self) -> dict:
        return {"alpha_s": self.alpha, "beta_s_per_byte": self.beta}


_LINK_FORMS = ({"alpha_s", "beta_s_per_byte"}, {"bandwidth_GBps", "latency_us"})
_LINK_RANGES = {"alpha_s": (0.0, MAX_SECONDS), "beta_s_per_byte": (0.0, MAX_SECONDS_PER_BYTE),
                "latency_us": (0.0, MAX_SECONDS * 1e6),
                "bandwidth_GBps": (1e-9 / MAX_SECONDS_PER_BYTE, 1e9)}


def link_from_dict(d, where: str) -> Link:
    """The link a machine file's mapping describes; a one-line CollsimError naming ``where``
    otherwise."""
    if not isinstance(d, dict):
        raise CollsimError(f"{where} must be a mapping with bandwidth_GBps and latency_us "
                           f"(or alpha_s and beta_s_per_byte)")
    keys = set(d)
    form = next((f for f in _LINK_FORMS if keys == f), None)
    if form is None:
        raise CollsimError(f"{where} must have exactly bandwidth_GBps and latency_us, or alpha_s "
                           "and beta_s_per_byte; got "
                           f"{describe(', '.join(sorted(map(str, keys)))) if keys else 'nothing'}")
    for key in sorted(form):
        v = d[key]
        lo, hi = _LINK_RANGES[key]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) \
                or not lo <= v <= hi or (lo == 0 and key in ("beta_s_per_byte",) and v == 0):
            raise CollsimError(f"{where}.{key} must be a finite number from {lo:g} to "
                               f"{hi:g}{' (not 0)' if key == 'beta_s_per_byte' else ''}, got "
                               f"{describe(v)}")
    if "alpha_s" in form:
        return Link(float(d["alpha_s"]), float(d["beta_s_per_byte"]))
    return Link.from_GBps(d["bandwidth_GBps"], d["latency_us"])
