"""collsim.nccl.search against NCCL's own topology search (the CPU harness outputs in fixtures/nccl_harness)
and against the set-up rules of connect.cc/nvls.cc."""
import re
from dataclasses import replace
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.machine import load_cluster
from collsim.machine.cluster import Cluster
from collsim.nccl.constants import VERSIONS
from collsim.nccl.search import search

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_harness"
TAGS = {"2.18": "v2.18.6-1", "2.19": "v2.19.4-1", "2.21": "v2.21.5-1", "2.23": "v2.23.4-1", "2.26": "v2.26.6-1",
        "2.27": "v2.27.7-1", "2.28": "v2.28.9"}
PATTERN = {1: "BALANCED_TREE", 3: "TREE", 4: "RING", 5: "NVLS"}


def path_names(version: str) -> dict:
    """Path type numbers of that tag's topo.h (C2C from 2.26, P2C from 2.27)."""
    minor = int(version.split(".")[1])
    names = ["LOC", "NVL", "NVB"] + (["C2C"] if minor >= 26 else []) + ["PIX", "PXB"] + \
        (["P2C"] if minor >= 27 else []) + ["PXN", "PHB", "SYS"]
    return dict(enumerate(names))


def harness_blocks(tag: str) -> list[dict]:
    """Each "System ..." block of search_<tag>.txt: {"variant", "inter", "RING"/"TREE"/"NVLS": graph}."""
    blocks, variant = [], "default"
    graph = None
    for line in (HARNESS / f"search_{tag}.txt").read_text().splitlines():
        if line.startswith("### "):
            variant = line[4:]
        elif line.startswith("System"):
            blocks.append({"variant": variant, "inter": int(line.split()[-1])})
        elif m := re.match(r"(RING|TREE|NVLS): pattern (\d+) crossNic (\d+) nChannels (\d+) bwIntra ([\d.]+) "
                           r"bwInter ([\d.]+) typeIntra (\d+) typeInter (\d+)", line):
            graph = {"pattern": PATTERN[int(m[2])], "cross_nic": int(m[3]), "channels": int(m[4]),
                     "bw_intra": float(m[5]), "bw_inter": float(m[6]), "type_inter": int(m[8]), "list": []}
            blocks[-1][m[1]] = graph
        elif m := re.match(r"\s+\d+ :(.*)", line):
            items = [tuple(x.split("/")) for x in m[1].split()]
            graph["list"].append(([int(i) for t, i in items if t == "GPU"], [int(i) for t, i in items if t == "NET"]))
    return blocks


def h100(nodes=1, nics=8, gbit=400, version="2.28", **kw):
    return Cluster("H100", 8, nodes, nics_per_node=nics, nic_Gbps=gbit, nccl=version, **kw)


def same_graph(ours, theirs, version):
    assert (ours.pattern, ours.channels, ours.bw_intra, ours.bw_inter) == \
        (theirs["pattern"], theirs["channels"], theirs["bw_intra"], theirs["bw_inter"])
    if ours.pattern == "RING":
        assert ours.cross_nic == theirs["cross_nic"]
        assert ours.type_inter == path_names(version)[theirs["type_inter"]]


@pytest.mark.parametrize("version", TAGS)
def test_one_node_graphs_per_version(version):
    block = next(b for b in harness_blocks(TAGS[version]) if b["inter"] == 0)
    s = search(h100(version=version))
    same_graph(s.ring, block["RING"], version)
    same_graph(s.tree, block["TREE"], version)
    assert (s.nvls.channels, s.nvls.bw_intra, s.nvls.bw_inter) == \
        (block["NVLS"]["channels"], block["NVLS"]["bw_intra"], block["NVLS"]["bw_inter"])
    assert [r.gpus for r in s.rings] == [tuple(g) for g, _ in block["RING"]["list"]]
    assert (s.coll_channels, s.nvls_channels) == (24, 16)
    assert s.nvls_heads == tuple((g, None) for g in range(8))


