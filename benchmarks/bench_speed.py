"""Speed and memory of ``collsim simulate``, whole process, beside the release before the compiled engine.

Run:  .venv/bin/python benchmarks/bench_speed.py            (a few minutes; --quick: the uniform rings only)
      .venv/bin/python benchmarks/bench_speed.py --big      (adds the 131,072-GPU cases, several minutes more)

The cases of /work/shared/checks/speed.sh (issue 34): the plain ring on 1,024 and 4,096 uniform ranks, and
NCCL's ring, NVLSTree and tree on 16,384 GPUs (ib-400g, 2,048 nodes, 16 channels, 1 GiB). Each runs in a fresh
process (``/usr/bin/time``: wall seconds, CPU seconds, peak RSS), this tree's collsim and the release before the
compiled engine (``PREVIOUS``, the parent of 3c9fcd1, extracted with ``git archive`` into a temporary directory) in
the same run, median of ``REPEATS``, then the ratio. A case the previous release refuses or cannot run is said
as its exit line. Prints a Markdown table with the machine.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_core import machine

ROOT = Path(__file__).resolve().parents[1]
PREVIOUS = "3c9fcd1^"       # the last release whose engine ran without numba
REPEATS = 3
OLD_TIMEOUT_S = 120         # the previous release runs each case once, for at most this long
UNIFORM = ["--alpha", "1e-6", "--beta", "1e-11", "--bytes", "1G", "--json"]
CLUSTER = ["--cluster", "ib-400g", "--channels", "16", "--bytes", "1G", "--json"]
CASES = [("ring, 1,024 uniform ranks", ["--algo", "ring", "--ranks", "1024", *UNIFORM]),
         ("ring, 4,096 uniform ranks", ["--algo", "ring", "--ranks", "4096", *UNIFORM])]
CLUSTER_CASES = [(f"{a}, 16,384 GPUs", ["--nodes", "2048", "--algo", a, *CLUSTER]) for a in ("ring", "nvlstree",
                                                                                            "nccl-tree")]
BIG = [(f"{a}, 131,072 GPUs", ["--nodes", "16384", "--algo", a, *CLUSTER]) for a in ("ring", "nvlstree")]


def measure(root: Path, argv: list[str], timeout: int = 900) -> tuple[float, float, float] | str:
    """(wall s, CPU s, peak MB) of ``collsim --max-memory 8G simulate ARGV`` with ``root`` first on the path, or
    the error's last line."""
    cmd = ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-m", "collsim", "--max-memory", "8G",
           "simulate", *argv]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=root, timeout=timeout,
                           env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)})
    except subprocess.TimeoutExpired:
        return f"over {timeout} s"
    lines = p.stderr.strip().splitlines()
    if p.returncode:
        return next((x for x in reversed(lines[:-1]) if x.strip()), f"exit {p.returncode}")[:70]
    wall, user, sys_, kb = lines[-1].split()
    return float(wall), float(user) + float(sys_), int(kb) / 1024


def median(root: Path, argv: list[str], repeats: int, timeout: int = 900):
    runs = [measure(root, argv, timeout) for _ in range(repeats)]
    if any(isinstance(r, str) for r in runs):
        return next(r for r in runs if isinstance(r, str))
    return tuple(statistics.median(x) for x in zip(*runs))


def cell(r) -> str:
    return r if isinstance(r, str) else f"{r[0]:.2f} s ({r[1]:.2f} s CPU), {r[2]:.0f} MB"


def main() -> None:
    quick, big = "--quick" in sys.argv, "--big" in sys.argv
    cases = CASES + ([] if quick else CLUSTER_CASES) + (BIG if big else [])
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp)
        archive = subprocess.run(["git", "archive", PREVIOUS, "collsim"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        for root in (ROOT, old):            # warm: numba's cache and the byte code of both trees
            measure(root, ["--algo", "ring", "--ranks", "8", *UNIFORM])
        print(f"Machine: {machine()}; this tree median of {REPEATS}, previous once; fresh process each; previous: "
              f"{PREVIOUS}\n")
        print("| case | this tree | previous release | wall ratio (previous / this) |\n|---|---|---|---:|")
        for label, argv in cases:
            now, then = median(ROOT, argv, REPEATS), median(old, argv, 1, OLD_TIMEOUT_S)
            ratio = f"{then[0] / now[0]:.1f}x" if not isinstance(now, str) and not isinstance(then, str) else "-"
            print(f"| {label} | {cell(now)} | {cell(then)} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
