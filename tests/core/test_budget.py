"""collsim.core.budget: each memory estimate within 2x of the peak resident memory of the work it
estimates (measured in a subprocess: its VmHWM), so that the 4 GB bound refuses what would not
fit and admits what would; and the estimates grow with the counts they are made of."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from collsim.core.budget import check_bytes, schedule_bytes, simulation_bytes

ROOT = Path(__file__).resolve().parents[2]
# VmHWM: this process's own peak (ru_maxrss would carry the forking pytest's peak across the exec)
PEAK = """import re, sys
from collsim.cli import main
code = main(sys.argv[1:])
hwm = re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)
print("peak", int(hwm) * 1024, file=sys.stderr)
sys.exit(code)
"""


def _run(*argv):
    p = subprocess.run([sys.executable, "-c", PEAK, *map(str, argv)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120, env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "MPLBACKEND": "Agg"})
    return p.returncode, p.stderr


def estimate(*argv) -> float:
    """The estimate the command refuses with, lowering the bound until it does (its first refusal is
    the schedule's: the check's or the simulation's comes with a bound just above the schedule's)."""
    budget, said = 1, None
    for _ in range(3):
        code, err = _run("--max-memory", budget, *argv)
        m = re.search(r"would hold about ([0-9.e+]+) GB", err)
        if code == 0 or m is None:
            break
        said, budget = float(m.group(1)) * 1e9, int(float(m.group(1)) * 1e9 * 1.001) + 1
    return said


def peak(*argv) -> float:
    code, err = _run(*argv)
    assert code in (0, 1), err
    return float(re.search(r"peak (\d+)", err).group(1))


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    """20,000 rows of the bundled Ring/Simple sweep (its 30 sizes again and again)."""
    lines = (ROOT / "data" / "h200x2" / "run2" / "runner" / "nvlink_Ring_Simple_graph.jsonl").read_text().splitlines()
    path = tmp_path_factory.mktemp("big") / "m.jsonl"
    path.write_text("\n".join([lines[0]] + lines[1:] * (20_000 // (len(lines) - 1))) + "\n")
    return path


@pytest.mark.parametrize("argv", [
    ["compare", "--params", ROOT / "data" / "h200x2" / "run2" / "params.json", "--measured", "BIG"],
    ["fit", "BIG", "-o", "OUT"],
], ids=["compare-20000-rows", "fit-20000-rows"])
def test_reading_and_fitting_estimates_are_within_2x(argv, big_file):
    argv = [big_file if a == "BIG" else big_file.with_suffix(".json") if a == "OUT" else a for a in argv]
    said, held = estimate(*argv), peak(*argv)
    assert said is not None
    assert held / 2 <= said <= 2 * held, (argv, said / 1e6, held / 1e6)


@pytest.mark.parametrize("argv", [
    ["schedule", "--algo", "ring", "--ranks", 1024, "--count", 1 << 20],
    ["check", "--algo", "ring", "--ranks", 512, "--count", 1 << 20],
    ["check", "--algo", "direct", "--ranks", 768, "--count", 1 << 20],
    ["simulate", "--algo", "ring", "--ranks", 1024, "--bytes", "4M", "--alpha", 1e-6, "--beta", 1e-10, "--json"],
    ["simulate", "--algo", "direct", "--ranks", 1536, "--bytes", "4M", "--alpha", 1e-6, "--beta", 1e-10, "--json"],
    ["simulate", "--algo", "halving-doubling", "--ranks", 2048, "--bytes", "4M", "--alpha", 1e-6, "--beta", 1e-10,
     "--json"],
], ids=["schedule-ring", "check-ring", "check-direct", "simulate-ring", "simulate-direct", "simulate-halving-doubling"])
def test_an_estimate_is_within_2x_of_the_peak_it_predicts(argv):
    said, held = estimate(*argv), peak(*argv)
    assert said is not None
    assert held / 2 <= said <= 2 * held, (argv, said / 1e6, held / 1e6)


def test_estimates_grow_with_their_counts():
    assert schedule_bytes(2_000_000) > schedule_bytes(1_000_000) > schedule_bytes(0) > 0
    assert check_bytes(10, 10**9, 0) > check_bytes(10, 0, 0)
    assert check_bytes(10, 0, 10**9) > check_bytes(10, 0, 0)
    assert simulation_bytes(65537, 1, 262144, 65536) > 100e9   # simulate --algo nvls --ranks 65536: refused
    assert simulation_bytes(8, 1, 48, 8) < 250e6                 # the interpreter and the compiled engine


@pytest.mark.parametrize("algo", ["nvlstree", "nccl-tree"])
def test_nccls_schedule_is_estimated_after_its_reductions_within_2x(algo):
    """NCCL's schedule on 64 nodes x 8 H100, 16 channels: built within the bound, its simulation (the channels and
    nodes the reductions keep) refused before it starts, with an estimate within 2x of the peak it then holds."""
    argv = ["simulate", "--cluster", "ib-400g", "--nodes", 64, "--algo", algo, "--channels", 16, "--bytes", "1G",
            "--json"]
    code, err = _run("--max-memory", "100M", *argv)
    said = re.search(r"after its reductions .* would hold about ([0-9.e+]+) GB", err)
    assert code == 2 and said, err
    held = peak(*argv)
    assert held / 2 <= float(said.group(1)) * 1e9 <= 2 * held, (said.group(1), held / 1e6)