@pytest.mark.parametrize("version", TAGS)
def test_multi_node_graphs_and_rings_per_version(version):
    block = next(b for b in harness_blocks(TAGS[version]) if b["inter"] == 1 and b["variant"] == "default")
    s = search(h100(nodes=2, version=version))
    same_graph(s.ring, block["RING"], version)
    same_graph(s.tree, block["TREE"], version)
    assert (s.nvls.channels, s.nvls.bw_intra, s.nvls.bw_inter) == \
        (block["NVLS"]["channels"], block["NVLS"]["bw_intra"], block["NVLS"]["bw_inter"])
    ours = [(list(r.gpus), [r.nic_in, r.nic_out]) for r in s.rings]
    if version == "2.18":  # 2.18 orders the GPUs inside the node differently; NICs and entry GPUs agree
        ours = [(g[:1], n) for g, n in ours]
        block["RING"]["list"] = [(g[:1], n) for g, n in block["RING"]["list"]]
    assert ours == block["RING"]["list"]
    assert [s.tree_channel(c)[:2] for c in range(8)] == [(g[0], n[0]) for g, n in block["TREE"]["list"]]
    assert s.nvls_heads == tuple((g[0], n[0]) for g, n in block["NVLS"]["list"])
    assert s.coll_channels == 16   # 8 doubled; Hopper's extra x2 needs bwIntra > 45 and < 16 channels


@pytest.mark.parametrize("variant, nics, gbit, env", [
    ("8x200G", 8, 200, None), ("NCCL_CROSS_NIC=0", 8, 400, {"NCCL_CROSS_NIC": "0"}),
    ("NCCL_CROSS_NIC=1", 8, 400, {"NCCL_CROSS_NIC": "1"})])
def test_2_28_variants(variant, nics, gbit, env):
    block = next(b for b in harness_blocks("v2.28.9") if b["variant"] == variant)
    s = search(h100(nodes=2, nics=nics, gbit=gbit), env)
    same_graph(s.ring, block["RING"], "2.28")
    same_graph(s.tree, block["TREE"], "2.28")
    nvls = block["NVLS"]
    assert (s.nvls.channels, s.nvls.bw_intra, s.nvls.bw_inter) == (8, nvls["bw_intra"], nvls["bw_inter"])
    assert [(list(r.gpus), [r.nic_in, r.nic_out]) for r in s.rings] == block["RING"]["list"]


def test_four_nics_ring_and_nvls():
    # The harness put NICs on GPUs 0-3; collsim puts NIC k beside GPUs 2k, 2k+1 (Cluster.nic_of_local), which
    # gives the same ring and NVLS numbers (its tree is BALANCED 8 x 48/24 instead of TREE 8 x 45/24).
    block = next(b for b in harness_blocks("v2.28.9") if b["variant"] == "4x400G")
    s = search(h100(nodes=2, nics=4))
    assert (s.ring.channels, s.ring.bw_intra) == (block["RING"]["channels"], block["RING"]["bw_intra"])
    assert (s.nvls.channels, s.nvls.bw_intra, s.nvls.bw_inter) == (4, 48.0, 48.0)
    assert (s.tree.pattern, s.tree.bw_intra, s.tree.bw_inter) == ("BALANCED_TREE", 48.0, 24.0)
    assert s.nvls_heads == ((0, 0), (2, 1), (4, 2), (6, 3))
    assert [r.nic_in for r in s.rings] == [0, 1, 2, 3, 0, 1, 2, 3]   # 4 x 48 doubled to 8 x 24: each NIC twice
    assert [s.tree_channel(c)[:2] for c in range(8)] == [(0, 0), (2, 1), (4, 2), (6, 3), (1, 0), (3, 1), (5, 2), (7, 3)]
    pairs = search(Cluster("A100", 8, 2, nics_per_node=8, nic_Gbps=200))     # DGX A100: two GPUs, two NICs a switch
    assert [(r.gpus[0], r.gpus[-1], r.nic_in, r.nic_out) for r in pairs.rings[:2]] == [(0, 1, 0, 0), (1, 0, 1, 1)]
    assert [pairs.tree_channel(c)[0] for c in range(8)] == list(range(8))


def test_ring_falls_back_to_simple_order_when_no_speed_fits():
    # NVLink far below NCCL's slowest search speed: NCCL keeps one SYS channel at 0.1 GB/s
    # (search.cc:1189-1196@v2.28.9) instead of no ring at all.
    slow = search(Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400, nvlink_GBps=1))
    assert (slow.ring.channels, slow.ring.bw_intra, slow.ring.bw_inter) == (1, 0.1, 0.1)
    assert (slow.ring.type_intra, slow.ring.type_inter) == ("SYS", "SYS") and len(slow.rings) >= 1


