"""Closed-form times of every collective (AllReduce by default; ``collective=``: a collective's
nccl-tests name, ``collsim.core.collective``): the front door to every algorithm's record
(``collsim.algorithms.BY_COLLECTIVE``).

Symbols: P ranks, N bytes per rank (``nbytes``), alpha (s) and beta (s/byte) of a link, gamma
(s/byte) of the receiver's reduction, C channels, S slices, chunks per tree, G GPUs per node,
n = P / G nodes, alpha_i / beta_i the inter-node link, alpha_n / beta_n the NVLS link (GPU <->
NVSwitch). A transfer of b bytes lasts alpha + b beta (+ b gamma when it reduces) and holds its
ports b beta. N = 0 costs 0: every schedule is empty (NCCL returns at once too).

Each record's ``closed_form`` follows its schedule's steps. AllReduce's: every message of a channel
pays its whole alpha + b beta before the next one leaves; the step chains are
``collsim.algorithms.timing.chain`` (with one channel simply the sum of the step durations), as for
ring AllGather and ReduceScatter; the Broadcast and Reduce chains, AlltoAll and SendRecv stream
their pieces through each port, paying alpha once per hop; PAT's is a bound (its record). The
forms are statements about the simulation under contention policy "schedule" (``collsim.simulate``:
every port serves its transfers one at a time in schedule order): ``Algorithm.exact`` says when a
form is exact there (the tests assert equality with the event simulation on a uniform topology, or
nodes x G for the hierarchical ones, for N a multiple of ``granularity`` elements' bytes) and what
bound it is otherwise (the tests assert the bound), and for AllReduce what holds under the default
policy "fair", where the channels share every port and pay their latencies together; for other N
AllReduce's formula at N rounded up to the granularity is an upper bound. ``FORMULAS`` gives each
AllReduce form in words, each record's ``formula`` its own.
"""
from __future__ import annotations

import numpy as np

from collsim.algorithms import ALGORITHMS, get, validate
from collsim.algorithms.timing import Links
from collsim.errors import CollsimError

FORMULAS = {name: a.formula for name, a in ALGORITHMS.items()}
LINK_KEYS = ("alpha_inter", "beta_inter", "alpha_nvls", "beta_nvls")


def granularity(name: str, ranks: int, collective: str = "all_reduce", **params) -> int:
    """Element count multiple for which ``closed_form`` is exact (equal pieces everywhere); chunks
    default to 1 here."""
    q = validate(name, ranks, collective, **params)
    algo = get(name, collective)
    if "chunks" in algo.params:
        q.setdefault("chunks", 1)
    return int(algo.granularity(int(ranks), q))


def closed_form(name: str, ranks: int, nbytes, alpha: float, beta: float,
                gamma: float = 0.0, collective: str = "all_reduce", **params):
    """Time in seconds of ``collective``'s (default AllReduce) algorithm ``name`` on ``ranks`` ranks
    for ``nbytes`` bytes per rank buffer (scalar or array; the collective's size as nccl-tests
    counts it), link ``alpha`` (s) and ``beta`` (s/byte), reduction ``gamma`` (s/byte). params: the
    algorithm's (``collsim.algorithms.DEFAULTS``: channels, slices, chunks -- default the record's
    ``default_chunks`` per size --, gpus_per_node, inter), and the links alpha_inter, beta_inter
    (algorithms over nodes) and alpha_nvls, beta_nvls (NVLS), each defaulting to alpha, beta.
    Formulas: ``FORMULAS`` (AllReduce's), each record's ``formula``, and the module docstring."""
    links = {k: params.pop(k) for k in LINK_KEYS if k in params}
    algo = get(name, collective)
    q = validate(name, ranks, collective, **params)
    if algo.closed_form is None:
        raise CollsimError(f"{algo.collective} algorithm {name} has no closed form: simulate it "
                           f"(collsim simulate --coll {algo.collective} --algo {name})")
    scalar = np.ndim(nbytes) == 0
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.float64))
    for what, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)) + tuple(links.items()):
        if v is None or not np.isfinite(v) or v < 0:
            raise CollsimError(f"{what} must be a finite number >= 0, got {v!r}")
    if (nb < 0).any() or not np.isfinite(nb).all():
        raise CollsimError("nbytes must be finite and >= 0")
    if any(k in links for k in LINK_KEYS[:2]) and "gpus_per_node" not in algo.needs:
        raise CollsimError(f"algorithm {name!r} takes no alpha_inter/beta_inter")
    if any(k in links for k in LINK_KEYS[2:]) and not name.startswith("nvls"):
        raise CollsimError(f"algorithm {name!r} takes no alpha_nvls/beta_nvls")
    ln = Links(float(alpha), float(beta), float(gamma), **{k: float(v) for k, v in links.items()})
    p = int(ranks)
    if algo.default_chunks is None or "chunks" in q:
        out = algo.closed_form(p, nb, ln, q)
    # chunks follow the size as build_schedule chooses them
    else:
        cs = np.array([algo.default_chunks(int(b), p, q) for b in nb.astype(np.int64)])
        out = np.zeros_like(nb)
        for c in np.unique(cs):
            sel = cs == c
            out[sel] = algo.closed_form(p, nb[sel], ln, {**q, "chunks": int(c)})
    out = np.where(nb > 0, out, 0.0)
    return float(out[0]) if scalar else out


