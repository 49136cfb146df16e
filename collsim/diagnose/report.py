"""The text ``collsim diagnose`` prints for a report of ``collsim.diagnose.verdict.diagnose``: the files read
and skipped, the machine compared with (what the files showed, what was assumed), the algorithm that ran (or
Ring and Tree forced beside NCCL's choice when the files do not say), one row per size band (measured busbw,
collsim's expected busbw and range, NCCL's own model's, the ratio, the verdict), whether the run is a log
collsim was fitted on (in-sample), the verdict, and the likely causes ranked with their evidence lines, fix,
the file that would settle them and their source.
"""
from __future__ import annotations

VERDICTS = {"as_expected": "as expected: within the range this hardware should give",
            "below_expected": "below what this hardware should give",
            "above_expected": "above collsim's expected range",
            "not_judged": "not judged (no measurement or no prediction to compare)"}


MORE = ("nccl-tests output up to -e 8G with its '# Rank' lines", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH "
        "log", "nvidia-smi topo -m", "ibstatus")


def _gbps(value) -> str:
    return "-" if value is None else f"{value:.3g}"


def text(report: dict, top: int = 5) -> list[str]:
    """The report as lines of text."""
    out = []
    kinds = ", ".join(f"{f['name']} ({'/'.join(f['kinds'])})" for f in report["files"])
    out.append(f"read: {kinds or 'no files'}")
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
    if m["env"]:
        out.append("  predicted with: " + " ".join(f"{k}={v}" for k, v in m["env"].items()))
    ran = report.get("algorithm") or {}
    if ran.get("ran"):
        what = "per size from NCCL's per-call lines, " if ran["per_size"] else ""
        out.append(f"algorithm that ran: {ran['ran']} ({what}{ran['where']}): predicted with it")
    elif report["bands"]:
        out.append("algorithm that ran: not in the files (no NCCL_ALGO, per-call TUNING line or algorithm given): "
                   "judged against NCCL's choice, with Ring and Tree forced below it")
    if report["bands"]:
        out.append(f"{'band':<6} {'sizes':<12} {'run':<22} {'measured':>9} {'expected (range)':>22} "
                   f"{'NCCL model':>10} {'ratio':>6}  verdict   (busbw, GB/s)")
        for b in report["bands"]:
            rng = b.get("range_GBps")
            exp = f"{_gbps(b.get('expected_busbw_GBps'))} ({_gbps(rng[0])}-{_gbps(rng[1])})" if rng else "-"
            ratio = f"{b['ratio']:.2f}" if "ratio" in b else "-"
            out.append(f"{b['band']:<6} {b['sizes']:<12} {b['run'][:22]:<22} {_gbps(b['measured_busbw_GBps']):>9} "
                       f"{exp:>22} {_gbps(b.get('nccl_busbw_GBps')):>10} {ratio:>6}  {b['verdict']}")
            for algo, f in b.get("forced", {}).items():
                rng = f"{_gbps(f['expected_busbw_GBps'])} ({_gbps(f['range_GBps'][0])}-{_gbps(f['range_GBps'][1])})"
                out.append(f"{'':<6} {algo + ' forced':<12} {'':<22} {'':>9} {rng:>22} "
                           f"{_gbps(f['nccl_busbw_GBps']):>10} {f['ratio']:>6.2f}  {f['verdict']}")
    for log in report.get("in_sample", ()):
        out.append(f"in-sample: this run is {log}, one of the logs collsim's per-transfer costs were fitted on "
                   "(collsim/fitted/sim_params.json): its ratio measures the fit, not a prediction")
    ratio = f" (measured / expected {report['ratio']:.2f})" if report.get("ratio") is not None else ""
    decided = report.get("decided_by")
    if decided and decided["rule"] != "main band":   # a band under half its expected decided it
        ratio = (f" ({decided['band']} band of {decided['run']}: measured / expected {decided['ratio']:.2f}, under "
                 f"half; {decided['main_band']} band {report['ratio']:.2f})")
    out.append(f"verdict: {VERDICTS[report['verdict']]}{ratio}")
    causes = report["causes"][:top]
    out.append("likely causes, most likely first:" if causes else "no cause found in the files; these would tell "
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