@pytest.mark.parametrize("version, ring", [  # NCCL's own search of the tags without a fixture, same topology
    ("2.20", (8, 48.0, 1, "PIX")), ("2.22", (8, 48.0, 1, "PIX")), ("2.24", (8, 48.0, 2, "PIX")),
    ("2.25", (8, 48.0, 2, "PIX"))])
def test_multi_node_ring_other_versions(version, ring):
    s = search(h100(nodes=2, version=version))
    assert (s.ring.channels, s.ring.bw_intra, s.ring.cross_nic, s.ring.type_inter) == ring
    assert [(r.nic_in, r.nic_out) for r in s.rings[:2]] == [(0, 1), (1, 0)]   # paired whichever value is stored
    assert (s.nvls is None) == (version == "2.20")                          # no NVLS across nodes in 2.20


def test_odd_nodes_swap_paired_rings():
    s = search(h100(nodes=3))
    assert s.ring_channel(0, 0) == s.rings[0] and s.ring_channel(1, 0) == s.rings[1]
    assert s.ring_channel(1, 9) == s.rings[0] and s.ring_channel(2, 9) == s.rings[1]  # coll 9 copies search 1
    # node 0 leaves channel 0 through NIC 1, and node 1 enters its channel 0 through NIC 1: same rail
    assert s.ring_channel(0, 0).nic_out == s.ring_channel(1, 0).nic_in == 1
    assert s.tree_channel(3) == (3, 3, 0) and s.tree_channel(11) == (3, 3, 1)
    rail = search(h100(nodes=3, version="2.19"))
    assert rail.ring_channel(1, 0) == rail.rings[0]     # 2.19: rail-pure rings, no swap


@pytest.mark.parametrize("cluster, ring, tree, nvls", [  # NCCL's own search (harness method) on these layouts
    (Cluster("A100", 8), (12, 20.0, 20.0), ("BALANCED_TREE", 12, 20.0, 20.0), None),
    (Cluster("A100", 2), (12, 20.0, 20.0), ("BALANCED_TREE", 12, 40.0, 40.0), None),
    (Cluster("A100", 4, intra="nvlink"), (12, 20.0, 20.0), ("BALANCED_TREE", 12, 20.0, 20.0), None),
    (Cluster("H100", 2), (12, 30.0, 30.0), ("BALANCED_TREE", 12, 60.0, 60.0), (2, 60.0, 60.0)),
    (Cluster("H100", 4), (12, 30.0, 30.0), ("BALANCED_TREE", 12, 30.0, 30.0), (4, 60.0, 60.0)),
    (Cluster("B200", 8), (16, 45.0, 45.0), ("BALANCED_TREE", 16, 40.0, 40.0), (8, 80.0, 90.0)),
    (Cluster("B200", 8, nccl="2.24"), (12, 30.0, 30.0), ("BALANCED_TREE", 12, 30.0, 30.0), (8, 40.0, 60.0)),
    (Cluster("B200", 8, 2, nics_per_node=8, nic_Gbps=400), (8, 48.0, 48.0), ("TREE", 8, 96.0, 48.0), (8, 48.0, 48.0)),
    (Cluster("A100", 8, 2, nics_per_node=8, nic_Gbps=200), (8, 24.0, 24.0), ("BALANCED_TREE", 8, 30.0, 24.0), None),
    (Cluster("A100", 8, 2, nics_per_node=8, nic_Gbps=100), (8, 12.0, 12.0), ("BALANCED_TREE", 8, 24.0, 12.0), None),
    (h100(nodes=2, nics=1), (2, 24.0, 24.0), ("BALANCED_TREE", 2, 48.0, 24.0), (1, 48.0, 48.0)),
    (h100(nodes=2, nics=2, gbit=100), (2, 12.0, 12.0), ("BALANCED_TREE", 2, 24.0, 12.0), (2, 12.0, 12.0)),
    (h100(nodes=2, net="tcp"), (8, 20.0, 20.0), ("TREE", 8, 40.0, 20.0), (8, 20.0, 20.0)),
    (Cluster("A100", 8, intra="pcie"), (1, 20.0, 20.0), ("BALANCED_TREE", 1, 20.0, 20.0), None),
    (Cluster("A100", 2, intra="pcie"), (2, 12.0, 12.0), ("BALANCED_TREE", 2, 20.0, 20.0), None),
])
def test_other_layouts(cluster, ring, tree, nvls):
    s = search(cluster)
    assert (s.ring.channels, s.ring.bw_intra, s.ring.bw_inter) == ring
    assert (s.tree.pattern, s.tree.channels, s.tree.bw_intra, s.tree.bw_inter) == tree
    assert (None if s.nvls is None else (s.nvls.channels, s.nvls.bw_intra, s.nvls.bw_inter)) == nvls


