"""The engine's loops as kernels: plain Python for small
runs, compiled by numba for large ones (``pick``).

``collsim.simulate.events``, ``collsim.simulate.ports``, ``collsim.simulate.heaps`` and
``collsim.simulate.deps`` are written in the subset of Python numba compiles (numpy arrays,
scalars, loops) and marked ``@jit``: kernels.
Called, a kernel runs as plain Python; ``pick(kernel, work)`` hands back its compiled version when
``work`` (transfers, or cells) is at least ``COMPILE_FROM`` (``collsim.core.budget``), where
compiled code (well under a microsecond a transfer) pays for loading numba and its cached code
(about 0.6 s and 120 MB on a 2-core machine), else the plain function (tens of microseconds a
transfer). Both give the same times. numba is imported on the first compiled call only, so that
start-up and small runs never pay for it; compiled code is cached on disk (numba's ``cache=True``:
beside the module, or numba's user cache when the package is read-only), so only the first large
simulation on a machine compiles, a few seconds. Without numba (or with ``COLLSIM_NO_JIT=1``) every
run is plain Python.
"""
from __future__ import annotations

import importlib.util
import os
import types

from collsim.core.budget import COMPILE_FROM

COMPILED = not os.environ.get("COLLSIM_NO_JIT") and importlib.util.find_spec("numba") is not None


_TWINS: dict = {}        # kernel -> its compiled twin
_PLAIN = [0]             # the work this process has run in plain Python


def jit(fn):
    """``fn``, marked as a kernel (module docstring): called, it runs as plain Python."""
    fn.kernel = True
    return fn


def compiled(fn):
    """numba's dispatcher of kernel ``fn``, compiled on first call (numba imported then); the
    kernels it calls (globals of its module) are their compiled twins in it."""
    if fn not in _TWINS:
        from numba import njit

        called = {k: compiled(fn.__globals__[k]) for k in fn.__code__.co_names
                  if getattr(fn.__globals__.get(k), "kernel", False)}
        twin = types.FunctionType(fn.__code__, {**fn.__globals__, **called}, fn.__name__,
                                  fn.__defaults__, fn.__closure__)
        twin.__qualname__, twin.__module__ = fn.__qualname__, fn.__module__
        _TWINS[fn] = njit(cache=True, nogil=True)(twin)
    return _TWINS[fn]


def pick(kernel, work: int):
    """The compiled ``kernel`` (numba present and on) for ``work`` of at least ``COMPILE_FROM``, or
    once this process has loaded numba or run ``COMPILE_FROM`` of work in plain Python (many small
    runs, as a sweep of every algorithm and protocol makes, cost what one large one does); else the
    kernel itself (plain Python)."""
    if COMPILED and (work >= COMPILE_FROM or _TWINS or _PLAIN[0] >= COMPILE_FROM):
        return compiled(kernel)
    _PLAIN[0] += work
    return kernel
