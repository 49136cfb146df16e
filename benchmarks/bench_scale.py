"""Speed of the simulation of NCCL's runs at training scale: symmetric against full, and 1,024 to 16,384 ranks.

Run:  .venv/bin/python benchmarks/bench_scale.py          (about five minutes; --quick: fewer node counts)

Prints a Markdown report (machine, then tables); every figure is measured in this run, ratios side by side.

1. Symmetric against full at 64-512 ranks (8-64 nodes of 8 H100, 8 x 400G IB, 16 channels, 1 GiB, NCCL's protocol):
   ``simulate_nccl`` as it runs (a ring as its quotient of two nodes, channels alike simulated once:
   ``collsim.predict.simulation``) and with every reduction off (every rank and channel), in one process, the
   time of each and their ratio; the two give the same time (asserted here, and to the last bit in
   tests/predict/test_simulation.py and tests/simulate/test_symmetry.py). NVLSTree is left out: its schedule
   is built as two channels that stand for all (the whole one is a different build, tested in test_symmetry).
2. 1,024 to 16,384 ranks (128-2,048 nodes), per algorithm: ``collsim simulate --cluster ib-400g --nodes N --algo
   A --channels 16 --bytes 1G --json`` in a fresh process each, wall and CPU time, peak RSS, busbw and what was
   simulated. A case is skipped, and said, when its estimate (the last count's time x 2.5) would take the part
   past ``BUDGET_S``. Then the same at 2,048 nodes on the SuperPOD's rail-optimised leaves made 2:1.
"""
from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from bench_core import machine

import collsim.predict.schedules as schedules
import collsim.predict.simulation as simulation
from collsim.machine import load_cluster
from collsim.predict import nccl_context, simulate_nccl

ROOT = Path(__file__).resolve().parents[1]
BUDGET_S = 150.0       # part 2's wall time (seconds) before the largest cases are skipped


@contextlib.contextmanager
def whole():
    """Every reduction off: the whole ring (no quotient), every channel simulated."""
    saved = schedules.QUOTIENT_NODES, simulation.collapse_channels, simulation.permute_channels
    schedules.QUOTIENT_NODES = 1 << 30
    simulation.collapse_channels = lambda s, topo: (s, topo, 1)
    simulation.permute_channels = lambda s, topo: None
    try:
        yield
    finally:
        schedules.QUOTIENT_NODES, simulation.collapse_channels, simulation.permute_channels = saved


def _sim(nodes: int, algo: str):
    ctx = nccl_context(load_cluster("ib-400g", nodes), algo)
    d = ctx.decisions([1 << 30])[0]
    t = time.perf_counter()
    r = simulate_nccl(ctx, d.algo, d.proto, 1 << 30, 16)
    return time.perf_counter() - t, r, d.proto


def symmetric_vs_full(quick: bool) -> list[str]:
    rows = ["| algorithm | ranks | simulated: symmetric (transfers) | full (transfers) | symmetric (s) | full (s) | "
            "full / symmetric | same time |", "|---|---:|---|---|---:|---:|---:|---|"]
    _sim(8, "Ring")                                                     # compile and import first
    for algo in ("Ring", "Tree"):
        for nodes in (8, 16, 32) if quick else (8, 16, 32, 64):
            fast, a, proto = _sim(nodes, algo)
            with whole():
                slow, b, _ = _sim(nodes, algo)
            same = a.time_s == b.time_s if algo == "Ring" else abs(a.time_s / b.time_s - 1) < 1e-9
            assert same, (algo, nodes, a.time_s, b.time_s)
            shape = lambda r: (f"{r.result.schedule.ranks} ranks x {r.classes} ch "   # noqa: E731
                               f"({r.result.schedule.n_transfers:,})")
            rows.append(f"| {algo}/{proto} | {8 * nodes} | {shape(a)} | {shape(b)} | {fast:.3f} | {slow:.3f} | "
                        f"{slow / fast:.1f}x | {'bit-equal' if a.time_s == b.time_s else 'within 1e-9'} |")
    return rows