def test_path_types():
    assert search(h100(nodes=2, gbit=200)).ring.type_inter == "PXN"       # rail-pure through another GPU
    assert search(h100(nodes=2, net="tcp")).ring.type_inter == "PHB"      # sockets: no GPUDirect, via the CPU
    assert search(h100(nodes=2), {"NCCL_IB_DISABLE": "1"}).ring.type_inter == "PHB"
    assert search(Cluster("A100", 8, intra="pcie")).ring.type_intra == "PHB"
    assert search(Cluster("H100", 1, 2, nics_per_node=1, nic_Gbps=400)).ring.type_intra == "LOC"


def test_coll_and_nvls_channels_follow_the_version():
    # Hopper doubling across nodes needs ring bwIntra > 45: 8 x 24 (4 NICs) stays at 16, as do 2.18/2.19's 8 x 45.
    assert search(h100(nodes=2, nics=4)).coll_channels == 16
    # NCCL_MAX_NCHANNELS cuts the coll channels; 2.20-2.27 raise comm->nChannels back to the 16 NVLS channels,
    # and 2.20-2.21 run Ring/Tree on the cut count while 2.22-2.27 run on the raised one.
    env = {"NCCL_MAX_NCHANNELS": "8"}
    got = {v: (search(h100(version=v), env).coll_channels, search(h100(version=v), env).comm_channels)
           for v in ("2.19", "2.21", "2.22", "2.27", "2.28")}
    assert got == {"2.19": (8, 8), "2.21": (8, 16), "2.22": (16, 16), "2.27": (16, 16), "2.28": (8, 8)}
    # NCCL_MIN_NCHANNELS copies channels cyclically, bounded by MAXCHANNELS (32 before 2.25, 64 after).
    s = search(h100(), {"NCCL_MIN_NCHANNELS": "40"})
    assert s.coll_channels == 40 and s.coll_map[24] == s.coll_map[0] == (0, 0) and s.coll_map[36] == (0, 1)
    assert search(h100(version="2.24"), {"NCCL_MIN_NCHANNELS": "64"}).coll_channels == 32
    assert search(h100(), {"NCCL_NVLS_NCHANNELS": "8"}).nvls_channels == 8
    capped = search(h100(), {"NCCL_MAX_CTAS": "4"})
    assert (capped.coll_channels, capped.nvls_channels) == (4, 4)
    assert search(Cluster("B200", 8)).nvls_channels == 24                    # one NVL domain, 2.27+
    assert search(Cluster("B200", 8, nccl="2.26")).nvls_channels == 32
    assert search(Cluster("B200", 8, 2, nics_per_node=8, nic_Gbps=400)).nvls_channels == 32
    assert search(Cluster("B200", 8, 2, nics_per_node=8, nic_Gbps=400)).coll_channels == 16  # 8 doubled; not < 16


def test_nvls_support_rules():
    assert search(h100(), {"NCCL_NVLS_ENABLE": "0"}).nvls is None
    assert search(Cluster("H100", 2, nccl="2.27")).nvls is None        # more than 2 GPUs up to 2.27
    assert search(Cluster("H100", 2)).nvls.channels == 2                 # 2 or more from 2.28
    assert search(Cluster("A100", 8)).nvls is None                       # SM90+ with an NVSwitch only
    assert search(Cluster("H100", 4, intra="nvlink")).nvls is None


