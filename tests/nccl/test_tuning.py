"""NCCL's tuning model: hand-worked values from src/graph/tuning.cc, the tables and per-size choices NCCL's
own code printed (fixtures/nccl_harness, data/h200x2), per-version figures and the NCCL_* settings."""
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster
from collsim.nccl.chunking import nccl_channels
from collsim.nccl.decision import cluster_table, nccl_decision, nccl_time
from collsim.nccl.tuning import Hardware, algo_time_us, choose, table_from_printed, tuning_table


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
    log = parse_file(Path(__file__).resolve().parents[2] / "data/h200x2/nccl-tests/probe_default.log")
    printed = log.tuning["AllReduce"]
    ours = tuning_table(Hardware(2, channels=12, bw_intra=30.0, tree_channels=12, tree_bw_intra=60.0)).rows()
    for algo in ("Ring", "Tree"):
        for proto in ("LL", "LL128", "Simple"):
            lat, bw = printed[algo][proto]
            assert ours[algo][proto] == pytest.approx((lat, bw), abs=0.051), (algo, proto)


TUNE = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_harness" / "tune_v2.28.9_h100_8x400G.txt"
NAMES = {"CNDirect": "CollNetDirect", "CNChain": "CollNetChain"}


def harness_tune() -> dict:
    """{nodes: {"table": {(algo, proto): (lat, bw)}, "choices": [(bytes, algo, proto, est_us, nCh, nThr)]}}."""
    out, block = {}, None
    for line in TUNE.read_text().splitlines():
        if m := re.match(r"nNodes (\d+)", line):
            block = out.setdefault(int(m[1]), {"table": {}, "choices": []})
        elif m := re.match(r"\s+(\d+) B -> (\S+)\s+(\S+)\s+est\s+([\d.]+) us.*nCh\s+(\d+) nThr\s+(\d+)", line):
            block["choices"].append((int(m[1]), m[2], m[3], float(m[4]), int(m[5]), int(m[6])))
        elif m := re.match(r"\s+(\w+)\s+LL lat (.*)", line):
            pairs = re.findall(r"lat\s+([\d.]+) us bw\s+([\d.]+)", line)
            for p, (lat, bw) in zip(("LL", "LL128", "Simple"), pairs):
                block["table"][(NAMES.get(m[1], m[1]), p)] = (float(lat), float(bw))
    return out


def h100(nodes=1, **kw):
    return Cluster("H100", 8, nodes, nics_per_node=8, nic_Gbps=400, **kw)


@pytest.mark.parametrize("nodes", [1, 2, 4, 8])
def test_harness_tables_reproduced(nodes):
    ref = harness_tune()[nodes]["table"]
    ours = cluster_table(h100(nodes))
    assert set(ours.lat) == set(ref)
    for key, (lat, bw) in ref.items():
        assert ours.lat[key] == pytest.approx(lat, abs=0.006), key
        assert ours.bw[key] == pytest.approx(bw, abs=0.006), key


@pytest.mark.parametrize("nodes", [1, 2, 4, 8])
def test_harness_choices_channels_and_threads_identical(nodes):
    ref = harness_tune()[nodes]["choices"]
    got = nccl_decision(h100(nodes), [r[0] for r in ref])
    for (size, algo, proto, est, nch, nthr), d in zip(ref, got):
        assert (d.size, d.algo, d.proto, d.channels, d.threads) == (size, algo, proto, nch, nthr)
        assert d.time_us == pytest.approx(est, rel=1e-6, abs=0.006)   # NCCL computes in float32


def test_headline_figures():
    one, two = cluster_table(h100(1)).rows(), cluster_table(h100(2)).rows()
    assert one["NVLS"]["Simple"] == pytest.approx((25.0, 272.0))        # 8 x min(40 x .85 x 7/8 x 2, 60) x 8/14
    assert two["NVLSTree"]["Simple"] == pytest.approx((66.8, 246.19), abs=0.01)  # 8 x min(59.5, 96, 57.7) x 16/30
    assert two["NVLS"]["Simple"][1] == 0.0 and one["NVLSTree"]["Simple"][1] == 0.0
    assert two["Ring"]["Simple"] == pytest.approx((8.4 + 28 * 3.4 + 2 * 14.0, 8 * 48 * 16 / 30))


