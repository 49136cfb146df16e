"""collsim.simulate.shift: a ring on ranks alike simulated on the smallest prime factor of its ranks gives every
kept transfer its time in the whole ring, and ``collsim simulate`` answers with the whole ring's figures."""
import json
import subprocess
import sys

import numpy as np
import pytest

from collsim.algorithms import resolve
from collsim.algorithms.ring import ring
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate
from collsim.simulate.shift import ring_shift, smallest_factor


def uniform(p: int, nodes: int = 1) -> Topology:
    return Topology(nodes, p // nodes, Link(1e-6, 1e-11), Link(3e-6, 4e-11), name=f"uniform-{p}")


@pytest.mark.parametrize("p, channels, slices, gamma, policy, nodes", [
    (12, 1, 1, 0.0, "fair", 1), (16, 3, 2, 1e-12, "fair", 1), (15, 2, 1, 0.0, "fair", 1),
    (12, 2, 2, 0.0, "schedule", 1), (10, 2, 1, 2e-12, "fair", 10)])
def test_the_shift_quotient_gives_the_whole_rings_times(p, channels, slices, gamma, policy, nodes):
    count = p * channels * slices * 40
    topo = uniform(p, nodes)
    q = resolve("ring", p, count, 4, channels=channels, slices=slices)
    shift = ring_shift(p, count, 4, q, topo)
    whole = ring(p, count, 4, slices=slices, channels=channels)
    assert shift.schedule is not None and shift.kept == smallest_factor(p) < p
    assert (shift.steps, shift.transfers) == (whole.n_steps, whole.n_transfers)
    a = simulate(whole, topo, gamma, progress=False, policy=policy)
    b = simulate(shift.schedule, topo, gamma, progress=False, policy=policy)
    assert b.time_s == a.time_s
    kept = whole.src < shift.kept
    np.testing.assert_allclose(b.arrive, a.arrive[kept], rtol=1e-12)
    np.testing.assert_allclose(b.start, a.start[kept], rtol=1e-12)
    assert shift.resources(b.resource_table(), topo) == a.resource_table()


@pytest.mark.parametrize("count, topo, why", [
    (12 * 40 + 1, uniform(12), "not a multiple"), (13 * 40, uniform(13), "no smaller shift"),
    (12 * 40, uniform(12, 3), "nodes of several GPUs")])
def test_rings_whose_ranks_are_not_alike_run_whole(count, topo, why):
    p = topo.ranks
    shift = ring_shift(p, count, 4, resolve("ring", p, count, 4), topo)
    assert shift.schedule is None and why in shift.whole and shift.symmetry["ranks_simulated"] == p


def _cli(*args):
    out = subprocess.run([sys.executable, "-m", "collsim", "simulate", "--algo", "ring", "--bytes", "3M",
                          "--alpha", "1e-6", "--beta", "1e-11", "--json", *args], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_cli_answers_with_the_whole_rings_figures():
    quotient, whole = _cli("--ranks", "24", "--channels", "2"), _cli("--ranks", "24", "--channels", "2", "--transfers")
    assert quotient["symmetry"]["ranks_simulated"] == 2 and whole["symmetry"]["ranks_simulated"] == 24
    assert "--transfers" in whole["symmetry"]["whole_because"]
    whole.pop("result")
    for d in (quotient, whole):
        d.pop("symmetry")
    assert quotient == whole and len(whole["resources"]) == 48