def test_collnet_needs_sharp_and_the_variable():
    sharp = Cluster("H100", 8, 2, nics_per_node=8, nic_Gbps=400, sharp=True)
    # sharp: true describes SHARP set up for NCCL (NCCL_COLLNET_ENABLE=1); the variable at 0 turns it off
    assert search(sharp, {"NCCL_COLLNET_ENABLE": "0"}).collnet_chain is None
    assert search(sharp) == search(sharp, {"NCCL_COLLNET_ENABLE": "1"})
    s = search(sharp, {"NCCL_COLLNET_ENABLE": "1"})
    assert (s.collnet_chain.pattern, s.collnet_chain.channels, s.collnet_chain.bw_intra) == ("TREE", 8, 48.0)
    assert (s.collnet_direct.channels, s.collnet_direct.bw_intra) == (8, 48.0)
    assert search(h100(nodes=2), {"NCCL_COLLNET_ENABLE": "1"}).collnet_direct is None


@pytest.mark.parametrize("env, fragment", [
    ({"NCCL_MAX_NCHANNELS": "0"}, "NCCL_MAX_NCHANNELS=0: out of range 1..64"),
    ({"NCCL_MAX_NCHANNELS": "1e9"}, "NCCL_MAX_NCHANNELS='1e9': NCCL reads it as 1 (its strtoll stops at 'e')"),
    ({"NCCL_MIN_NCHANNELS": "1000000000"}, "out of range 1..64"),
    ({"NCCL_MIN_NCHANNELS": "0"}, "NCCL_MIN_NCHANNELS=0: out of range 1..64"),
    ({"NCCL_MIN_NCHANNELS": "1_6"}, "NCCL_MIN_NCHANNELS='1_6': NCCL reads it as 1 (its strtoll stops at '_')"),
    ({"NCCL_MIN_NCHANNELS": "\u0661\u0666"}, "not an integer (NCCL's strtoll reads no digits: 0)"),
    ({"NCCL_MIN_NCHANNELS": "010"}, "NCCL reads a leading 0 as octal, 8"),
    ({"NCCL_MIN_NCHANNELS": "9" * 30}, "out of int64 (NCCL ignores it"),
    ({"NCCL_BUFFSIZE": "1099511627776"}, "NCCL_BUFFSIZE=1099511627776: out of range 32768..4294967296 bytes"),
    ({"NCCL_CROSS_NIC": "3"}, "NCCL_CROSS_NIC=3"),
    ({"NCCL_NVLS_NCHANNELS": "-1"}, "NCCL_NVLS_NCHANNELS=-1"),
])
def test_bad_channel_settings_are_one_line_errors(env, fragment):
    with pytest.raises(CollsimError, match=re.escape(fragment)) as err:
        search(h100(), env)
    assert "\n" not in str(err.value)


def test_every_version_searches_every_preset_shape():
    shapes = [Cluster("H100", 8), h100(nodes=4), Cluster("A100", 8),
              Cluster("B200", 8, 2, nics_per_node=8, nic_Gbps=400),
              Cluster("A100", 8, intra="pcie"), h100(nodes=2, nics=1, gbit=100, net="tcp")]
    for v in VERSIONS:
        for c in shapes:
            s = search(replace(c, nccl=v))
            assert 1 <= s.coll_channels <= (32 if v < "2.25" else 64)
            assert s.ring.channels >= 1 and len(s.rings) == s.ring.channels and len(s.coll_map) == s.comm_channels


# The layouts below have no output of NCCL's own search in fixtures/nccl_harness: the expected graphs are the
# search rules of collsim.nccl.graphs worked by hand (module docstring), with the lines of NCCL they follow.
def test_pcie_nodes_with_and_without_peer_to_peer():
    pair, shm = search(Cluster("L40S", 2)), search(Cluster("RTX4090", 2))
    # P2P inside one PCIe switch: PIX, NCCL's Gen4 x16 24 GB/s (topo.cc:489-491); 2 x 12 fills it, as the
    # harness found for 2 x A100 on PCIe (test_other_layouts)
    assert (pair.ring.type_intra, pair.ring.channels, pair.ring.bw_intra) == ("PIX", 2, 12.0)
    # no P2P: the path is diverted through the CPU (paths.cc:667-678), PHB at 24 x 5/6 = 20 on Intel (search.cc:85-88)
    assert (shm.ring.type_intra, shm.ring.channels, shm.ring.bw_intra) == ("PHB", 1, 20.0)
    amd = search(Cluster("RTX4090", 2, cpu="amd")).ring                    # no Intel P2P overhead: the full 24
    assert (amd.type_intra, amd.channels, amd.bw_intra) == ("PHB", 2, 12.0)
    eight = search(Cluster("RTX4090", 8))
    assert (eight.ring.type_intra, eight.ring.channels, eight.coll_channels, eight.nvls) == ("PHB", 1, 2, None)