def test_printed_2xh200_table_with_nvls_off():
    # The full row NCCL 2.28.9 printed on 2 x H200 with NCCL_NVLS_ENABLE=0, CollNet and NVLS rows included.
    from collsim.nccl.log import parse_file
    log = parse_file(Path(__file__).resolve().parents[2] / "data/h200x2/nccl-tests/probe_default.log")
    table = cluster_table(Cluster("H200", 2), {"NCCL_NVLS_ENABLE": "0"})
    for algo, protos in log.tuning["AllReduce"].items():
        for proto, (lat, bw) in protos.items():
            assert table.rows()[algo][proto] == pytest.approx((lat, bw), abs=0.051), (algo, proto)
    assert table.max_threads[("Ring", "Simple")] == 512 and table.max_threads[("NVLS", "Simple")] == 640
    logged = [c for c in log.choices if c.get("func", "AllReduce") == "AllReduce"]
    picks = nccl_decision(Cluster("H200", 2), [c["bytes"] for c in logged], {"NCCL_NVLS_ENABLE": "0"})
    assert [(d.algo.upper(), d.proto.upper()) for d in picks] == \
        [(c["algo"].upper(), c["proto"].upper()) for c in logged]


@pytest.mark.parametrize("version, ring_ll_1n, nvls_1n, ring_simple_2n, tree_simple_2n, nvlstree_2n", [
    # NCCL's own ncclTopoTuneModel of each tag on the harness topology (H100, 8 x 400G), AllReduce (lat us, algbw)
    ("2.18", (15.0, 50.1), (23.0, 266.7), (152.8, 192.0), (84.0, 140.8), (61.0, 224.0)),
    ("2.19", (15.0, 50.1), (23.0, 266.7), (152.8, 192.0), (448.0, 140.8), (51.0, 266.7)),
    ("2.20", (15.0, 50.1), (23.0, 266.7), (152.8, 204.8), (448.0, 140.8), (28.0, 0.0)),
    ("2.21", (15.0, 80.6), (25.0, 266.7), (152.8, 204.8), (448.0, 140.8), (53.0, 266.7)),
    ("2.23", (15.0, 80.6), (25.0, 266.7), (131.6, 204.8), (92.4, 140.8), (53.0, 266.7)),
    ("2.27", (15.0, 80.6), (25.0, 266.7), (131.6, 204.8), (92.4, 140.8), (53.0, 266.7)),
    ("2.28", (15.0, 80.6), (25.0, 272.0), (131.6, 204.8), (92.4, 140.8), (66.8, 246.2)),
])
def test_versions(version, ring_ll_1n, nvls_1n, ring_simple_2n, tree_simple_2n, nvlstree_2n):
    one = cluster_table(h100(1, nccl=version)).rows()
    two = cluster_table(h100(2, nccl=version)).rows()
    got = (one["Ring"]["LL"], one["NVLS"]["Simple"], two["Ring"]["Simple"], two["Tree"]["Simple"],
           two["NVLSTree"]["Simple"])
    want = (ring_ll_1n, nvls_1n, ring_simple_2n, tree_simple_2n, nvlstree_2n)
    assert [x for pair in got for x in pair] == pytest.approx([x for pair in want for x in pair], abs=0.051)