def fit_alpha_beta(sizes, times_s, algorithm: str = "ring", ranks: int = 2) -> tuple[float, float]:
    """alpha (s), beta (s/byte) of ``cost.closed_form`` by least squares on relative error."""
    s, t = np.asarray(sizes, float), np.asarray(times_s, float)
    if s.size < 2 or s.shape != t.shape or (t <= 0).any():
        raise CollsimError("fit_alpha_beta needs at least two (size, time > 0) pairs")
    a = np.column_stack([closed_form(algorithm, ranks, s, 1.0, 0.0),
                         closed_form(algorithm, ranks, s, 0.0, 1.0)])
    (alpha, beta), *_ = np.linalg.lstsq(a / t[:, None], np.ones_like(t), rcond=None)
    return max(float(alpha), 0.0), max(float(beta), 0.0)


def rail_ring(ranks: int, nbytes, gpus_per_node: int, nics_per_node: int, alpha: float, beta: float,
              alpha_inter: float, beta_inter: float, channels: int | None = None):
    """An approximation (not an exact closed form) of NCCL's ring across nodes: ``ring`` on C
    channels (default 2G, as NCCL runs on H100/H200 nodes) whose steps pay the latency of the hop
    they cross, one hop in G between nodes (alpha_eff = ((G - 1) alpha + alpha_inter) / G), and move
    N/P bytes per GPU at the slower of the GPU's intra-node port (``beta``) and its share of the
    node's NICs: the C rings leave a node on all ``nics_per_node`` NICs together, so beta_eff =
    max(beta, beta_inter / nics_per_node). One node: the plain ring.

    The event simulation of those rail rings (``build_schedule("ring", ..., channels=C,
    gpus_per_node=G)`` on a preset) agrees within 20% from 64 KiB to 1 GiB on 2-4 nodes of
    ``ib-100g``/``ib-400g``/``eth-100g`` (``tests/test_cost.py``): the simulated channels share the
    ports and move in step, paying their latency together (up to 19% slower around 16 MiB), and keep
    the NICs busier than the form's one port from 256 MiB (up to 7% faster)."""
    g, nics = int(gpus_per_node), int(nics_per_node)
    if g < 1 or ranks % g or not 1 <= nics <= g:
        raise CollsimError("rail_ring needs gpus_per_node dividing ranks and 1 <= nics_per_node <= "
                           f"gpus_per_node, got ranks {ranks}, gpus_per_node {g}, nics_per_node "
                           f"{nics}")
    c = 2 * g if channels is None else channels
    if ranks == g:
        return closed_form("ring", ranks, nbytes, alpha, beta, channels=c)
    return closed_form("ring", ranks, nbytes, ((g - 1) * alpha + alpha_inter) / g,
                       max(beta, beta_inter / nics), channels=c)
