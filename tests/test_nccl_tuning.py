"""NCCL 2.28 tuning formulas against values worked out by hand from src/graph/tuning.cc."""
import numpy as np
import pytest

from collsim.errors import CollsimError
from collsim.nccl.tuning import Hardware, algo_time_us, choose, nccl_channels, table_from_printed, tuning_table


def test_two_h200_table_by_hand():
    # 2 x H200: graph search finds 12 channels x 30 GB/s (bus 360 GB/s), one node, NVLink.
    t = tuning_table(Hardware(n_ranks=2, channels=12, bw_intra=30.0))
    rows = t.rows()
    # Ring: nsteps = 2, algbw = bus * n / nsteps = bus.
    assert rows["Ring"]["Simple"] == pytest.approx((8.4 + 2 * 3.4, 360.0))
    assert rows["Ring"]["LL"] == pytest.approx((6.6 + 2 * 0.6, 141.0))        # min(141, 180)
    assert rows["Ring"]["LL128"] == pytest.approx((14.0 + 2 * 1.9, 331.2))    # min(.92*360, 12*36.7)
    # Tree: bus = min(.92*360, 12*38.7) = 331.2, then protocol caps, then x0.5.
    assert rows["Tree"]["Simple"] == pytest.approx((8.4 + 2 * 4.0, 165.6))
    assert rows["Tree"]["LL"] == pytest.approx((6.8 + 2 * 0.6, 331.2 / 3.8 / 2))
    assert rows["Tree"]["LL128"] == pytest.approx((14.0 + 2 * 1.25, 331.2 * 7 / 9 / 2))
    assert t.coll_channels == 24


def test_multi_node_latency_and_bandwidth():
    # 2 nodes x 8 GPUs, Intel CPU: ring nInter = 2, intra hop max(NVLink hop, net overhead).
    hw = Hardware(n_ranks=16, n_nodes=2, channels=4, bw_intra=20.0, bw_inter=24.0)
    t = tuning_table(hw)
    lat, bw = t.rows()["Ring"]["Simple"]
    assert lat == pytest.approx(8.4 + (30 - 2) * max(3.4, 3.0) + 2 * 14.0)
    assert bw == pytest.approx(4 * 20.0 * 16 / 30)      # nNodes <= 2 uses bwIntra
    lat, bw = t.rows()["Ring"]["LL"]
    assert lat == pytest.approx(6.6 + 28 * max(0.6, 1.0) + 2 * 2.7)
    assert bw == pytest.approx(min(39.0, 0.5 * 80) * 16 / 30)   # Intel N2 LL cap
    lat, _ = t.rows()["Tree"]["Simple"]
    assert lat == pytest.approx(8.4 + 2 * (7 * 4.0 + 1 * 14.0))
    # One GPU per node: the net latency of the tree is used for the ring too.
    t1 = tuning_table(Hardware(n_ranks=2, n_nodes=2, channels=2, bw_intra=1.2))
    assert t1.rows()["Ring"]["LL"][0] == pytest.approx(6.6 + 2 * 5.0)


def test_algo_time_tree_correction_and_ring_plateau():
    t = tuning_table(Hardware(n_ranks=2))
    # 1 MiB: log2(2**20 >> 6) = 14 -> Simple factor .5, LL .5, LL128 .6
    nb = 2 ** 20
    assert algo_time_us(t, "tree", "simple", nb)[0] == pytest.approx(16.4 + nb / (1000 * 165.6 * .5))
    assert algo_time_us(t, "Tree", "LL128", nb)[0] == pytest.approx(16.5 + nb / (1000 * 128.8 * .6))
    # Below 128 B NCCL's log2i(nBytes >> 6) is 0 (utils.h:42), so factor[0] = .9; from 512 MiB (index 23) none.
    assert algo_time_us(t, "Tree", "Simple", 32)[0] == pytest.approx(16.4 + 32 / (1000 * 165.6 * .9))
    assert algo_time_us(t, "Tree", "Simple", 2 ** 30)[0] == pytest.approx(16.4 + 2 ** 30 / (1000 * 165.6))
    assert algo_time_us(t, "Ring", "Simple", 4096)[0] == pytest.approx(15.2 + 4096 / 360000)
    # Multi-node ring Simple: latency x1.4 once nBytes / (channels * ranks) >= 64 (Hopper).
    tm = table_from_printed({"Ring": {"Simple": (20.0, 10.0)}}, n_ranks=2, n_nodes=2, coll_channels=4)
    small, large = algo_time_us(tm, "Ring", "Simple", [511, 512])
    assert small == pytest.approx(20.0 + 511 / 1e4)
    assert large == pytest.approx(28.0 + 512 / 1e4)


