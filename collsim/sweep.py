"""Sweeps over message sizes with nccl-tests' vocabulary.

* ``sizes(min_bytes, max_bytes, factor)``: nccl-tests' ``-b -e -f`` loop
  (``for size = b; size <= e; size *= f``); the default 8 B .. 16 GiB, x2 gives
  32 sizes.
* ``algbw_GBps = bytes / 1e9 / seconds``; ``busbw_GBps = algbw x 2(n-1)/n``
  (nccl-tests' AllReduce bus bandwidth, the same factor for every algorithm).
* ``sweep(...)``: a table (dict of numpy arrays, one row per algorithm and
  size, algorithm-major, sizes ascending) with columns ``algo``, ``bytes``
  (bytes), ``count`` (elements of ``itemsize`` bytes: bytes // itemsize, as
  nccl-tests), ``time_s``, ``algbw_GBps``, ``busbw_GBps``. ``method="closed"``
  uses ``collsim.cost.closed_form``; ``method="simulate"`` builds every
  schedule and simulates it on ``topology`` (default: the uniform topology of
  alpha and beta). Simulation groups the sizes whose schedules have the same
  structure (for one algorithm, every size large enough that no chunk is
  empty) and simulates each group in one pass (``simulate_times``).
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import build_schedule, get
from collsim.core.budget import simulable
from collsim.core.collective import ALLREDUCE
from collsim.cost import closed_form
from collsim.errors import CollsimError, require_int
from collsim.machine.topology import Topology
from collsim.simulate import simulate_times
from collsim.units import algbw_GBps


def sizes(min_bytes: int = 8, max_bytes: int = 16 * 2**30, factor: int = 2) -> np.ndarray:
    """Message sizes in bytes: min_bytes, min_bytes*factor, ... up to max_bytes (int64)."""
    lo = require_int("min_bytes", min_bytes, 1)
    hi = require_int("max_bytes", max_bytes, lo)
    f = require_int("factor", factor, 2)
    out = [lo]
    while out[-1] * f <= hi:
        out.append(out[-1] * f)
    return np.array(out, dtype=np.int64)


def _params_for(name: str, params: dict, topology: Topology | None) -> tuple[dict, dict]:
    """(build_schedule kwargs, closed_form kwargs): the parameters algorithm ``name`` takes, and
    what the topology implies (gpus_per_node across nodes, direct rings on boards without
    NVSwitch)."""
    algo = get(name)                                     # the one-line "unknown algorithm" error
    if algo.teaching_only:
        raise CollsimError(f"{name} is a teaching example, not an AllReduce: sweeps take the "
                           "algorithms only")
    build = {k: v for k, v in params.items() if k in algo.params}
    if "gpus_per_node" in algo.params and "gpus_per_node" not in build and topology is not None \
            and (topology.nodes > 1 or "gpus_per_node" in algo.needs):
        build["gpus_per_node"] = topology.gpus_per_node
    if "direct" in algo.params and topology is not None and topology.links_per_pair:
        build["direct"] = True
    levels = {k: v for k, v in params.items() if k in ("alpha_inter", "beta_inter")
              and "gpus_per_node" in algo.needs}
    return build, {**build, **levels}


def _simulated_times(name, ranks, counts, itemsize, topology, gamma, kw, policy) -> np.ndarray:
    todo = sorted(set(counts.tolist()))                  # sizes below itemsize share count 0
    scheds = (build_schedule(name, ranks, c, itemsize, **kw) for c in todo)
    by_count = dict(zip(todo,
                        simulate_times(simulable(scheds), topology, gamma, policy=policy).tolist()))
    return np.array([by_count[c] for c in counts.tolist()])


def sweep(algos, ranks: int, sizes, *, alpha: float | None = None, beta: float | None = None,
          gamma: float = 0.0, method: str = "closed", topology: Topology | None = None,
          itemsize: int = 4, policy: str = "fair", **params) -> dict[str, np.ndarray]:
    """Time, algbw and busbw of each algorithm at each size (bytes); see the module docstring.

    alpha (s), beta (s/byte), gamma (s/byte): the closed forms' link, and the
    uniform topology simulated when ``topology`` is None. Each algorithm gets
    the ``params`` it takes (channels, gpus_per_node, slices, chunks, inter; and
    alpha_inter, beta_inter for the closed forms of hierarchical ones), so one
    sweep can give ring its slices and tree its chunks. A simulated
    algorithm over nodes defaults gpus_per_node to the topology's; ``policy``: the simulation's
    contention policy (``collsim.simulate.reference``).
    """
    algos = [algos] if isinstance(algos, str) else list(algos)
    ranks = require_int("ranks", ranks, 1)
    itemsize = require_int("itemsize", itemsize, 1)
    size_arr = np.asarray(sizes)
    if size_arr.ndim != 1 or len(size_arr) == 0 or not np.issubdtype(size_arr.dtype, np.integer) \
            or size_arr.min() < 0:
        raise CollsimError("sizes must be a non-empty list of integer byte counts >= 0")
    counts = size_arr.astype(np.int64) // itemsize
    nbytes = counts * itemsize
    if method not in ("closed", "simulate"):
        raise CollsimError(f"unknown sweep method {method!r}: expected 'closed' or 'simulate'")
    if (method == "closed" or topology is None) and (alpha is None or beta is None):
        raise CollsimError(f"sweep method {method!r} needs alpha and beta"
                           + ("" if method == "closed" else " (or a topology)"))
    if method == "simulate" and topology is None:
        topology = Topology.uniform(ranks, alpha, beta)
    times = []
    for name in algos:
        build, closed = _params_for(name, params, topology)
        if method == "closed":
            times.append(np.asarray(closed_form(name, ranks, nbytes, alpha, beta, gamma, **closed),
                                    dtype=float))
        else:
            times.append(_simulated_times(name, ranks, counts, itemsize=itemsize, topology=topology,
                                          gamma=gamma, kw=build, policy=policy))
    time_s = np.concatenate(times)
    size_col = np.tile(nbytes, len(algos))
    alg = algbw_GBps(size_col, time_s)
    return {"algo": np.repeat(np.array(algos, dtype=object), len(nbytes)), "bytes": size_col,
            "count": np.tile(counts, len(algos)), "time_s": time_s, "algbw_GBps": alg,
            "busbw_GBps": alg * ALLREDUCE.busbw_factor(ranks)}


def to_records(table: dict[str, np.ndarray]) -> list[dict]:
    """The table as a list of JSON-ready dicts, one per row."""
    cols = {k: v.tolist() for k, v in table.items()}
    return [dict(zip(cols, row)) for row in zip(*cols.values())]
