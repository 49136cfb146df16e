"""collsim.predict.simulation: the simulation of NCCL's run, its reductions measured against the whole run."""
import pytest

import collsim.predict.simulation as simulation
from collsim.machine import load_cluster
from collsim.predict import nccl_context, predict_nccl, simulate_nccl


@pytest.mark.parametrize("spec, nodes, algo, nbytes", [
    ("h100-nvlink", 1, "NVLS", 1 << 30), ("ib-400g", 4, "NVLSTree", 1 << 29), ("ib-400g", 4, "Tree", 1 << 27),
    ("h100-nvlink", 1, "Tree", 1 << 28), ("ib-400g", 2, "Ring", 1 << 30), ("h100-sharp", 4, "CollNetDirect", 1 << 29),
    ("h100-sharp", 4, "CollNetChain", 1 << 28), ("h100-sharp", 4, "NVLS", 1 << 29)])
def test_extrapolated_loops_are_within_2_percent_of_the_whole_run(monkeypatch, spec, nodes, algo, nbytes):
    ctx = nccl_context(load_cluster(spec, nodes), algo)
    d = ctx.decisions([nbytes])[0]
    short = simulate_nccl(ctx, d.algo, d.proto, nbytes, d.channels)
    monkeypatch.setattr(simulation, "LOOPS", (10 ** 6, 2 * 10 ** 6))
    monkeypatch.setattr(simulation, "CHAIN_LOOPS", (10 ** 6, 2 * 10 ** 6))
    whole = simulate_nccl(nccl_context(load_cluster(spec, nodes), algo), d.algo, d.proto, nbytes, d.channels)
    assert whole.simulated_loops == whole.loops
    assert short.time_s == pytest.approx(whole.time_s, rel=0.02)


@pytest.mark.parametrize("nodes, proto, nbytes", [(4, "Simple", 1 << 28), (8, "LL128", 1 << 24), (6, "LL", 1 << 20)])
def test_rings_on_an_even_node_count_run_as_two_nodes_with_the_whole_rings_time(monkeypatch, nodes, proto, nbytes):
    import collsim.predict.schedules as schedules
    ctx = nccl_context(load_cluster("ib-400g", nodes), "Ring", proto)
    quotient = simulate_nccl(ctx, "Ring", proto, nbytes, 16)
    monkeypatch.setattr(schedules, "QUOTIENT_NODES", nodes + 1)          # never: the whole ring
    whole = simulate_nccl(nccl_context(load_cluster("ib-400g", nodes), "Ring", proto), "Ring", proto, nbytes, 16)
    assert quotient.result.schedule.ranks == 16 and whole.result.schedule.ranks == 8 * nodes
    assert quotient.time_s == whole.time_s


def test_a_sweep_simulates_repeated_loops_once():
    ctx = nccl_context(load_cluster("ib-400g", 4), "NVLSTree")
    sims = [simulate_nccl(ctx, "NVLSTree", "Simple", 1 << k, 16) for k in (28, 29, 30)]
    assert [s.loops for s in sims] == [32, 64, 128] and all(s.simulated_loops == simulation.LOOPS[1] for s in sims)
    assert sims[0].result is sims[2].result                      # the same loops, simulated once
    slope = [(b.time_s - a.time_s) / (b.loops - a.loops) for a, b in zip(sims, sims[1:])]
    assert slope[0] == pytest.approx(slope[1], rel=1e-9)


def test_printed_time_is_the_simulation_plus_the_harness():
    rows = predict_nccl(load_cluster("ib-400g", 2), [8, 1 << 20, 1 << 30], harness="runner", timing="graph")["rows"]
    assert all(r["time_us"] == r["simulated_us"] and r["timed_by"] == "simulated" for r in rows)
    assert all(r["simulated_us"] >= r["kernel_us"] > 0 for r in rows)