def test_enable_rules():
    assert cluster_table(h100(2)).bw[("Ring", "LL128")] > 0                        # PIX rings keep LL128
    assert cluster_table(h100(2, net="tcp")).bw[("Ring", "LL128")] == 0           # sockets: path via the CPU
    assert cluster_table(h100(2), {"NCCL_IB_DISABLE": "1"}).bw[("Tree", "LL128")] == 0
    pcie = Cluster("A100", 8, intra="pcie")
    assert cluster_table(pcie).bw[("Ring", "LL128")] == 0
    assert cluster_table(pcie, {"NCCL_PROTO": "LL128"}).bw[("Ring", "LL128")] > 0  # naming it forces it on
    assert cluster_table(pcie, {"NCCL_PROTO": "^LL"}).bw[("Ring", "LL128")] > 0    # so does a ^ list
    sharp = h100(2, sharp=True)
    on = cluster_table(sharp, {"NCCL_COLLNET_ENABLE": "1"})
    assert on.bw[("CollNetDirect", "Simple")] > 0 and on.bw[("NVLS", "Simple")] > 0
    assert on.bw[("CollNetDirect", "LL")] == 0
    off = cluster_table(sharp, {"NCCL_COLLNET_ENABLE": "0"})
    assert off.bw[("NVLS", "Simple")] == 0                                          # NVLS across nodes needs CollNet
    assert np.isnan(nccl_time(h100(1), "NVLSTree", "Simple", [2**20])[0])           # NVLSTree off on one node
    assert np.isnan(nccl_time(h100(2), "nvls", "simple", [2**20])[0])
    assert nccl_time(h100(1), "nvls", "simple", [2**20])[0] == pytest.approx(25.0 + 2**20 / 272000)


def test_algo_and_proto_lists():
    ring = cluster_table(h100(2), {"NCCL_ALGO": "Ring"})
    assert {a for (a, _), b in ring.bw.items() if b} == {"Ring"}
    excl = cluster_table(h100(2), {"NCCL_ALGO": "^Tree,NVLSTree", "NCCL_PROTO": "Simple"})
    assert {k for k, b in excl.bw.items() if b} == {("Ring", "Simple")}
    per_func = cluster_table(h100(2), {"NCCL_ALGO": "ring;allreduce:tree"})
    assert {a for (a, _), b in per_func.bw.items() if b} == {"Tree"}
    ignored = cluster_table(h100(2, nccl="2.23"), {"NCCL_ALGO": "Ring,Bogus"})   # unknown names ignored before 2.24
    assert {a for (a, _), b in ignored.bw.items() if b} == {"Ring"}
    # Before 2.24 a list that leaves none of Ring/Tree/NVLS/NVLSTree turns Ring and Tree back on.
    fallback = cluster_table(h100(2, nccl="2.23"), {"NCCL_ALGO": "NVLS"})
    assert {a for (a, _), b in fallback.bw.items() if b} == {"Ring", "Tree"}
    with pytest.raises(CollsimError, match="no enabled algorithm"):
        nccl_decision(h100(2), [1024], {"NCCL_ALGO": "NVLS"})


@pytest.mark.parametrize("env, fragment", [
    ({"NCCL_ALGO": "Ring,Bogus"}, "NCCL_ALGO='Ring,Bogus': unknown name 'Bogus'"),
    ({"NCCL_ALGO": "allreduce:ring;tree"}, "all entries except the first must name a function"),
    ({"NCCL_ALGO": "allgatherv:ring"}, "unknown function 'allgatherv'"),
    ({"NCCL_PROTO": "LL256"}, "unknown name 'LL256'"),
    ({"NCCL_NTHREADS": "100"}, "NCCL_NTHREADS=100: not a multiple of 32"),
    ({"NCCL_BUFFSIZE": "4MB"}, "NCCL_BUFFSIZE='4MB': NCCL reads it as 4 (its strtoll stops at 'M')"),
])
def test_bad_settings_are_one_line_errors(env, fragment):
    with pytest.raises(CollsimError, match=re.escape(fragment)) as err:
        nccl_decision(h100(2), [1024], env)
    assert "\n" not in str(err.value)


