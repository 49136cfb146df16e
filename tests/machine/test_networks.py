"""collsim.machine.networks: the network kinds between nodes and what their transports do, with their sources."""
from collsim.machine.networks import NETS


def test_network_kinds_and_what_their_transport_does():
    assert set(NETS) == {"ib", "roce", "tcp", "efa", "tcpx", "slingshot"}
    for name, n in NETS.items():
        assert n.name == name and len(n.source) > 60 and 0 < n.efficiency <= 1
    assert [n for n, x in NETS.items() if not x.rdma] == ["tcp"]                  # sockets copy through the host
    assert [n for n, x in NETS.items() if x.groups_nics] == ["efa"]                # aws-ofi-nccl's NIC groups
    assert NETS["efa"].plugin_latency_us == 75.0 and NETS["ib"].plugin_latency_us == 0.0   # platform-aws.cpp:87,137
    assert "aws-ofi-nccl" in NETS["efa"].source and "TCPX" in NETS["tcpx"].source


def test_each_network_says_whose_code_moves_its_bytes():
    transport = {n: x.transport for n, x in NETS.items()}
    assert transport == {"ib": "verbs", "roce": "verbs", "tcp": "socket", "efa": "plugin", "tcpx": "plugin",
                         "slingshot": "plugin"}
    assert sorted(n for n, x in NETS.items() if x.tcp) == ["tcp", "tcpx"]          # steps are TCP exchanges
    sling = NETS["slingshot"]                      # CXI through aws-ofi-nccl: GPUDirect, no plugin latency off AWS
    assert sling.rdma and sling.plugin_latency_us == 0.0 and "CXI" in sling.source and sling.efficiency == 0.972
