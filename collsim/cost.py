"""Closed-form alpha-beta-gamma AllReduce times (Thakur, Rabenseifner and Gropp style).

Symbols: P ranks, N bytes per rank (``nbytes``), alpha (s) and beta (s/byte)
of a link, gamma (s/byte) of the receiver's reduction, S ring slices, C tree
chunks, p' = 2^floor(log2 P), L = log2 p', f = 1 if P != p' else 0 (the fold
of non-power-of-two P), G GPUs per node, n = P / G nodes, alpha_i / beta_i the
inter-node link. A transfer of b bytes costs alpha + b beta (+ b gamma when it
reduces). N = 0 costs 0: every schedule is empty (NCCL returns at once too).

Exactness (shared timing semantics of ``collsim.simulate``): ring,
recursive-doubling, halving-doubling, direct and hierarchical with
inter="ring" equal the event simulation on ``Topology.uniform`` (hierarchical:
on nodes x G with nics_per_node = G) exactly when N is a multiple of
``granularity`` elements' bytes: every step then moves equal pieces, each
rank uses each port at most once per step and a dependency chain runs
through every step, so time = sum over steps. For other N the formula at N
rounded up to the granularity uses the largest piece of every step and is an
upper bound of the simulation (any dependency chain has at most one transfer
per step). direct and recursive-doubling move whole buffers: exact for all N.

Pipelined trees (tree, binary-tree, hierarchical-nccl, hierarchical with
inter="tree"): T = U (alpha + m beta + m gamma) + U (alpha + m beta), with
m = N / (T C) bytes per chunk (T = 1 tree for binary-tree, 2 otherwise; for
hierarchical N/G in place of N and alpha_i, beta_i, plus the two intra-node
ring terms). U is the number of reduce-up steps of the schedule, an integer
that depends on the tree shapes and C only (not on bytes or links):
``collsim.algorithms.tree_pipeline.up_slots`` list-schedules every (edge, chunk) with
unit durations, each in the first step after its children's chunk and after
its ports' previous use; the broadcast is the same U steps mirrored in time.
Typically U = 2C + 2D - 2 or 2C + 2D - 1 for tree depth D (the ports of an
inner rank carry two chunks per pipeline step), but not exactly a function
of D alone. Exact on ``Topology.uniform`` (and hierarchical inter="tree" on
nodes x G) for N a multiple of ``granularity``: every step moves equal
chunks of one op, no port is used twice in a step, every up transfer starts
exactly at its step (list scheduling), the first broadcast step reads what
the last reduce step wrote and every broadcast copy precedes one of the next
step, so a dependency chain runs through every step and time = sum over
steps. hierarchical-nccl on two link classes (alpha_i, beta_i != alpha, beta)
is the step sum with a step holding intra- and inter-node transfers costed at
the slower one: an upper bound of the simulation, not exact.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from collsim.algorithms import ALGORITHMS, default_chunks, validate
from collsim.algorithms.tree_pipeline import tree_plan, tree_steps
from collsim.errors import CollsimError

FORMULAS = {
    "ring": "2(P-1) S alpha + 2 (P-1)/P N beta + (P-1)/P N gamma",
    "recursive-doubling": "L (alpha + N beta + N gamma) + f (2 alpha + 2 N beta + N gamma)",
    "halving-doubling": "2 L alpha + 2 (p'-1)/p' N beta + (p'-1)/p' N gamma"
                        " + f (2 alpha + 2 N beta + N gamma)",
    "direct": "(P-1) (alpha + N beta + N gamma)",
    "hierarchical": "ring inside nodes on N over G + inter AllReduce on N/G over n nodes with "
                    "alpha_i, beta_i: [ring] 2(G-1) S alpha + 2 (G-1)/G N beta + (G-1)/G N gamma"
                    " + 2(n-1) S alpha_i + 2 (n-1)/n (N/G) beta_i + (n-1)/n (N/G) gamma;"
                    " [tree] the inter ring term replaced by U (2 alpha_i + 2 m beta_i + m gamma),"
                    " m = N/(2 G C)",
    "tree": "U (2 alpha + 2 m beta + m gamma), m = N/(2C), U up steps from tree_pipeline.up_slots",
    "binary-tree": "U (2 alpha + 2 m beta + m gamma), m = N/C, U up steps from tree_pipeline.up_slots",
    "hierarchical-nccl": "U (2 alpha + 2 m beta + m gamma), m = N/(2C) on one link class; with "
                         "alpha_i, beta_i: sum over steps of max over the link classes in the step "
                         "of alpha_L + m beta_L (+ m gamma up), an upper bound",
}


def _ring(p, nbytes, alpha, beta, gamma, slices):
    if p == 1:
        return np.zeros_like(nbytes)
    piece = nbytes / p
    return 2 * (p - 1) * (slices * alpha + piece * beta) + (p - 1) * piece * gamma


def _fold_terms(p):
    p2 = 1 << (p.bit_length() - 1)
    return p2, p2.bit_length() - 1, int(p != p2)


def _recursive_doubling(p, nbytes, alpha, beta, gamma):
    p2, lg, f = _fold_terms(p)
    return lg * (alpha + nbytes * (beta + gamma)) + f * (2 * alpha + 2 * nbytes * beta + nbytes * gamma)


def _halving_doubling(p, nbytes, alpha, beta, gamma):
    p2, lg, f = _fold_terms(p)
    part = (p2 - 1) / p2 * nbytes
    return (2 * lg * alpha + 2 * part * beta + part * gamma
            + f * (2 * alpha + 2 * nbytes * beta + nbytes * gamma))


def _tree_layout(name: str, p: int, g: int) -> tuple[str, int, int]:
    """(layout, positions, gpus_per_node) of the trees of a tree algorithm (``tree.tree_plan``)."""
    return {"binary-tree": ("binary", p, 1), "tree": ("double", p, 1),
            "hierarchical-nccl": ("nccl", p, g)}.get(name, ("double", p // g, 1))


@lru_cache(maxsize=4096)
def tree_step_counts(name: str, p: int, g: int, chunks: int) -> dict:
    """Number of non-empty steps per (direction, link classes) of a tree schedule:
    keys ("up"|"down", "intra"|"inter"|"both")."""
    layout = _tree_layout(name, p, g)
    plan, steps = tree_plan(*layout), tree_steps(*layout, chunks)
    counts = {}
    if len(steps.step) == 0:
        return counts
    inter = plan.child // g != plan.parent // g if name == "hierarchical-nccl" else \
        np.full(len(plan.child), name == "hierarchical")
    heads = np.flatnonzero(steps.slot == 0)
    n_inter = np.add.reduceat(inter[steps.edge].astype(np.int64), heads)
    n_all = np.diff(np.r_[heads, len(steps.step)])
    cls = np.where(n_inter == 0, 0, np.where(n_inter == n_all, 1, 2))
    for d, direction in ((True, "up"), (False, "down")):
        for c, name_c in enumerate(("intra", "inter", "both")):
            n = int(((steps.up == d) & (cls == c)).sum())
            if n:
                counts[(direction, name_c)] = n
    return counts


def _tree_sum(counts, m, gamma, links):
    """Step sum: links = {"intra": (alpha, beta), "inter": (alpha, beta)}."""
    total = np.zeros_like(m)
    for (direction, cls), n in counts.items():
        g = gamma if direction == "up" else 0.0
        t = {c: a + m * (b + g) for c, (a, b) in links.items()}
        total = total + n * (np.maximum(t["intra"], t["inter"]) if cls == "both" else t[cls])
    return total


def granularity(name: str, ranks: int, **params) -> int:
    """Element count multiple for which ``closed_form`` is exact (trees: equal chunks)."""
    q = validate(name, ranks, **params)
    g, s = q.get("gpus_per_node", 1), q.get("slices", 1)
    c = q.get("chunks", 1)
    if name == "ring":
        return ranks * s
    if name == "halving-doubling":
        return _fold_terms(ranks)[0]
    if name in ("tree", "hierarchical-nccl"):
        return 2 * c
    if name == "binary-tree":
        return c
    if name == "hierarchical":
        return ranks * s if q["inter"] == "ring" else int(np.lcm(g * s, 2 * g * c))
    return 1


def closed_form(name: str, ranks: int, nbytes, alpha: float, beta: float, gamma: float = 0.0,
                **params):
    """AllReduce time in seconds of algorithm ``name`` on ``ranks`` ranks for ``nbytes`` bytes
    per rank (scalar or array), link ``alpha`` (s) and ``beta`` (s/byte), reduction
    ``gamma`` (s/byte). params: slices, chunks (default ``default_chunks``), gpus_per_node,
    inter, and for hierarchical ones alpha_inter, beta_inter (default alpha, beta).
    Formulas: ``FORMULAS`` and the module docstring."""
    alpha_i = params.pop("alpha_inter", None)
    beta_i = params.pop("beta_inter", None)
    q = validate(name, ranks, **params)
    scalar = np.ndim(nbytes) == 0
    nb = np.atleast_1d(np.asarray(nbytes, dtype=np.float64))
    for what, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        if not np.isfinite(v) or v < 0:
            raise CollsimError(f"{what} must be a finite number >= 0, got {v!r}")
    if (nb < 0).any() or not np.isfinite(nb).all():
        raise CollsimError("nbytes must be finite and >= 0")
    if (alpha_i is not None or beta_i is not None) and "gpus_per_node" not in q:
        raise CollsimError(f"algorithm {name!r} takes no alpha_inter/beta_inter")
    alpha_i = alpha if alpha_i is None else float(alpha_i)
    beta_i = beta if beta_i is None else float(beta_i)
    p, g = int(ranks), q.get("gpus_per_node", 1)
    s = q.get("slices", 1)
    out = np.zeros_like(nb)
    if name in ("tree", "binary-tree", "hierarchical-nccl") or q.get("inter") == "tree":
        out = _trees(name, p, g, nb, q.get("chunks"), alpha, beta, gamma, alpha_i, beta_i, s)
    elif name == "ring":
        out = _ring(p, nb, alpha, beta, gamma, s)
    elif name == "recursive-doubling":
        out = _recursive_doubling(p, nb, alpha, beta, gamma)
    elif name == "halving-doubling":
        out = _halving_doubling(p, nb, alpha, beta, gamma)
    elif name == "direct":
        out = (p - 1) * (alpha + nb * (beta + gamma))
    elif name == "hierarchical":
        out = _ring(g, nb, alpha, beta, gamma, s) + _ring(p // g, nb / g, alpha_i, beta_i, gamma, s)
    out = np.where(nb > 0, out, 0.0)
    return float(out[0]) if scalar else out


def _trees(name, p, g, nb, chunks, alpha, beta, gamma, alpha_i, beta_i, slices):
    links = {"intra": (alpha, beta), "inter": (alpha_i, beta_i)}
    if name == "hierarchical":
        base, per = _ring(g, nb, alpha, beta, gamma, slices), nb / g
    else:
        base, per = np.zeros_like(nb), nb
    trees = ALGORITHMS[name].trees
    cs = (np.full(len(nb), chunks) if chunks is not None else
          np.array([default_chunks(name, int(b)) for b in nb.astype(np.int64)]))
    out = base.copy()
    for c in np.unique(cs):
        sel = cs == c
        counts = tree_step_counts(name, p, g, int(c))
        out[sel] += _tree_sum(counts, per[sel] / (trees * c), gamma, links)
    return out


def fit_alpha_beta(sizes, times_s, algorithm: str = "ring", ranks: int = 2) -> tuple[float, float]:
    """alpha (s), beta (s/byte) of ``cost.closed_form`` by least squares on relative error."""
    s, t = np.asarray(sizes, float), np.asarray(times_s, float)
    if s.size < 2 or s.shape != t.shape or (t <= 0).any():
        raise CollsimError("fit_alpha_beta needs at least two (size, time > 0) pairs")
    a = np.column_stack([closed_form(algorithm, ranks, s, 1.0, 0.0), closed_form(algorithm, ranks, s, 0.0, 1.0)])
    (alpha, beta), *_ = np.linalg.lstsq(a / t[:, None], np.ones_like(t), rcond=None)
    return max(float(alpha), 0.0), max(float(beta), 0.0)