def test_channel_knobs_change_the_channels_not_the_bandwidth():
    base, capped = cluster_table(h100(1)), cluster_table(h100(1), {"NCCL_MAX_NCHANNELS": "4"})
    assert capped.bw == base.bw and capped.coll_channels == 4
    assert max(d.channels for d in nccl_decision(h100(1), [2**20], {"NCCL_MAX_NCHANNELS": "4"})) == 4
    big = nccl_decision(h100(1), [2**30], {"NCCL_NVLS_NCHANNELS": "8"})[0]
    assert (big.algo, big.channels) == ("NVLS", 8)
    many = nccl_decision(h100(1), [2**20], {"NCCL_MIN_NCHANNELS": "64", "NCCL_ALGO": "Ring"})[0]
    assert many.channels <= 64
    # The Ring Simple plateau (latency x1.4) starts at nBytes / (comm->nChannels x nRanks) >= 64.
    t16, t4 = cluster_table(h100(2)), cluster_table(h100(2), {"NCCL_MAX_NCHANNELS": "4"})
    size = 64 * 4 * 16   # 64 B per rank and channel with 4 channels, 16 B with 16
    assert algo_time_us(t4, "Ring", "Simple", [size])[0] == pytest.approx(131.6 * 1.4 + size / 204800)
    assert algo_time_us(t16, "Ring", "Simple", [size])[0] == pytest.approx(131.6 + size / 204800)


