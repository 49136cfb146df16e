"""Speed figures of the core: schedule building, event simulation, the CLI, closed-form sweeps.

Run:  .venv/bin/python benchmarks/bench_core.py          (a few minutes; --quick: fewer repeats)

Prints a Markdown report (machine, then tables). Every figure is measured in
this run: "first" is the first call in the process (cold caches and page
faults, what a one-shot CLI call pays), "best" the best of the repeats; "cpu"
is the process's CPU time of the best run (on a shared machine wall time also
counts other processes). Ratios compare figures measured side by side in the
same run. Figures of 2026-12-02 (docs/simulator.md): ring AllReduce on 1024 ranks (one channel, 2.1 M
transfers) simulated in about 2 s with ports shared fairly; NCCL's layouts on 8 nodes x 8 GPUs x 16 channels
(ring and tree, 1 GiB) in < 1 s; a 40-size closed-form sweep in < 10 ms; 256 ranks x 16 channels whole in a
fresh process in < 10 s, with its peak memory (RSS).
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from collsim.algorithms import ALGORITHMS, BY_COLLECTIVE, build_schedule
from collsim.machine.presets import get_preset
from collsim.machine.topology import Topology
from collsim.simulate import simulate
from collsim.sweep import sizes, sweep

ROOT = Path(__file__).resolve().parents[1]
ALPHA, BETA = 5e-6, 1e-11


def timed(fn, repeats: int):
    """(first, best) wall seconds of ``fn()`` over ``repeats`` calls, and its last result."""
    first, best, _, out = timed_cpu(fn, repeats)
    return first, best, out


def timed_cpu(fn, repeats: int):
    """(first, best) wall seconds of ``fn()`` over ``repeats`` calls, the CPU seconds of the best, its last result."""
    times, out = [], None
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        times.append((time.perf_counter() - t, time.process_time() - c))
    best = min(times)
    return times[0][0], best[0], best[1], out


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy {np.__version__}; "
            f"load average at start {load}")


def ring_1024(repeats: int) -> list[str]:
    rows = ["| case | transfers | build first / best (s) | simulate first / best (s) | M transfers/s (best) |",
            "|---|---:|---:|---:|---:|"]
    topo = Topology.uniform(1024, ALPHA, BETA)
    for label, nbytes in (("1 GiB (chunks even)", 2**30), ("1e9 B (chunks uneven)", 10**9)):
        b_first, b_best, s = timed(lambda: build_schedule("ring", 1024, nbytes // 4), repeats)
        s_first, s_best, _ = timed(lambda: simulate(s, topo), repeats)
        rows.append(f"| ring, 1024 ranks, {label} | {s.n_transfers:,} | {b_first:.3f} / {b_best:.3f} | "
                    f"{s_first:.3f} / {s_best:.3f} | {s.n_transfers / s_best / 1e6:.1f} |")
    return rows


def all_algorithms(repeats: int) -> list[str]:
    rows = ["| algorithm | ranks | topology | transfers | steps | simulate best (s) | M transfers/s |",
            "|---|---:|---|---:|---:|---:|---:|"]
    for name, algo in ALGORITHMS.items():
        P = 256 if name == "direct" else 1024          # direct has P(P-1) transfers
        kw = {"gpus_per_node": 8} if "gpus_per_node" in algo.needs else {}
        s = build_schedule(name, P, 2**28 // 4, **kw)
        if algo.network:                               # the network's switches reduce: a SHARP cluster
            topos = [get_preset("h100-sharp", nodes=P // 8)]
        else:                                          # NVLS on one node, NVLSTree across
            topos = [Topology.uniform(P, ALPHA, BETA), get_preset("eth-100g", nodes=P // 8)]
            topos = topos[name == "nvlstree":len(topos) - (name == "nvls")]
        for topo in topos:
            _, best, _ = timed(lambda: simulate(s, topo), repeats)
            shape = f"{topo.nodes}x{topo.gpus_per_node}, {topo.nics_per_node} NIC/node" if topo.nodes > 1 \
                else "one node, ports only"
            rows.append(f"| {name} | {P} | {topo.name} ({shape}) | {s.n_transfers:,} | {s.n_steps} | {best:.3f} | "
                        f"{s.n_transfers / best / 1e6:.1f} |")
    return rows


def cli(repeats: int) -> list[str]:
    """The whole process: a simulation at 1,024 ranks, and the closed forms (``collsim predict``) of AllReduce's
    double tree and of every other collective's first algorithm at the 2^20-rank bound (issue 37: < 1 s)."""
    link = ["--alpha", str(ALPHA), "--beta", str(BETA)]
    cmds = [["simulate", "--algo", "ring", "--ranks", "1024", "--bytes", "1G", *link, "--json"],
            ["predict", "--algo", "double-tree", "--ranks", "1048576", "--bytes", "4M", *link]]
    cmds += [["predict", "--coll", c, "--ranks", "1048576", "--bytes", "4M", "--channels", "4", *link]
             for c in BY_COLLECTIVE if c != "all_reduce"]
    rows = ["| command | first (s) | best (s) |", "|---|---:|---:|"]
    for cmd in cmds:
        first, best, _ = timed(lambda: subprocess.run([sys.executable, "-m", "collsim", *cmd], cwd=ROOT,
                                                      check=True, stdout=subprocess.DEVNULL), repeats)
        rows.append(f"| `collsim {' '.join(cmd)}` | {first:.2f} | {best:.2f} |")
    return rows


