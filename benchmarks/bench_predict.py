"""Speed of ``collsim predict-nccl``: the event simulation of the schedule NCCL runs, beside collsim's fitted model.

Run:  .venv/bin/python benchmarks/bench_predict.py          (about a minute; --quick: one repeat)

Prints a Markdown report. For 30 sizes (8 B to 4 GiB, x2) on a described cluster (ib-400g: 8 x H100 a node,
8 x 400G IB) at 1, 8 and 64 nodes with NCCL's own choice: the whole ``collsim predict-nccl`` process (what a
user waits for), and in one process, side by side, the simulation of every size (``predict_nccl``: NCCL's
choice, its schedule, simulated) and collsim's fitted NCCL-shaped model on the same choices
(``collsim.fitted.model.predict``: a closed form per size, which sees no routing). Target (issue 24): the
30-size sweep on 64 nodes under 10 s on a 2-core machine. "first" is the first call in the process (numba's
cached engine loaded), "best" the best of the repeats.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from collsim.fitted.model import predict as fitted_predict
from collsim.machine import load_cluster
from collsim.predict import harness_config, nccl_context, predict_nccl

ROOT = Path(__file__).resolve().parents[1]
SIZES = [8 << k for k in range(30)]


def fitted_times(cluster) -> np.ndarray:
    """collsim's fitted model on NCCL's choice per size (microseconds)."""
    ctx = nccl_context(cluster)
    cfg = harness_config(ctx.cluster, "nccl-tests", "eager", None, SIZES, ctx.setup.settings, ctx.described)
    return np.array([float(fitted_predict(ctx.params, d.algo, d.proto, [d.size], cfg)[0])
                     for d in ctx.decisions(SIZES)])


def timed(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times[0], min(times)


def main() -> None:
    repeats = 1 if "--quick" in sys.argv else 3
    print("| nodes | whole process (s) | simulation first / best (s) | fitted model (s) | simulation / fitted |")
    print("|---|---|---|---|---|")
    for nodes in (1, 8, 64):
        cluster = load_cluster("ib-400g", nodes)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "collsim", "predict-nccl", "--cluster", "ib-400g", "--nodes", str(nodes),
                        "-b", "8", "-e", "4G"], check=True, capture_output=True, cwd=ROOT)
        whole = time.perf_counter() - t
        first, best = timed(lambda: predict_nccl(cluster, SIZES), repeats)
        _, fit = timed(lambda: fitted_times(cluster), repeats)
        print(f"| {nodes} | {whole:.1f} | {first:.2f} / {best:.2f} | {fit:.3f} | {best / fit:.0f}x |")


if __name__ == "__main__":
    main()
