"""The text ``collsim diagnose`` prints for a report of ``collsim.diagnose.verdict.diagnose``: the
files read and skipped, the machine compared with (what the files showed, what was assumed), the
algorithm that ran (or Ring and Tree forced beside NCCL's choice when the files do not say), one row
per size band (measured busbw, collsim's expected busbw and range, NCCL's own model's, the ratio,
the verdict), whether the run is a log collsim was fitted on (in-sample), the verdict, and the
likely causes ranked with their evidence lines, fix, the file that would settle them and their
source.
"""
from __future__ import annotations

VERDICTS = {"as_expected": "as expected: within the range this hardware should give",
            "below_expected": "below what this hardware should give",
            "above_expected": "above collsim's expected range",
            "not_judged": "not judged (no measurement or no prediction to compare)"}


MORE = ("nccl-tests output up to -e 8G with its '# Rank' lines",
        "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH "
        "log", "nvidia-smi topo -m", "ibstatus")


def _gbps(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def text(report: dict, top: int = 5) -> list[str]:
    """The report as lines of text."""
    out = []
    kinds = ", ".join(f"{f['name']} ({'/'.join(f['kinds'])})" for f in report["files"])
    out.append(f"read: {kinds or 'no files'}")
    if report.get("collective") not in (None, "all_reduce"):
        out.append(f"collective: {report['collective']} (predicted as it, busbw with nccl-tests' "
                   "factor of it)")
    for s in report["skipped"]:
        out.append(f"skipped: {s}")
    for f in report["files"]:
        out += [f"note: {f['name']}: {n}" for n in f["notes"][:3]]
    m = report["machine"]
    if m["cluster"]:
        out.append(f"machine: {m['cluster']}")
    else:
        out.append(f"machine: none to compare with ({m['why_not'] or 'no measurements'})")
    if m["cluster"] and m["why_not"]:
        out.append(f"  {m['why_not']}")
    if m["seen"]:
        out.append("  from the files: " + "; ".join(m["seen"]))
    if m["assumed"]:
        out.append("  assumed: " + "; ".join(m["assumed"]))
    for c in m.get("conflicts", []):
        out.append(f"  conflict: {c}")
    if m["env"]:
        out.append("  predicted with: " + " ".join(f"{k}={v}" for k, v in m["env"].items()))
    ran = report.get("algorithm") or {}
    if ran.get("ran"):
        what = "per size from NCCL's per-call lines, " if ran["per_size"] else ""
        out.append(f"algorithm that ran: {ran['ran']} ({what}{ran['where']}): predicted with it")
    elif report["bands"]:
        out.append("algorithm that ran: not in the files (no NCCL_ALGO, per-call TUNING line or "
                   "algorithm given): judged against NCCL's choice, with Ring and Tree forced "
                   "below it")
    if report["bands"]:
        out.append(f"{'band':<6} {'sizes':<12} {'run':<22} {'measured':>9} "
                   f"{'expected (range)':>22} {'NCCL model':>10} {'ratio':>6}  verdict   (busbw, "
                   "GB/s)")
        for b in report["bands"]:
            rng = b.get("range_GBps")
            exp = (f"{_gbps(b.get('expected_busbw_GBps'))} ({_gbps(rng[0])}-{_gbps(rng[1])})" if rng
                   else "-")
            ratio = f"{b['ratio']:.2f}" if "ratio" in b else "-"
            out.append(f"{b['band']:<6} {b['sizes']:<12} {b['run'][:22]:<22} "
                       f"{_gbps(b['measured_busbw_GBps']):>9} {exp:>22} "
                       f"{_gbps(b.get('nccl_busbw_GBps')):>10} {ratio:>6}  {b['verdict']}")
            for algo, f in b.get("forced", {}).items():
                rng = (f"{_gbps(f['expected_busbw_GBps'])} "
                       f"({_gbps(f['range_GBps'][0])}-{_gbps(f['range_GBps'][1])})")
                out.append(f"{'':<6} {algo + ' forced':<12} {'':<22} {'':>9} {rng:>22} "
                           f"{_gbps(f['nccl_busbw_GBps']):>10} {f['ratio']:>6.2f}  {f['verdict']}")
    for log in report.get("in_sample", ()):
        out.append(f"in-sample: this run is {log}, one of the logs collsim's per-transfer costs "
                   "were fitted on (collsim/fitted/sim_params.json): its ratio measures the fit, "
                   "not a prediction")
    ratio = (f" (measured / expected {report['ratio']:.2f})" if report.get("ratio") is not None
             else "")
    decided = report.get("decided_by")
    if decided and decided["rule"] != "main band":   # a band under half its expected decided it
        ratio = (f" ({decided['band']} band of {decided['run']}: measured / expected "
                 f"{decided['ratio']:.2f}, under half; {decided['main_band']} band "
                 f"{report['ratio']:.2f})")
    out.append(f"verdict: {VERDICTS[report['verdict']]}{ratio}")
    causes = report["causes"][:top]
    out.append("likely causes, most likely first:" if causes
               else "no cause found in the files; these would tell "
               "more: " + "; ".join(MORE))
    for i, c in enumerate(causes, 1):
        out.append(f"{i}. {c['label']} (score {c['score']:g}): {c['title']}")
        for e in c["evidence"]:
            line = f": {e['line']}" if e["line"] else ""
            out.append(f"   evidence {e['where']}: {e['why']}{line}"[:240])
        out.append(f"   fix: {c['fix']}")
        out.append(f"   settle: {c['settle']}")
        out.append(f"   source: {c['source']}")
    return out


def answers_text(a: dict) -> list[str]:
    """The five answers (``collsim.diagnose.answers``) as lines of text, one section each."""
    out = ["1. what busbw should this hardware give (busbw GB/s; % of achievable = of collsim's "
           "expected):"]
    for e in a["expected"]:
        rate = (f", {e['pct_of_line_rate']:.0f}% of line rate ({e['line_rate']})"
                if e["pct_of_line_rate"] else "")
        out.append(f"   {e['band']} {e['sizes']}: "
                   f"{_gbps(e['range_GBps'][0])}-{_gbps(e['range_GBps'][1])} expected; "
                   f"measured {_gbps(e['measured_busbw_GBps'])} = {e['pct_of_achievable']:.0f}% of "
                   f"achievable{rate}")
    if not a["expected"]:
        out.append("   - (no machine or no measurement to compare)")
    causes = a["why_below"]["causes"]
    out.append(f"2. why below: {VERDICTS[a['why_below']['verdict']]}; causes ranked above: "
               f"{', '.join(causes[:3]) or 'none'}")
    out.append(
        "3. why did NCCL pick this (NCCL's choice against the simulated best, per band of its "
        "choice):"
    )
    for c in a["nccl_choice"]:
        gain = "the simulated best"
        if c["gain"] > 1.0:
            gain = f"best {c['best']}, {c['gain']:.2f}x faster (simulated) at {c['at_bytes']} B"
        out.append(f"   {c['sizes']}: NCCL {c['nccl']}: {gain}")
    v = a["versions"]
    if v:
        x, y = v["versions"]
        out.append(f"4. NCCL {x} against {y}: {len(v['changes'])} of {v['sizes']} sizes change")
        out += [f"   {c['bytes']} B: {c[x]} -> {c[y]}, time x{c['time_ratio']:.2f}"
                for c in v["changes"][:12]]
    else:
        out.append("4. version against version: give --nccl A,B (e.g. --nccl 2.22,2.25)")
    out.append("5. how do I model it:")
    out += [f"   {m}" for m in a["model"]]
    return out
