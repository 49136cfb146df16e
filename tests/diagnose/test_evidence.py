"""collsim.diagnose.evidence: the facts of all files joined, each with the file:line it came from."""
from collsim.diagnose.evidence import gather
from collsim.diagnose.sources import read_source
from tests.diagnose.cases import DATA

SYN = DATA / "synthetic"


def sources(folder):
    return [read_source(p) for p in sorted(folder.iterdir()) if p.name != "case.json"]


def test_gpus_hosts_nodes_ranks_and_version_from_nccl_tests_and_the_log():
    ev = gather(sources(SYN / "sockets_instead_of_ib"))
    assert ev.gpu[0] == "NVIDIA H100 80GB HBM3" and ev.gpu[1].startswith("all_reduce.log:")
    assert set(ev.hosts) == {"node01", "node02"} and ev.nodes[0] == 2 and ev.gpus_per_node[0] == 8
    assert ev.ranks == (16, "nccl_debug.log:6") and ev.version[0] == "2.26.5"
    assert ev.transports["NET/Socket"] == ["nccl_debug.log:7", "nccl_debug.log:8"]
    assert ev.transports["no IB device"] == ["nccl_debug.log:2"] and "network Socket" in ev.transports
    assert ev.line("nccl_debug.log:7").endswith("via NET/Socket/0")


def test_nics_gdr_env_and_channels():
    ev = gather(sources(SYN / "gdr_disabled"))
    assert [d for d, _, _ in ev.nics] == [f"mlx5_{i}" for i in range(8)] and ev.nics[0][1] == "IB"
    assert ev.gdr == [(0, "run.out:47")] and "GDR 0" in ev.line("run.out:47")
    ev = gather(sources(SYN / "too_few_channels"))
    assert ev.env["NCCL_MAX_NCHANNELS"] == ("2", "out.log:2") and ev.coll_channels == (2, "out.log:4")
    assert ev.nvls_channels[0] == 0


def test_ports_topology_pairs_commands_and_measured():
    ev = gather(sources(SYN / "nic_link_rate"))
    assert len(ev.ports) == 8 and {p["rate_Gbps"] for p in ev.ports} == {100.0, 400.0}
    assert ev.ports[3]["where"].startswith("ibstatus.txt:")
    ev = gather(sources(SYN / "nic_on_cpu_or_wrong_numa"))
    assert ev.topo[0]["nics"] == ["NIC0", "NIC1"] and ev.topo[1] == "topo.txt"
    ev = gather(sources(SYN / "slow_or_bad_node"), measured=[(1 << 30, 42.0)])
    assert len(ev.pairs) == 6 and ev.runs[-1].source == "--measured" and ev.runs[-1].rows[0]["busbw_GBps"] == 42.0
    ev = gather(sources(SYN / "cpu_binding"))
    assert ev.commands[0]["bind_to"] == "core" and set(ev.hosts) == {"node01", "node02"}