def test_p2p_disable_sends_an_nvlink_node_through_the_cpu_but_not_nvls():
    s = search(h100(), {"NCCL_P2P_DISABLE": "1"})
    assert (s.ring.type_intra, s.ring.bw_intra) == ("PHB", 20.0)              # Gen5 48 x 5/6 = 40: 2 x 20
    assert s.nvls == search(h100()).nvls                                      # GPU -> NVSwitch paths stay NVLink


def test_nvlink_bridges_and_sm86_links():
    # SM86 counts 12 GB/s per NVLink (topo.h:20@v2.28.9): 4 links = 48 GB/s for an RTX 3090 pair
    s = search(Cluster("RTX3090", 2, intra="nvlink"))
    assert (s.ring.type_intra, s.ring.channels, s.ring.bw_intra, s.tree.bw_intra) == ("NVL", 2, 20.0, 40.0)
    a = search(Cluster("A100-PCIE", 2, intra="nvlink"))                       # a 600 GB/s bridge: 12 x 20 = 240
    assert (a.ring.channels, a.ring.bw_intra) == (12, 20.0)


def test_efa_groups_nics_and_reports_its_latency():
    p5 = search(load_cluster("p5"))
    assert (p5.nics_per_node, p5.ring.channels, p5.ring.bw_inter) == (8, 8, 48.0)   # 8 devices of 4 x 100 Gb/s
    assert p5.ring.latency_inter == p5.tree.latency_inter == p5.nvls.latency_inter == 75.0   # search.cc:685
    assert search(load_cluster("p5"), {"OFI_NCCL_NET_LATENCY": "35"}).ring.latency_inter == 35.0   # p5en's figure
    p4d = search(load_cluster("p4d"))
    assert (p4d.nics_per_node, p4d.ring.channels, p4d.ring.bw_inter, p4d.tree.pattern) == (4, 4, 12.0, "BALANCED_TREE")
    assert search(load_cluster("dgx-h100")).ring.latency_inter == 0.0          # NCCL's IB transport reports 0
    assert search(load_cluster("h100-nvlink")).ring.latency_inter == 0.0       # one node: no network in the graph
    with pytest.raises(CollsimError, match="OFI_NCCL_NET_LATENCY='fast'"):
        search(load_cluster("p5"), {"OFI_NCCL_NET_LATENCY": "fast"})


def test_an_nvlink_domain_is_searched_as_one_node():
    rack = search(load_cluster("gb200-nvl72"))
    assert (rack.n_nodes, rack.gpus_per_node, rack.ring.type_intra) == (1, 72, "NVL")
    assert rack.nvls.channels == 32 and len(rack.nvls_heads) == 32          # NCCL_MAX_NVLS_ARITY (device.h:207)
    old = search(Cluster("H100", 8, nccl="2.20"))
    assert old.nvls.channels == 8                                           # arity 8 up to 2.20


@pytest.mark.parametrize("env, nodes, gpus, on", [
    (None, 2, 8, True), ({"NCCL_COLLNET_ENABLE": "0"}, 2, 8, False), (None, 1, 8, False),
    ({"NCCL_COLLNET_ENABLE": "1"}, 2, 16, False),                   # more than NCCL_MAX_DIRECT_ARITY+1 = 8 a node
])
def test_collnet_is_set_up_where_ncclinit_would(env, nodes, gpus, on):
    c = Cluster("H100", gpus, nodes, nics_per_node=8, nic_Gbps=400, sharp=True)
    s = search(c, env)
    assert (s.collnet_chain is not None, s.collnet_direct is not None) == (on, on)
    if on:   # connect.cc:455-461: +50% channels with CollNet when the chain's bwIntra exceeds its bwInter: not here
        assert s.coll_channels == search(replace(c, sharp=False)).coll_channels