def _rusage_run(argv: list[str]) -> tuple[float, float, float, dict]:
    """(wall s, cpu s, peak RSS GiB, its JSON) of ``collsim`` with ``argv`` in a fresh process, measured by
    /usr/bin/time (a child of this big process would report this one's peak RSS as its own: Linux keeps the
    high-water mark across fork and exec)."""
    with tempfile.NamedTemporaryFile("r") as f:
        t = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", f.name, sys.executable, "-m", "collsim", *argv],
                           cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if p.returncode:
            raise RuntimeError(f"collsim {' '.join(argv)}: {p.stderr.strip()[-200:]}")
        user, system, kb = (float(x) for x in f.read().split()[-3:])
    return wall, user + system, kb / 2**20, json.loads(p.stdout)


def at_scale(quick: bool) -> list[str]:
    rows = ["| algorithm | nodes x 8 GPUs (ranks) | wall (s) | cpu (s) | peak RSS (GiB) | busbw (GB/s) | simulated |",
            "|---|---:|---:|---:|---:|---:|---|"]
    counts = (128, 512, 2048) if quick else (128, 256, 512, 1024, 2048)
    spent, skipped = 0.0, []
    for cli, algo in (("ring", "Ring"), ("nvlstree", "NVLSTree"), ("nccl-tree", "Tree")):
        last = None
        for n in counts:
            guess = 2.5 * last if last else 0.0
            if spent + guess > BUDGET_S:
                skipped.append(f"{algo} on {n} nodes (about {guess:.0f} s, past the {BUDGET_S:.0f} s budget)")
                continue
            wall, cpu, rss, d = _rusage_run(["simulate", "--cluster", "ib-400g", "--nodes", str(n), "--algo", cli,
                                             "--channels", "16", "--bytes", "1G", "--json"])
            spent, last = spent + wall, wall
            sym = d["symmetry"]
            rows.append(f"| {algo}/{d['proto']} | {n} ({8 * n:,}) | {wall:.1f} | {cpu:.1f} | {rss:.2f} | "
                        f"{d['busbw_GBps']:.1f} | {sym['nodes_simulated']} nodes x {sym['channels_simulated']} of "
                        f"{sym['channels']} channels, {d['simulated_loops']} of {d['loops']} loops |")
    if skipped:
        rows.append("\nSkipped: " + "; ".join(skipped) + ".")
    return rows


def with_fabric(quick: bool) -> list[str]:
    """The SuperPOD's rail-optimised leaves of 32 nodes made 2:1 at 2,048 nodes: the ring keeps its quotient
    (no hop of a rail ring can be slower than its NIC), NVLSTree simulates the uplinks."""
    spec = {**load_cluster("ib-400g").to_dict(), "fabric": {"nodes_per_leaf": 32, "oversubscription": 2}}
    rows = ["| algorithm | nodes | wall (s) | cpu (s) | peak RSS (GiB) | busbw (GB/s), 1:1 -> 2:1 | fabric |",
            "|---|---:|---:|---:|---:|---:|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "spine-2to1.yaml"
        f.write_text(yaml.safe_dump(spec))
        for cli in ("ring",) if quick else ("ring", "nvlstree"):
            base = ["simulate", "--nodes", "2048", "--algo", cli, "--channels", "16", "--bytes", "1G", "--json"]
            ref = _rusage_run(["--max-memory", "8G", *base, "--cluster", "ib-400g"])[3]
            wall, cpu, rss, d = _rusage_run(["--max-memory", "8G", *base, "--cluster", str(f)])
            rows.append(f"| {d['algo']}/{d['proto']} | 2048 | {wall:.1f} | {cpu:.1f} | {rss:.2f} | "
                        f"{ref['busbw_GBps']:.1f} -> {d['busbw_GBps']:.1f} | {d['symmetry']['fabric']} |")
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    print("# collsim at training scale: symmetric against full simulation, 1,024 to 16,384 ranks\n")
    print(f"Machine: {machine()}\n")
    print(f"Command: `.venv/bin/python benchmarks/bench_scale.py{' --quick' if quick else ''}`\n")
    for title, part in (("Symmetric against full, 64-512 ranks (ib-400g, 16 channels, 1 GiB)", symmetric_vs_full),
                        ("1,024 to 16,384 ranks, a fresh process each (ib-400g, 16 channels, 1 GiB)", at_scale),
                        ("2,048 nodes on rail-optimised leaves of 32 nodes at 2:1", with_fabric)):
        print(f"## {title}\n")
        t = time.perf_counter()
        print("\n".join(part(quick)) + f"\n\n(part: {time.perf_counter() - t:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