def test_choice_crossover_ll_to_simple():
    t = tuning_table(Hardware(n_ranks=2))
    picks = choose(t, [8, 2 ** 20, 2 ** 21, 2 ** 30])
    assert [(a, p) for a, p, _ in picks] == [("Ring", "LL"), ("Ring", "LL"), ("Ring", "Simple"), ("Ring", "Simple")]
    # Crossover by hand: 7.8 + x/141000 = 15.2 + x/360000 -> x = 1.7e6 B
    x = 7.4 / (1 / 141000 - 1 / 360000)
    below, above = choose(t, [int(x * 0.98), int(x * 1.02)])
    assert below[1] == "LL" and above[1] == "Simple"


def test_disabled_entries_and_printed_table():
    t = table_from_printed({"ring": {"ll": (7.8, 141.0), "simple": (15.2, 0.0)}, "NVLS": {"Simple": (25, 0)}}, 2)
    assert np.isnan(algo_time_us(t, "Ring", "Simple", 1024)[0])
    assert all(p == "LL" for _, p, _ in choose(t, [8, 2 ** 32]))
    with pytest.raises(CollsimError, match="unknown name"):
        table_from_printed({"Rung": {"LL": (1, 1)}}, 2)
    with pytest.raises(CollsimError, match="lat_us, bw_GBps"):
        table_from_printed({"Ring": {"LL": "fast"}}, 2)
    with pytest.raises(CollsimError, match="no enabled"):
        choose(table_from_printed({"Ring": {"LL": (1, 0)}}, 2), [8])


def test_channel_and_thread_thresholds():
    # Simple: 64 B/thread x 512 threads = 32 KiB per channel.
    assert nccl_channels("Ring", "Simple", 24 * 32768, 24, 2) == (24, 512)
    assert nccl_channels("Ring", "Simple", 24 * 32768 - 1, 24, 2) == (23, 512)
    assert nccl_channels("Ring", "Simple", 8192, 24, 2) == (1, 128)
    # Ring LL threshold is 8 x nRanks: 16 B/thread x 512 = 8 KiB per channel on 2 ranks.
    assert nccl_channels("Ring", "LL", 65536, 24, 2) == (8, 512)
    assert nccl_channels("Tree", "LL128", 10 * 640 * 8, 24, 2) == (10, 640)
    assert nccl_channels("Ring", "LL", 8, 24, 2) == (1, 64)   # halves down to 64 (not a multiple of 128)


def test_bad_hardware():
    with pytest.raises(CollsimError):
        Hardware(n_ranks=3, n_nodes=2)
    with pytest.raises(CollsimError):
        Hardware(n_ranks=2, intra="infiniband")


def test_hardware_inputs_reproduce_printed_2xh200_table():
    # NCCL 2.28.9 on 2 x H200 printed this AllReduce row (graph search: ring 12 x 30 GB/s,
    # tree 12 x 60 GB/s, pattern 1 = balanced tree).
    from pathlib import Path

    from collsim.nccl.log import parse_file
    log = parse_file(Path(__file__).parent.parent / "data/h200x2/nccl-tests/probe_default.log")
    printed = log.tuning["AllReduce"]
    ours = tuning_table(Hardware(2, channels=12, bw_intra=30.0, tree_channels=12, tree_bw_intra=60.0)).rows()
    for algo in ("Ring", "Tree"):
        for proto in ("LL", "LL128", "Simple"):
            lat, bw = printed[algo][proto]
            assert ours[algo][proto] == pytest.approx((lat, bw), abs=0.051), (algo, proto)
