"""collsim.diagnose.checks: evidence computed from facts: slow hosts from pair tables, ports slower than their
neighbours, busbw above the network on two nodes, two NCCL versions, separate runs."""
from pathlib import Path

from collsim.diagnose import checks
from collsim.diagnose.evidence import gather
from collsim.diagnose.sources import read_source
from collsim.diagnose.verdict import diagnose_sources

ROOT = Path(__file__).resolve().parents[2]


def report(tmp_path, texts, cluster=None, measured=None):
    paths = []
    for i, text in enumerate(texts):
        p = tmp_path / f"f{i}.txt"
        p.write_text(text)
        paths.append(read_source(p))
    return diagnose_sources(paths, cluster, measured)


def labels(rep):
    return {c["label"]: c for c in rep["causes"]}


def test_a_slow_host_is_the_one_in_several_slow_pairs_and_no_fast_one(tmp_path):
    rep = report(tmp_path, ["a1,a2 90\na1,a3 45\na2,a3 44\na2,a4 91\na3,a4 46\n"])
    (hit,) = labels(rep)["slow_or_bad_node"]["evidence"]
    assert "a3 is in 3 of the 3 slow runs" in hit["why"] and hit["where"] == "f0.txt:2"
    rep = report(tmp_path, ["a1,a2 90\na3,a4 45\na5,a6 91\n"])   # one slow pair: either host
    assert labels(rep)["slow_or_bad_node"]["score"] == 1.0


def test_ports_below_their_neighbours_and_below_the_described_nic(tmp_path):
    port = "Infiniband device 'mlx5_{}' port 1 status:\n\tstate:\t 4: ACTIVE\n\trate:\t {} Gb/sec (4X)\n"
    rep = report(tmp_path, [port.format(0, 200) + port.format(1, 200) + port.format(2, 40)])
    ev = labels(rep)["nic_link_rate"]["evidence"]
    assert len(ev) == 1 and "mlx5_2 port 1 runs at 40 Gb/s where others run at 200" in ev[0]["why"]
    rep = report(tmp_path, [port.format(0, 100)], cluster="ib-200g")   # every port at 100 on a 200G cluster
    assert "where the NIC is at 200" in labels(rep)["nic_link_rate"]["evidence"][0]["why"]


def test_two_nodes_above_the_network_only_when_not_a_forced_ring(tmp_path):
    two = "gpu: H100\ngpus_per_node: 8\nnodes: 2\nnics_per_node: 1\nnic_Gbps: 100\n"
    (tmp_path / "c.yaml").write_text(two)
    rep = report(tmp_path, ["mpirun -np 16 -H a:8,b:8 ./all_reduce_perf\n"], str(tmp_path / "c.yaml"),
                 [(1 << 30, 20.0)])
    assert "above the network's line rate, 1 x 100 Gb/s = 12.5 GB/s" in \
        labels(rep)["two_node_tree_anomaly"]["evidence"][0]["why"]
    rep = report(tmp_path, ["mpirun -np 16 -x NCCL_ALGO=Ring ./all_reduce_perf\n"], str(tmp_path / "c.yaml"),
                 [(1 << 30, 20.0)])
    assert "two_node_tree_anomaly" not in labels(rep)


def test_separate_runs_need_interleaved_blocks_or_back_to_back_footers(tmp_path):
    footers = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 3.9\n#\n"
    rep = report(tmp_path, ["mpirun -H a,b -np 2 ./all_reduce_perf\n" + footers + footers])
    assert labels(rep)["measurement_error"]["score"] >= 3
    rep = report(tmp_path, ["run 1\n" + footers + "mpirun -H a,b -np 16 ./all_reduce_perf\n" + footers])
    assert "measurement_error" not in labels(rep)   # two runs pasted one after the other


def test_json_files_of_one_host_each_are_a_launch_per_node(tmp_path):
    """Two real -J files (data/h200x2/fidelity) as if each came from its own node: a measurement error; the same
    host twice (graph and eager timing of one box) is not."""
    real = (ROOT / "data" / "h200x2" / "fidelity" / "nt_graph.json").read_text()
    rep = report(tmp_path, [real + "\n" + real.replace('"vm"', '"node2"')])
    (hit,) = labels(rep)["measurement_error"]["evidence"]
    assert "2 nccl-tests -J files of all_reduce, each on one host (vm, node2)" in hit["why"]
    assert "measurement_error" not in labels(report(tmp_path, [real + "\n" + real]))


def test_check_functions_return_nothing_without_their_facts(tmp_path):
    (tmp_path / "e").write_text("export NCCL_DEBUG=INFO\n")
    ev = gather([read_source(tmp_path / "e")])

    class Ctx:
        pass
    ctx = Ctx()
    ctx.ev, ctx.results, ctx.cluster, ctx.spec_given, ctx.nodes, ctx.gpus_per_node = ev, [], None, False, None, None
    ctx.predicted_channels, ctx.shortfall = None, False
    assert all(fn(ctx) == [] for fn in checks.CHECKS.values())
