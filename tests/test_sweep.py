"""Tests of collsim.sweep: nccl-tests sizes and bandwidth definitions, closed and simulated sweeps."""
import numpy as np
import pytest

from collsim.core.collective import ALLREDUCE
from collsim.errors import CollsimError
from collsim.machine.topology import Link, Topology
from collsim.simulate import simulate
from collsim.sweep import sizes, sweep, to_records
from collsim.units import algbw_GBps


def test_sizes_like_nccl_tests():
    s = sizes()
    assert s[0] == 8 and s[-1] == 16 * 2**30 and len(s) == 32 and s.dtype == np.int64
    assert sizes(8, 100, 4).tolist() == [8, 32]
    assert sizes(1000, 1000).tolist() == [1000]
    for bad in ((0, 8, 2), (16, 8, 2), (8, 64, 1), (8.5, 64, 2), (True, 8, 2)):
        with pytest.raises(CollsimError):
            sizes(*bad)


def test_bandwidth_definitions():
    assert ALLREDUCE.busbw_factor(8) == pytest.approx(1.75) and ALLREDUCE.busbw_factor(1) == 0.0
    assert algbw_GBps(2e9, 0.5) == pytest.approx(4.0)
    np.testing.assert_allclose(algbw_GBps(np.array([1e9, 0]), np.array([1.0, 0.0])), [1.0, 0.0])
    assert algbw_GBps(8, 0.0) == np.inf
    with pytest.raises(CollsimError):
        ALLREDUCE.busbw_factor(0)


def test_simulated_sweep_matches_single_simulations_and_formula():
    from collsim.algorithms import build_schedule
    P, alpha, beta = 8, 5e-6, 1e-11
    sz = sizes(8, 1 << 24, 4)
    tab = sweep(["ring", "double-tree"], P, sz, alpha=alpha, beta=beta, method="simulate", gamma=1e-12)
    assert tab["algo"].tolist() == ["ring"] * len(sz) + ["double-tree"] * len(sz)
    assert tab["bytes"].tolist() == sz.tolist() * 2 and tab["count"].tolist() == (sz // 4).tolist() * 2
    topo = Topology.uniform(P, alpha, beta)
    want = [simulate(build_schedule(a, P, int(s) // 4), topo, gamma=1e-12).time_s
            for a in ("ring", "double-tree") for s in sz]
    np.testing.assert_allclose(tab["time_s"], want, rtol=1e-15)
    big = (tab["algo"] == "ring") & (tab["bytes"] % (4 * P) == 0)   # even chunks: exact formula
    n = tab["bytes"][big]
    np.testing.assert_allclose(tab["time_s"][big], 2 * (P - 1) * (alpha + n / P * beta)
                               + (P - 1) * n / P * 1e-12, rtol=1e-12)
    np.testing.assert_allclose(tab["busbw_GBps"], tab["algbw_GBps"] * 1.75)
    np.testing.assert_allclose(tab["algbw_GBps"], tab["bytes"] / 1e9 / tab["time_s"])
    rec = to_records(tab)
    assert rec[0]["algo"] == "ring" and rec[0]["bytes"] == 8 and set(rec[0]) == set(tab)


def test_simulated_sweep_on_a_topology_fills_gpus_per_node():
    topo = Topology(2, 4, Link(1e-6, 1e-11), Link(5e-6, 1e-10), 4)
    tab = sweep(["hierarchical", "ring"], 8, [1 << 20], method="simulate", topology=topo)
    assert np.all(tab["time_s"] > 0)
    # one NIC per node makes the hierarchical inter-node phase contend: slower
    slow = sweep(["hierarchical"], 8, [1 << 20], method="simulate",
                 topology=Topology(2, 4, topo.intra, topo.inter, 1))
    assert slow["time_s"][0] > tab["time_s"][0]


def test_closed_form_sweep_uses_cost_module():
    from collsim.cost import closed_form
    sz = sizes(8, 1 << 30)
    tab = sweep(["ring", "double-tree"], 16, sz, alpha=5e-6, beta=1e-11)
    want = [closed_form(a, 16, int(s), 5e-6, 1e-11, 0.0) for a in ("ring", "double-tree") for s in sz]
    np.testing.assert_allclose(tab["time_s"], want)


def test_sweep_errors():
    with pytest.raises(CollsimError, match="alpha and beta"):
        sweep(["ring"], 4, [8])
    with pytest.raises(CollsimError, match="method"):
        sweep(["ring"], 4, [8], alpha=1e-6, beta=1e-9, method="guess")
    with pytest.raises(CollsimError, match="sizes"):
        sweep(["ring"], 4, [-8], alpha=1e-6, beta=1e-9)
    with pytest.raises(CollsimError, match="ranks"):
        sweep(["ring"], 0, [8], alpha=1e-6, beta=1e-9)
    with pytest.raises(CollsimError, match="unknown algorithm"):
        sweep(["nope"], 4, [8], alpha=1e-6, beta=1e-9, method="simulate")


def test_params_go_to_the_algorithms_that_take_them():
    from collsim.cost import closed_form
    kw = dict(alpha=2e-6, beta=1e-11)
    tab = sweep(["ring", "double-tree", "hierarchical"], 16, [1 << 22], slices=4, chunks=8, gpus_per_node=4,
                alpha_inter=1e-5, beta_inter=1e-10, **kw)
    want = [closed_form("ring", 16, 1 << 22, slices=4, **kw), closed_form("double-tree", 16, 1 << 22, chunks=8, **kw),
            closed_form("hierarchical", 16, 1 << 22, gpus_per_node=4, chunks=8, slices=4,
                        alpha_inter=1e-5, beta_inter=1e-10, **kw)]
    np.testing.assert_allclose(tab["time_s"], want)
