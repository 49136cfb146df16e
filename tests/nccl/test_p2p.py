"""NCCL's p2p channels against the counts its source gives (paths.cc ncclTopoGetNchannels and
ncclTopoComputeP2pChannels, enqueue.cc addP2pToPlan at v2.28.9 and v2.29.7)."""
from dataclasses import replace

import pytest

from collsim.machine import load_cluster
from collsim.nccl.p2p import P2P_LL_THRESHOLD, channels_per_peer, op_channels, p2p_channels, protocol, step_bytes

H100 = load_cluster("h100-nvlink")                      # 8 x H100 on NVSwitch, 18 NVLinks each
TWO = replace(load_cluster("ib-400g", nodes=2), nccl="2.28")
BUFF = 4 << 20


def test_p2p_channels_are_the_collective_channels_rounded_to_a_power_of_two():
    assert [p2p_channels(n) for n in (1, 3, 16, 24, 32, 100)] == [1, 4, 16, 32, 32, 64]


def test_an_nvswitch_peer_gets_two_channels_per_nvlink_within_the_p2p_channels():
    assert channels_per_peer(H100, 32) == 32          # 2 x 18 = 36, rounded up to 64, within 32
    assert channels_per_peer(replace(H100, intra="pcie", nvls=False), 32) == 2


def test_a_network_peer_until_2_28_two_channels_then_the_nics_bandwidth_over_14_gbs():
    assert channels_per_peer(TWO, 16) == 2
    assert channels_per_peer(replace(TWO, nccl="2.29"), 16) == 4      # ceil(50 GB/s / 14)
    big = replace(TWO, nccl="2.29").resized(nodes=64)                 # 512 ranks: ceil(512 / 8) peers' batches
    assert channels_per_peer(big, 16) == 1
    assert channels_per_peer(replace(TWO, nccl="2.28").resized(nodes=64), 16) == 1   # 2 x 512 > 4 x 16


def test_one_send_takes_more_channels_as_its_parts_outgrow_a_step():
    assert step_bytes(H100, BUFF) == 512 << 10 and step_bytes(TWO, BUFF) == 128 << 10
    assert step_bytes(H100, 1 << 20) == 128 << 10                     # a step is at most NCCL_BUFFSIZE / 8
    per = channels_per_peer(H100, 32)
    sizes = [1 << 10, 1 << 20, 64 << 20, 1 << 30]
    assert [op_channels(H100, b, per, 32, BUFF) for b in sizes] == [1, 4, 4, 32]   # 64 MiB: 4 parts of 16 MiB
    assert [op_channels(TWO, b, 2, 16, BUFF) for b in sizes] == [1, 2, 2, 2]    # from 1, doubled while parts > 128 KiB


@pytest.mark.parametrize("nbytes", [0, -5])
def test_an_empty_send_runs_on_one_channel(nbytes):
    assert op_channels(H100, nbytes, 32, 32, BUFF) == 1


def test_small_sends_run_ll_where_the_connection_has_ll_buffers():
    """enqueue.cc:799-835@v2.28.9: LL up to per-peer channels x NCCL_P2P_LL_THRESHOLD; the network's p2p
    connections have no LL buffers by default (NCCL_ALLOC_P2P_NET_LL_BUFFERS=0), so across nodes Simple."""
    one, two = load_cluster("a100-nvlink"), load_cluster("ib-400g", 2)
    assert protocol(one, 4 * P2P_LL_THRESHOLD, 4) == "LL" and protocol(one, 4 * P2P_LL_THRESHOLD + 1, 4) == "Simple"
    assert protocol(two, 1024, 4) == "Simple" and protocol(one, 0, 4) == "Simple"
    assert step_bytes(one, 4 << 20, "LL") == 64 << 10 and step_bytes(one, 4 << 20) == 512 << 10
    from collsim.predict import nccl_context
    ctx = nccl_context(one)
    assert [d.proto for d in ctx.decisions([1024, 1 << 30], "alltoall")] == ["LL", "Simple"]
