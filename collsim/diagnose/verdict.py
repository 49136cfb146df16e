"""Bands, the expected range, the verdict and the ranked causes: ``diagnose(paths, cluster,
measured)``.

Sizes fall in three bands: small (< 64 KiB, latency-bound), mid, large (>= 64 MiB, bandwidth-bound).
Per band: the median measured busbw, collsim's expected busbw (``predict-nccl``) with its range,
NCCL's own model's, and the median of measured / expected. The range is expected x [1/(1+t), 1+t]
with ``TOLERANCE`` t per band, set above the worst band median that healthy runs leave against their
own description (``KNOWN_GOOD``: the bundled 2 x H200 nccl-tests runs and the public logs L01 and
L15, each diagnosed from its files alone): 1.26x small (2 x H200, CUDA graphs: faster than
predicted), 1.21x mid (2 x H200 eager, slower), 1.09x large (2 x H200 eager, slower);
``tests/diagnose/test_verdict.py`` recomputes them. A run inside the range is as good as this model
can tell. The verdict is the large band's (else mid's, else small's), and below expected whenever a
band falls under half its expected busbw; the report's ``ratio`` is the large (else mid, else small)
band's, and ``decided_by`` names the band that decided the verdict (band, run, ratio, rule: "main
band" or "under half its expected", and the main band's name).

Each run is predicted with the algorithm that ran (``collsim.diagnose.judged``: ``algo``, NCCL_ALGO,
TUNING lines); when the files do not say, each band also shows Ring and Tree forced (``forced``)
beside NCCL's choice. A band of a log the simulation was fitted on carries ``fitted_on``
(in-sample).

Each cause (``collsim.diagnose.causes.CAUSES``) scores the weights of its evidence lines and
computed hits (``collsim.diagnose.checks``), minus its counter-evidence, plus 1 when the measured
shortfall falls in its ``effect`` range (less when it does not); a cause no line speaks for scores
only its ``prior``, and only when the shortfall fits its effect. ``expected_performance`` scores 1
plus half a point per band in range when the verdict is as expected. Causes are ranked by score,
most likely first. ``diagnose_text`` takes pasted text instead of paths.
"""
from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from collsim.core.collective import named
from collsim.diagnose import checks
from collsim.diagnose.causes import CAUSES, COMPILED
from collsim.diagnose.evidence import Evidence, gather
from collsim.diagnose.expected import Machine, expect, machine_for
from collsim.diagnose.judged import UNKNOWN_SHOWN, Ran, algorithm_that_ran, fitted_on
from collsim.diagnose.sources import Run, read_source
from collsim.errors import CollsimError
from collsim.units import format_size

BANDS = (("small", 0, 64 << 10), ("mid", 64 << 10, 64 << 20), ("large", 64 << 20, 1 << 62))
TOLERANCE = {"small": 0.5, "mid": 0.4, "large": 0.2}
KNOWN_GOOD = ("h200x2/nccl-tests/eager_default.log", "h200x2/nccl-tests/graph_default.log",
              "h200x2/run2/nccl-tests/graph_default.log",
              "h200x2/run4/nccl-tests/graph_default.log",
              "h200x2/run5/nccl-tests/graph_default.log",
              "h200x2/run6/nccl-tests/graph_default.log",
              "public/L01_h100x8_1n_ring_together.jsonl",
              "public/L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl")
MAX_EVIDENCE = 4
MEASURED_KINDS = {"nccl-tests", "nccl-tests-json", "collsim-records", "measured"}


@dataclass
class RunResult:
    run: Run
    machine: Machine
    points: list
    bands: list


@dataclass
class Context:
    ev: Evidence
    results: list
    cluster: object = None
    spec_given: bool = False
    nodes: int | None = None
    gpus_per_node: int | None = None
    ratio: float | None = None
    shortfall: bool = False
    predicted_channels: int | None = None
    verdict: str = "not_judged"
    extra: dict = field(default_factory=dict)


def bands(points: list, run: Run) -> list[dict]:
    """Per band with measurements: sizes, medians of measured / expected / NCCL's busbw, the range,
    the median ratio and the band's verdict (``"no prediction"`` without expected values).
    """
    out = []
    for name, lo, hi in BANDS:
        rows = [r for r in run.rows if lo <= r["bytes"] < hi]
        if not rows:
            continue
        pts = [p for p in points if lo <= p["bytes"] < hi]
        band = {
            "band": name,
            "sizes": f"{format_size(min(r['bytes'] for r in rows))}-"
            f"{format_size(max(r['bytes'] for r in rows))}",
            "points": len(rows),
            "run": run.name,
            "measured_busbw_GBps": statistics.median(p["measured"] for p in pts)
            if pts
            else statistics.median(r["busbw_GBps"] for r in rows),
        }
        if pts:
            t = TOLERANCE[name]
            expected = statistics.median(p["expected"] for p in pts)
            ratio = statistics.median(p["measured"] / p["expected"] for p in pts
                                      if p["expected"] > 0)
            band.update(expected_busbw_GBps=expected,
                        range_GBps=[expected / (1 + t), expected * (1 + t)],
                        nccl_busbw_GBps=statistics.median(p["nccl"] for p in pts), ratio=ratio,
                        verdict="as expected" if 1 / (1 + t) <= ratio <= 1 + t else
                        "below" if ratio < 1 else "above")
        else:
            band["verdict"] = "no prediction"
        out.append(band)
    return out


