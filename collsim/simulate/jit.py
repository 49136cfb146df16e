"""The engine's loops compiled by numba where it is installed (``jit``), plain Python where it is not.

``collsim.simulate.events`` and ``collsim.simulate.heaps`` are written in the subset of Python numba compiles
(numpy arrays, scalars, loops): compiled they run a transfer in well under a microsecond, as plain Python
(numba missing, or ``COLLSIM_NO_JIT=1``) the same code gives the same times a hundred times slower. Compiled
code is cached on disk (numba's ``cache=True``: beside the module, or numba's user cache when the package is
read-only), so only the first simulation on a machine pays the compilation, a few seconds.
"""
from __future__ import annotations

import os

try:
    if os.environ.get("COLLSIM_NO_JIT"):
        raise ImportError("COLLSIM_NO_JIT is set")
    from numba import njit
except ImportError:            # numba missing or turned off: the same functions run as plain Python
    njit = None

COMPILED = njit is not None


def jit(fn):
    """``fn`` compiled (no Python objects, cached on disk), or ``fn`` itself without numba."""
    return njit(cache=True, nogil=True)(fn) if COMPILED else fn