def channels(repeats: int) -> list[str]:
    """NCCL's layouts: 16 channels of rail rings and of NCCL's tree on 8 x 8 H100 with 8 x 400G."""
    rows = ["| case | transfers | build best (s) | simulate first / best (s) | cpu (s) | M transfers/s |",
            "|---|---:|---:|---:|---:|---:|"]
    topo = get_preset("ib-400g", nodes=8)
    for name in ("ring", "nccl-tree", "double-tree"):
        kw = {"gpus_per_node": 8} if "gpus_per_node" in ALGORITHMS[name].params else {}
        _, build, s = timed(lambda: build_schedule(name, 64, 2**30 // 4, channels=16, **kw), repeats)
        first, best, cpu, _ = timed_cpu(lambda: simulate(s, topo, progress=False), repeats)
        rows.append(f"| {name}, 8 nodes x 8 GPUs x 16 channels, 1 GiB, ib-400g | {s.n_transfers:,} | {build:.3f} | "
                    f"{first:.3f} / {best:.3f} | {cpu:.3f} | {s.n_transfers / best / 1e6:.1f} |")
    return rows


def big_channels(_: int, runs: int = 3) -> list[str]:
    """256 ranks x 16 channels, the whole schedule as built (NCCL's runs at 1,024-16,384 ranks take the exact
    reductions: benchmarks/bench_scale.py), in a fresh process, ``runs`` times one after another: wall and CPU
    time and peak RSS of each. On a VM the first run after the machine sat idle pays the page faults of memory
    the host has taken back; the runs after it show the code."""
    code = ("import resource, time\n"
            "from collsim.algorithms import build_schedule\nfrom collsim.simulate import simulate\n"
            "from collsim.machine.presets import get_preset\n"
            "topo = get_preset('ib-400g', nodes=32)\n"
            "t, c = time.perf_counter(), time.process_time()\n"
            "s = build_schedule('ring', 256, 2**30 // 4, gpus_per_node=8, channels=16)\n"
            "t1, c1 = time.perf_counter(), time.process_time()\n"
            "r = simulate(s, topo, progress=False)\n"
            "t2, c2 = time.perf_counter(), time.process_time()\n"
            "print(s.n_transfers, t1 - t, c1 - c, t2 - t1, c2 - c1,"
            " resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20)\n")
    rows = ["| run | case | transfers | build (s, cpu) | simulate (s, cpu) | total (s) | peak RSS (GiB) |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    for run in range(1, runs + 1):
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True,
                             text=True).stdout
        n, bw, bc, sw, sc, rss = (float(x) for x in out.split())
        rows.append(f"| {run} | ring, 32 nodes x 8 GPUs x 16 channels, 1 GiB, ib-400g | {int(n):,} | "
                    f"{bw:.2f} ({bc:.2f}) | {sw:.2f} ({sc:.2f}) | {bw + sw:.2f} | {rss:.2f} |")
    return rows


def sweeps(repeats: int) -> list[str]:
    sz = sizes(1, 2**39)[:40]                       # 40 sizes, 1 B .. 512 GiB
    algos = [n for n, a in ALGORITHMS.items() if a.closed_form is not None]
    sweep(algos, 64, sz, alpha=ALPHA, beta=BETA, gpus_per_node=8)          # import and warm up
    _, best, _ = timed(lambda: sweep(algos, 64, sz, alpha=ALPHA, beta=BETA, gpus_per_node=8), max(repeats, 20))
    rows = ["| sweep | sizes | best (s) |", "|---|---:|---:|",
            f"| closed form, all {len(algos)} algorithms, 64 ranks | {len(sz)} | {best * 1e3:.2f} ms |",
            f"| closed form, per algorithm | {len(sz)} | {best / len(algos) * 1e3:.2f} ms |"]
    sim_sz = sizes(8, 2**30)
    topo = Topology.uniform(256, ALPHA, BETA)
    _, batched, tab = timed(lambda: sweep(["ring"], 256, sim_sz, alpha=ALPHA, beta=BETA, method="simulate"),
                            repeats)
    _, single, ref = timed(lambda: [simulate(build_schedule("ring", 256, int(b) // 4), topo).time_s
                                    for b in sim_sz], repeats)
    assert np.allclose(tab["time_s"], ref, rtol=1e-15)
    rows += [f"| simulated ring, 256 ranks, batched by structure | {len(sim_sz)} | {batched:.3f} |",
             f"| same, one `simulate` per size | {len(sim_sz)} | {single:.3f} (batched is x{single / batched:.2f}) |"]
    return rows


def main() -> None:
    repeats = 2 if "--quick" in sys.argv else 3
    print("# collsim core benchmark\n")
    print(f"Machine: {machine()}\n")
    print("Command: `.venv/bin/python benchmarks/bench_core.py`\n")
    for title, part in (("Ring AllReduce on 1024 ranks (uniform topology)", ring_1024),
                        ("NCCL's layouts: 16 channels", channels),
                        ("256 ranks x 16 channels, the whole schedule (a fresh process)", big_channels),
                        ("Every algorithm, 256 MiB per rank", all_algorithms),
                        ("The whole CLI process", cli), ("Sweeps", sweeps)):
        print(f"## {title}\n")
        print("\n".join(part(repeats)) + "\n", flush=True)


if __name__ == "__main__":
    main()