def _overall(all_bands: list) -> tuple:
    """(verdict, the main band's ratio, the band that decided the verdict) of every run's bands: the
    main band is the lowest large (else mid, else small) band; a band under half its expected busbw
    decides instead.
    """
    judged = [b for b in all_bands if "ratio" in b]
    if not judged:
        return "not_judged", None, None
    by_name = {}
    for b in judged:
        if b["band"] not in by_name or b["ratio"] < by_name[b["band"]]["ratio"]:
            by_name[b["band"]] = b
    main = by_name.get("large") or by_name.get("mid") or by_name.get("small")
    low = min(judged, key=lambda b: b["ratio"])
    decided = {"band": main["band"], "run": main["run"], "ratio": main["ratio"],
               "rule": "main band", "main_band": main["band"]}
    if main["verdict"] == "below":
        return "below_expected", main["ratio"], decided
    if low["ratio"] < 0.5:
        return "below_expected", main["ratio"], {**decided, "band": low["band"], "run": low["run"],
                                                 "ratio": low["ratio"],
                                                 "rule": "under half its expected"}
    return (("above_expected" if main["verdict"] == "above" else "as_expected"), main["ratio"],
            decided)


def _applies(where: str, ctx: Context) -> bool:
    nodes, c = ctx.nodes, ctx.cluster
    return {"any": True, "multinode": nodes is None or nodes > 1, "two_nodes": nodes == 2,
            "intranode": (ctx.gpus_per_node or 2) > 1, "nvls": c is None or bool(c.nvls),
            "pcie": nodes is None or nodes > 1 or (c is not None and c.intra == "pcie")}[where]


def _pattern_hits(ev: Evidence, label: str) -> tuple:
    found, against = {}, {}
    patterns, counter = COMPILED[label]
    for where, text in ev.lines():
        for table, pats in ((found, patterns), (against, counter)):
            for regex, p in pats:
                if regex.search(text):
                    table.setdefault(p, []).append(where)
    return found, against


def score_causes(ctx: Context) -> list[dict]:
    """Every cause with a score above 0, most likely first (module docstring)."""
    out = []
    for cause in CAUSES:
        if cause.label == "expected_performance":
            if ctx.verdict == "as_expected":
                n = sum(1 for r in ctx.results for b in r.bands if b["verdict"] == "as expected")
                ev = [{"where": b["run"],
                       "why": f"{b['band']} band: measured {b['measured_busbw_GBps']:.3g} GB/s, "
                       f"expected {b['expected_busbw_GBps']:.3g}", "line": ""} for r in ctx.results
                      for b in r.bands if b["verdict"] == "as expected"]
                out.append(_entry(cause, 1.0 + 0.5 * n, ev[:MAX_EVIDENCE], ctx))
            continue
        found, against = _pattern_hits(ctx.ev, cause.label)
        hits = [{"where": w, "why": p.says, "weight": p.weight} for p, ws in found.items()
                for w in ws[:2]]
        weight = sum(p.weight for p in found) + sum(p.weight for p in against)
        computed = checks.CHECKS.get(cause.label, lambda _ctx: [])(ctx)
        weight += sum(h.weight for h in computed)
        hits = [{"where": h.where, "why": h.why, "weight": h.weight} for h in computed] + hits
        if not _applies(cause.applies, ctx) and weight <= 1.5:
            continue
        fit = 0.0
        if cause.effect and ctx.ratio is not None:
            lo, hi = cause.effect
            fit = 1.0 if lo <= ctx.ratio <= hi else (-1.5 if ctx.ratio > hi else -0.5)
        if weight > 0:
            score = weight + fit
        else:
            score = cause.prior if fit > 0 else 0.0
        if score > 0:
            hits.sort(key=lambda h: -h["weight"])
            ev = [{"where": h["where"], "why": h["why"], "line": ctx.ev.line(h["where"])[:200]}
                  for h in hits[:MAX_EVIDENCE]]
            out.append(_entry(cause, score, ev, ctx))
    out.sort(key=lambda c: -c["score"])
    return out


def _entry(cause, score: float, evidence: list, ctx: Context) -> dict:
    kind, what = cause.settle
    kinds = ctx.ev.kinds | ({"nccl-tests"} if ctx.ev.kinds & MEASURED_KINDS else set())
    settle = f"{'given' if kind in kinds else 'missing'}: {what}"
    return {"label": cause.label, "title": cause.title, "score": round(score, 2),
            "evidence": evidence, "fix": cause.fix, "settle": settle, "source": cause.source}


