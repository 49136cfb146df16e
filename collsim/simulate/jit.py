"""The engine's loops as kernels: plain Python for small runs, compiled by numba for large ones (``pick``).

``collsim.simulate.events``, ``collsim.simulate.heaps`` and ``collsim.simulate.deps`` are written in the subset
of Python numba compiles (numpy arrays, scalars, loops) and marked ``@jit``: a ``Kernel``. Called, a kernel runs
as plain Python; ``pick(kernel, work)`` hands back its compiled version when ``work`` (transfers, or cells) is
at least ``COMPILE_FROM``, where compiled code's well under a microsecond a transfer pays for loading numba and
its cached code (about 0.6 s and 120 MB on a 2-core machine), else the plain function (tens of microseconds a
transfer). Both give the same times. numba is imported on the first compiled call only, so that start-up and
small runs never pay for it; compiled code is cached on disk (numba's ``cache=True``: beside the module, or
numba's user cache when the package is read-only), so only the first large simulation on a machine compiles,
a few seconds. Without numba (or with ``COLLSIM_NO_JIT=1``) every run is plain Python.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import types

COMPILED = not os.environ.get("COLLSIM_NO_JIT") and importlib.util.find_spec("numba") is not None
COMPILE_FROM = 40_000   # transfers (or cells) from which compiled code is faster, numba's loading included


class Kernel:
    """A function of numba's subset (module docstring): calling it runs ``py_func``; ``compiled()`` is numba's
    dispatcher, whose calls of other kernels (globals of its module) go to their compiled versions."""

    def __init__(self, fn):
        self.py_func = fn
        self._compiled = None
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return self.py_func(*args)

    def compiled(self):
        if self._compiled is None:
            from numba import njit

            fn = self.py_func
            called = {k: fn.__globals__[k].compiled() for k in fn.__code__.co_names
                      if isinstance(fn.__globals__.get(k), Kernel)}
            scope = {**fn.__globals__, **called}
            twin = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
            twin.__qualname__, twin.__module__ = fn.__qualname__, fn.__module__
            self._compiled = njit(cache=True, nogil=True)(twin)
        return self._compiled


def jit(fn) -> Kernel:
    """``fn`` as a kernel (module docstring)."""
    return Kernel(fn)


def pick(kernel: Kernel, work: int):
    """The compiled kernel for ``work`` of at least ``COMPILE_FROM`` (numba present and on), else its plain
    Python function."""
    return kernel.compiled() if COMPILED and work >= COMPILE_FROM else kernel.py_func
