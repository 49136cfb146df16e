"""NCCL's run of every collective besides AllReduce: its schedule proved by the checker, its ring halves the
AllReduce's ring (ReduceScatter + AllGather = AllReduce, the same busbw), and the chain's two directions alike."""
from dataclasses import replace

import pytest

from collsim.core.checker import check
from collsim.core.collective import COLLECTIVES
from collsim.errors import CollsimError
from collsim.machine import load_cluster
from collsim.machine.fabric import Fabric
from collsim.predict import predict_nccl
from collsim.predict.collective_runs import collective_run

GiB = 1 << 30
ONE_NODE, FOUR_NODES = load_cluster("h100-nvlink"), load_cluster("ib-400g", nodes=4)


def ring_time(cluster, coll, size=GiB):
    (row,) = predict_nccl(cluster, [size], algo="Ring", coll=coll)["rows"]
    assert row["algo"] == "Ring" and row["timed_by"] == "simulated"
    return row


@pytest.mark.parametrize("coll, algo, cluster", [(c, "P2P" if c in ("alltoall", "sendrecv") else "Ring", cl)
                                                 for c in COLLECTIVES if c != "all_reduce"
                                                 for cl in (load_cluster("h100-nvlink").resized(gpus_per_node=4),
                                                            load_cluster("ib-400g").resized(2, 2))]
                         + [(c, "PAT", replace(load_cluster("ib-400g"), nvls=False).resized(4, 1))
                            for c in ("all_gather", "reduce_scatter")])
def test_every_run_computes_its_collective(coll, algo, cluster):
    run = collective_run(cluster, coll, algo, "Simple", 64 << 10, 2, 4 << 20)
    assert run.schedule.collective == coll
    report = check(run.schedule)
    assert report.ok, report.error


@pytest.mark.parametrize("cluster", [ONE_NODE, FOUR_NODES], ids=["1 node", "4 nodes"])
def test_reduce_scatter_and_all_gather_are_the_halves_of_the_ring_all_reduce(cluster):
    ar, rs, ag = (ring_time(cluster, c) for c in ("all_reduce", "reduce_scatter", "all_gather"))
    assert rs["time_us"] + ag["time_us"] == pytest.approx(ar["time_us"], rel=0.1)
    for half in (rs, ag):          # the same bytes on every link per busbw byte
        assert half["busbw_GBps"] == pytest.approx(ar["busbw_GBps"], rel=0.1)


def test_broadcast_and_reduce_run_the_same_chain_in_opposite_directions():
    b, r = ring_time(FOUR_NODES, "broadcast"), ring_time(FOUR_NODES, "reduce")
    assert b["time_us"] == pytest.approx(r["time_us"], rel=0.02)
    nics_GBps = 8 * 400 / 8                    # each node's chain crossings share its 8 NICs of 400 Gb/s
    assert 0.5 * ring_time(FOUR_NODES, "all_gather")["busbw_GBps"] < b["busbw_GBps"] <= 1.05 * nics_GBps


def test_an_algorithm_nccl_has_not_for_the_collective_is_refused():
    with pytest.raises(CollsimError, match="does not simulate NCCL's Tree broadcast"):
        collective_run(FOUR_NODES, "broadcast", "Tree", "Simple", GiB, 2, 4 << 20)


@pytest.mark.parametrize("nodes", [2, 4])
def test_alltoall_across_nodes_is_bound_by_each_gpus_nic(nodes):
    """sjeaugey (NVIDIA/nccl-tests#130): AlltoAll busbw on N nodes is N/(N-1) x the bandwidth per GPU."""
    (row,) = predict_nccl(load_cluster("ib-400g", nodes=nodes), [GiB], coll="alltoall")["rows"]
    per_gpu = 400 / 8 * nodes / (nodes - 1)
    assert row["algo"] == "P2P" and ".nic" in row["busiest"] and row["busy"] > 0.9
    assert 0.8 * per_gpu < row["busbw_GBps"] <= per_gpu


def test_p2p_ports_are_shared_by_the_channels_the_sends_use():
    """SendRecv on 8 ranks sends on 4 of NCCL's 32 p2p channels at 64 MiB (enqueue.cc:894-900@v2.28.9): those
    share a GPU's port, the 28 idle ones do not; AlltoAll's sends to 7 peers use 7 x 4 of them."""
    from collsim.predict.collective_runs import collective_run
    c = load_cluster("a100-nvlink", 1)
    run = collective_run(c, "sendrecv", "P2P", "Simple", 64 << 20, 32, 4 << 20)
    assert (run.channels, run.sharing) == (32, 4)
    assert collective_run(c, "alltoall", "P2P", "Simple", 64 << 20, 32, 4 << 20).sharing == 7 * 4   # 7 peers x 4


@pytest.mark.parametrize("nodes, fabric, unit", [(6, None, 1), (5, None, 1), (6, Fabric(2, False, 4.0), 2),
                                                 (8, Fabric(2, True, 2.0), 2)],
                         ids=["6 nodes", "5 nodes", "ToR leaves of 2 at 4:1", "rail leaves of 2 at 2:1"])
def test_alltoall_folded_on_two_units_has_the_whole_runs_time(monkeypatch, nodes, fabric, unit):
    """The fold (``alltoall_fold``): two units' ranks send all their sends, a send to another unit lands at its
    place in the other kept unit; every send keeps its route and each port its set of sends, so the run takes the
    whole alltoall's time, to rounding, on a node count that is no power of two and under fabrics that slow it."""
    import collsim.predict.collective_runs as runs
    from collsim.predict import nccl_context, simulate_nccl
    cluster = load_cluster("ib-400g", nodes)
    cluster = replace(cluster, fabric=fabric) if fabric else cluster
    folded = simulate_nccl(nccl_context(cluster), "P2P", "Simple", 16 << 20, 16, coll="alltoall")
    assert runs.fold_unit(cluster) == unit and folded.symmetry["nodes_simulated"] == 2 * unit
    run = lambda: runs.collective_run(cluster, "alltoall", "P2P", "Simple", 16 << 20, 16, 4 << 20).schedule  # noqa
    fold = run()
    monkeypatch.setattr(runs, "fold_unit", lambda c: 0)
    whole = simulate_nccl(nccl_context(cluster), "P2P", "Simple", 16 << 20, 16, coll="alltoall")
    assert whole.symmetry["nodes_simulated"] == nodes
    assert fold.n_transfers * nodes == run().n_transfers * 2 * unit and fold.meta["folded_of"] == 8 * nodes
    assert folded.time_s == pytest.approx(whole.time_s, rel=1e-9)
    assert folded.symmetry["fabric"].split(":")[0] == whole.symmetry["fabric"].split(":")[0]


def test_alltoall_runs_whole_where_units_do_not_repeat():
    from collsim.predict.collective_runs import fold_unit
    assert fold_unit(load_cluster("ib-400g", 2)) == 0                                     # under 3 units
    assert fold_unit(replace(load_cluster("ib-400g", 7), fabric=Fabric(2, False, 4.0))) == 0      # a partial unit
    slow = replace(load_cluster("ib-400g", 6), degraded_nics=((1, 0, 200.0),))
    assert fold_unit(slow) == 0