def test_threads_per_version():
    small = 4096
    tree_new = nccl_decision(h100(2), [small], {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"})[0]
    tree_old = nccl_decision(h100(2, nccl="2.21"), [small], {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"})[0]
    assert (tree_new.channels, tree_new.threads) == (1, 640)      # Tree always 640 threads from 2.22
    assert (tree_old.channels, tree_old.threads) == (1, 512)      # 4096 < 1 x 512 x 8 is false: 512 kept
    ring = nccl_decision(h100(2), [2**34], {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"})[0]
    assert (ring.channels, ring.threads) == (16, 544)              # 512 + one sync warp


def test_sizes_are_checked():
    with pytest.raises(CollsimError, match="sizes"):
        nccl_decision(h100(1), [-1])
    with pytest.raises(CollsimError, match="sizes"):
        nccl_time(h100(1), "Ring", "LL", [1.5])
    with pytest.raises(CollsimError, match="at least 2 ranks"):
        cluster_table(Cluster("H100", 1))


def test_collnet_rows_by_hand_and_nccls_choice_of_them():
    # 4 x DGX A100 with SHARP (8 x 200 Gb/s): the CollNet graphs are 8 channels, direct 24/24 GB/s (the NIC
    # behind Gen4 x16), chain 30/24 (the tree's, bwIntra raised towards 2 x bwInter).
    c = Cluster("A100", 8, 4, nics_per_node=8, nic_Gbps=200, sharp=True)
    rows = cluster_table(c).rows()
    # CollNetDirect Simple (tuning.cc:313-322,386-388@v2.28.9): bus 8 x 24 / (f - (f-1)/2), f = ppn/nCh = 1,
    # no x.85 below SM90, algbw x .5; latency 2 (1 x NVLink hop 3.7 + 7 x 0.4 arity) + NET hop 31
    assert rows["CollNetDirect"]["Simple"] == pytest.approx((2 * (3.7 + 7 * 0.4) + 31.0, 8 * 24 * 0.5))
    # CollNetChain Simple (tuning.cc:284,389-390): bus 8 x bwIntra 30, x .5; latency 2 x 7 x 2.8 + 30
    assert rows["CollNetChain"]["Simple"] == pytest.approx((2 * 7 * 2.8 + 30.0, 8 * 30 * 0.5))
    assert rows["CollNetDirect"]["LL"][1] == rows["CollNetChain"]["LL128"][1] == 0.0        # Simple only
    picks = [(d.algo, d.proto) for d in nccl_decision(c, [8, 1 << 17, 1 << 23, 1 << 29])]
    assert picks == [("Tree", "LL"), ("CollNetDirect", "Simple"), ("CollNetDirect", "Simple"),
                     ("CollNetChain", "Simple")]
    assert {d.algo for d in nccl_decision(c, [1 << 17, 1 << 29], {"NCCL_COLLNET_ENABLE": "0"})} <= {"Ring", "Tree"}
    # H100 with SHARP: NVLS across nodes is NCCL's NVLS + CollNet (the switches reduce the node sums)
    h = nccl_decision(Cluster("H100", 8, 4, nics_per_node=8, nic_Gbps=400, sharp=True), [1 << 23])[0]
    assert h.algo == "NVLS"


def test_the_efa_plugin_latency_enters_nccls_latencies():
    # latencyInter 75 us on every network hop, and once more for Simple (the flush, tuning.cc:356-359@v2.28.9)
    p5 = Cluster("H100", 8, 2, nics_per_node=32, nic_Gbps=100, net="efa")
    ib = Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400, net="ib")
    efa, base = cluster_table(p5).rows(), cluster_table(ib).rows()
    assert efa["Ring"]["LL"][0] == pytest.approx(base["Ring"]["LL"][0] + 2 * 75.0)        # 2 network steps
    assert efa["Ring"]["Simple"][0] == pytest.approx(base["Ring"]["Simple"][0] + 2 * 150.0)
    assert efa["Tree"]["LL"][0] == pytest.approx(base["Tree"]["LL"][0] + 2 * 75.0)        # 2 x log2(2) hops
    assert efa["Ring"]["Simple"][1] == base["Ring"]["Simple"][1]                           # 8 x 400 Gb/s either way


def test_ll128_on_sm86_links_follows_the_version():
    # 2.25-2.26 enable LL128 by compute capability 70/80/90/100/120 only (tuning.cc:431-437@v2.26.6): an RTX 3090
    # pair (SM86) over its NVLink bridge gets none; 2.27+ drop the list (tuning.cc:478-494@v2.28.9)
    pair = Cluster("RTX3090", 2, intra="nvlink")
    assert cluster_table(replace(pair, nccl="2.26")).bw[("Ring", "LL128")] == 0
    assert cluster_table(pair).bw[("Ring", "LL128")] > 0
    assert cluster_table(Cluster("L40S", 2)).bw[("Ring", "LL128")] == 0              # PCIe paths: never by default


def test_what_2_29_and_2_30_change_on_blackwell():
    # Ring LL128 per-channel cap on 2 nodes 34.6 -> 40 (tuning.cc:179@v2.28.9 -> :180@v2.29.7); NVLSTree x
    # treeCorrectionFactor on x86 hosts from 2.29 (tuning.cc:596@v2.29.7: 0.8 at 64 MiB, Simple); NVLSTree cap
    # beyond 2 nodes 43.8 -> 80 per channel (tuning.cc:198@v2.29.7 -> :210@v2.30.7); Hopper unchanged
    two, four = (Cluster("B200", 8, n, nics_per_node=8, nic_Gbps=400) for n in (2, 4))
    old, new = (cluster_table(replace(two, nccl=v)) for v in ("2.28", "2.29"))
    assert new.bw[("Ring", "LL128")] / old.bw[("Ring", "LL128")] == pytest.approx(40.0 / 34.6)
    lat, bw = new.rows()["NVLSTree"]["Simple"]
    assert algo_time_us(new, "NVLSTree", "Simple", [1 << 26])[0] == pytest.approx(lat + (1 << 26) / (1e3 * bw * .8))
    assert algo_time_us(old, "NVLSTree", "Simple", [1 << 26])[0] == pytest.approx(lat + (1 << 26) / (1e3 * bw))
    grace = cluster_table(Cluster("GB200", 4, 2, nics_per_node=4, nic_Gbps=400))     # Grace: ARM, no correction
    lat, bw = grace.rows()["NVLSTree"]["Simple"]
    assert grace.cpu == "arm" and algo_time_us(grace, "NVLSTree", "Simple", [1 << 26])[0] == pytest.approx(
        lat + (1 << 26) / (1e3 * bw))
    v29, v30 = (cluster_table(replace(four, nccl=v)).bw[("NVLSTree", "Simple")] for v in ("2.29", "2.30"))
    assert v30 > v29
    assert cluster_table(h100(2, nccl="2.30")).rows() == cluster_table(h100(2, nccl="2.28")).rows()