def _forced(machine: Machine, run: Run, run_bands: list) -> None:
    """Beside each band of a run whose algorithm is unknown: ``forced`` {algo: expected, range,
    NCCL's model, ratio, verdict} with Ring and Tree forced (an algorithm the machine cannot run is
    left out)."""
    for algo in UNKNOWN_SHOWN:
        alt = Machine(machine.cluster, env=machine.env)
        points = expect(alt, run, Ran(algo, where="shown"))
        for band, other in zip(run_bands, bands(points, run) if points else ()):
            if "ratio" in other:
                band.setdefault("forced", {})[algo] = {k: other[k] for k in (
                    "expected_busbw_GBps", "range_GBps", "nccl_busbw_GBps", "ratio", "verdict")}


def diagnose_sources(sources: list, cluster=None, measured=None, skipped=(), algo=None) -> dict:
    """The report of already-read ``sources`` (``diagnose``)."""
    ev = gather(sources, measured)
    ran = algorithm_that_ran(ev, algo)
    results = []
    for run in ev.measured_runs() or [Run("(no measurements)")]:
        machine = machine_for(ev, run, cluster)
        points = expect(machine, run, ran) if run.rows else []
        run_bands = bands(points, run)
        if points and not ran.known:
            _forced(machine, run, run_bands)
        fitted = fitted_on(run)
        for b in run_bands if fitted else ():
            b["fitted_on"] = fitted
        results.append(RunResult(run, machine, points, run_bands))
    first = next((r.machine for r in results if r.machine.cluster is not None), results[0].machine)
    ctx = Context(ev, [r for r in results if r.run.rows], cluster=first.cluster,
                  spec_given=cluster is not None)
    ctx.nodes = first.cluster.nodes if first.cluster else (ev.nodes[0] if ev.nodes else None)
    ctx.gpus_per_node = first.cluster.gpus_per_node if first.cluster else (
        ev.gpus_per_node[0] if ev.gpus_per_node else None)
    all_bands = [b for r in ctx.results for b in r.bands]
    ctx.verdict, ctx.ratio, decided = _overall(all_bands)
    ctx.shortfall = ctx.verdict == "below_expected"
    pts = [p for r in ctx.results for p in r.points]
    ctx.predicted_channels = max(pts, key=lambda p: p["bytes"])["channels"] if pts else None
    causes = score_causes(ctx)
    colls = {named(r.run.meta.get("collective")) for r in ctx.results}
    return {"verdict": ctx.verdict, "ratio": ctx.ratio, "decided_by": decided, "bands": all_bands,
            "collective": colls.pop() if len(colls) == 1 else None,
            "causes": causes, "algorithm": {"ran": ran.algo, "where": ran.where,
                                            "per_size": bool(ran.by_size)},
            "in_sample": sorted({b["fitted_on"] for b in all_bands if "fitted_on" in b}),
            "machine": {"cluster": first.cluster.describe() if first.cluster else None,
                        "why_not": first.why_not, "seen": first.seen, "assumed": first.assumed,
                        "env": first.env,
                        "conflicts": [c for r in results for c in r.machine.conflicts],
                        "spec": first.cluster.to_dict() if first.cluster else None},
            "files": [{"name": s.name, "kinds": s.kinds, "notes": s.notes} for s in sources],
            "skipped": list(skipped), "points": [{**p, "run": r.run.name} for r in ctx.results
                                                 for p in r.points],
            "measured": [{"run": r.run.name, "bytes": x["bytes"], "busbw_GBps": x["busbw_GBps"]}
                         for r in ctx.results for x in r.run.rows]}


def diagnose_text(texts: dict, cluster=None, measured=None, algo=None) -> dict:
    """``diagnose`` of pasted text: ``{name: text}``, each written to a file of that name in a
    temporary folder (what a notebook or an upload gives)."""
    with tempfile.TemporaryDirectory(prefix="collsim-diagnose-") as tmp:
        paths = []
        for name, text in texts.items():
            path = Path(tmp) / (Path(str(name)).name or "pasted.log")
            path.write_bytes(text if isinstance(text, bytes) else str(text).encode("utf-8"))
            paths.append(path)
        return diagnose(paths, cluster, measured, algo)


def diagnose(paths, cluster=None, measured=None, algo=None) -> dict:
    """Read ``paths`` (each named and skipped when unreadable), compare with ``cluster`` (a preset
    or file; None: from the files) and ``measured`` ``(bytes, busbw_GBps)`` pairs, predicted with
    the algorithm that ran (``algo``, NCCL's name, else from the files:
    ``collsim.diagnose.judged``), and rank the causes."""
    sources, skipped = [], []
    for path in paths:
        try:
            sources.append(read_source(path))
        except CollsimError as e:
            skipped.append(str(e))
    if not sources and not measured:
        raise CollsimError("nothing to diagnose: "
                           + ("; ".join(skipped) if skipped else "give files or --measured"))
    return diagnose_sources(sources, cluster, measured, skipped, algo)
