"""One public paste per input kind (tests/data/diagnose/pastes/, cited in data/public/README.md), damaged ones
included, read by collsim.diagnose's parsers and sources as its thread shows them."""
from collsim.diagnose import diagnose, parsers, topo_xml
from collsim.diagnose.sources import read_source
from tests.diagnose.cases import PASTES


def lines(name):
    return (PASTES / name).read_text().split("\n")


def test_nccl_topology_dump_fragment_and_whole():
    """NVIDIA/nccl-tests#213 (a fragment cut mid-tag, H800) and NVIDIA/nccl#762 (A100 pairs over NVLink)."""
    t = topo_xml.topo_xml(lines("nccl-tests-213_topo.xml"))
    assert t["names"] == {"NIC0": "mlx5_5", "NIC1": "mlx5_6"} and t["gpus"] == ["GPU2"]
    assert t["cells"][("GPU2", "NIC1")] == "PIX" and t["cells"][("GPU2", "NIC0")] != "PIX"   # mlx5_6 on its switch
    assert [n["speed_Gbps"] for n in t["xml"]["nics"]] == [400.0, 400.0] and t["xml"]["gpus"][0]["nvlinks"] == 6
    w = topo_xml.topo_xml(lines("nccl-762_topo.xml"))
    assert w["gpus"] == ["GPU0", "GPU1", "GPU2"] and w["cells"][("GPU0", "GPU1")] == "NV12" and not w["nics"]
    assert read_source(PASTES / "nccl-762_topo.xml").kinds == ["topology"]
    assert topo_xml.topo_xml(["<system>", "nothing"]) is None


def test_connection_lines_name_transport_and_nic():
    """NVIDIA/nccl#707 (NET/IB/n/GDRDMA), #952 (P2P/IPC/read and NET/Socket), #1609 (SHM/direct/direct)."""
    net = parsers.channels(lines("nccl-707_net_channels.txt"))
    assert [(c["dev"], c["dir"], c["nic"]) for c in net[:3]] == [(0, "receive", 5), (1, "receive", 5), (3, "send", 2)]
    assert {c["via"] for c in parsers.channels(lines("nccl-952_p2p_socket.txt"))} == {"P2P/IPC/read", "NET/Socket/3"}
    report = diagnose([PASTES / "nccl-1609_shm.txt"])
    assert report["files"][0]["kinds"] == ["nccl-log"]
    shm = [c for c in parsers.channels(lines("nccl-1609_shm.txt"))]
    assert len(shm) == 3 and all(c["via"] == "SHM/direct/direct" and c["nic"] is None for c in shm)


def test_rings_trees_and_communicator_lines():
    """NVIDIA/nccl#1189 (H20, GRAPH: Ring/Tree lines and Trees, comm line with nNodes 2)."""
    log = read_source(PASTES / "nccl-1189_rings_trees.txt").log
    assert [r["next"] for r in log.ring_links] == [1, 2] and len(log.trees) == 4 and len(log.tree_links) == 2
    assert log.comms[0]["nnodes"] == 2 and log.comms[0]["nranks"] == 4


def test_headers_once_per_process_are_separate_runs_not_an_interface():
    """NVIDIA/nccl-tests#213 (H800: two headers, then one node's ranks) and #107 (two 'Rank 0' lines)."""
    for name in ("nccl-tests-213_separate_runs.txt", "nccl-tests-107_two_rank0.txt"):
        top = diagnose([PASTES / name])["causes"][0]
        assert top["label"] == "measurement_error", name
        assert "2 nccl-tests headers one after the other" in top["evidence"][0]["why"]


def test_several_runs_in_one_paste_take_their_versions(tmp_path):
    """NVIDIA/nccl#1222: '2.19.3:' then a table, ' 2.20.3' then the next table's header."""
    (run,) = read_source(PASTES / "nccl-1222_two_versions.txt").runs
    assert run.version == ("2.19.3", 2) and len(run.rows) == 5
    src = read_source(PASTES / "nccl-1222_two_versions.txt")
    doubled = "\n".join(src.lines[:10] + ["2.20.3"] + src.lines[12:15] + [x.replace("385.41", "200.00")
                                                                          for x in src.lines[5:10]])
    path = tmp_path / "_two.txt"
    path.write_text(doubled)
    runs = read_source(path).runs
    assert [(r.label, r.version[0], len(r.rows)) for r in runs] == [("_two.txt#1", "2.19.3", 5),
                                                                    ("_two.txt#2", "2.20.3", 5)]


def test_version_from_nccl_tests_header_and_rank_list():
    """NVIDIA/nccl#1876: nccl-tests 2.17.6 names nccl-library=22703; 2 hosts x 4 A100 in the rank list."""
    (run,) = read_source(PASTES / "nccl-1876_header.txt").runs
    assert run.version[0] == "2.27.3" and sorted(set(run.groups[0])) == ["lrdn1842", "lrdn1848"]
    assert [r for r, _ in run.ranks] == list(range(8))


def test_topo_matrix_with_nic_columns_cut_short():
    """NVIDIA/nccl#770 (8 x A40 with NV4 bridges and mlx5 columns; the paste ends at GPU6's row)."""
    t = parsers.topo_matrix(lines("nccl-770_topo_m.txt"))
    assert t["nics"] == ["mlx5_0", "mlx5_1"] and len(t["rows"]) == 7 and t["cells"][("GPU6", "mlx5_0")] == "PHB"


def test_env_dump_of_nccl_conf():
    """NVIDIA/nccl-tests#294: the user's /etc/nccl.conf."""
    env = parsers.nccl_env(lines("nccl-tests-294_nccl_conf.txt"))
    assert env["NCCL_ALGO"] == ("NVLSTree", 6) and env["NCCL_IB_HCA"] == ("^mlx5_0:1", 7) and len(env) == 7


def test_stated_rates_are_prose_not_tool_fields():
    """NVIDIA/nccl#307: '400 Gb/sec ... available' in the post; ibstatus's 'rate: 100 Gb/sec' is not a statement."""
    from tests.diagnose.cases import DATA
    post = (DATA / "nccl-307" / "post.txt").read_text().split("\n")
    assert [g for g, _ in parsers.stated_rates(post)] == [400.0]


def test_a_cut_rank_list_keeps_the_stated_machine_and_says_so(tmp_path):
    """NVIDIA/nccl#1876's rank list cut after rank 5 (as a paste cut short), read over a stated 3 x 4 machine:
    the stated 3 nodes are kept and the conflict shown; the whole list (its '#' line after rank 7) resizes."""
    import yaml
    spec = tmp_path / "stated.yaml"
    spec.write_text(yaml.safe_dump({"gpu": "A100", "gpus_per_node": 4, "nodes": 3, "intra": "nvswitch",
                                    "nics_per_node": 4, "nic_Gbps": 200, "net": "ib"}))
    cut = tmp_path / "cut.txt"
    cut.write_text("\n".join(lines("nccl-1876_header.txt")[:11]) + "\n   1073741824   268435456  float  sum  -1  "
                   "10000.0  107.37  178.96  0  10000.0  107.37  178.96  0\n")
    report = diagnose([cut], str(spec))
    assert report["machine"]["cluster"].startswith("stated: 3 node(s) x 4 A100")
    assert "the rank list is not whole" in report["machine"]["conflicts"][0]
    whole = tmp_path / "whole.txt"
    whole.write_text((PASTES / "nccl-1876_header.txt").read_text() + cut.read_text().split("\n")[-2] + "\n")
    report = diagnose([whole], str(spec))
    assert report["machine"]["cluster"].startswith("stated: 2 node(s) x 4 A100")
    assert "compared with what ran" in report["machine"]["conflicts"][0]


def test_a_nic_shared_by_two_gpus_in_topology_and_connection_lines(tmp_path):
    """NVIDIA/nccl-tests#251's topo -m (NIC0 on GPU0's and GPU1's switch, 2 NICs for 4 GPUs) and
    NVIDIA/nccl#707's connection lines (GPUs 2 and 3 both through NET/IB/2, 0 and 1 through NET/IB/5) beside
    a six-NIC list."""
    from tests.diagnose.cases import DATA
    report = diagnose([DATA / "nccl-tests-251" / "topo.txt"])
    (cause,) = [c for c in report["causes"] if c["label"] == "nic_on_cpu_or_wrong_numa"]
    assert "NIC0 is the nearest NIC of GPU0 and GPU1" in cause["evidence"][0]["why"]
    listed = "10-90-43-152:120890:120890 [0] NCCL INFO NET/IB : Using " + " ".join(
        f"[{i}]mlx5_{i}:1/IB" for i in range(6)) + " ; OOB eth0:10.90.43.152<0>\n"
    log = tmp_path / "nccl.log"
    log.write_text(listed + (PASTES / "nccl-707_net_channels.txt").read_text())
    (cause,) = [c for c in diagnose([log])["causes"] if c["label"] == "nic_on_cpu_or_wrong_numa"]
    assert cause["evidence"][0]["why"].startswith("GPUs 2, 3 of 10-90-43-152 go through NET/IB/2 while 3 of the 6")


def test_two_nodes_above_line_rate_without_a_description(tmp_path):
    """NVIDIA/nccl#837's numbers with what files show: NCCL's comm line (2 nodes), two 200 Gb/s ports, and a
    GPU collsim does not describe: busbw above 2 x 200 Gb/s on 2 nodes is Tree's, not an error."""
    from tests.diagnose.cases import DATA
    comm = tmp_path / "nccl.log"
    comm.write_text("h1:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n")
    ib = (DATA / "nccl-489" / "ibstatus.txt").read_text().replace("1: DOWN", "4: ACTIVE").replace(
        "10 Gb/sec (4X)", "200 Gb/sec (4X HDR)")
    (tmp_path / "ibstatus.txt").write_text(ib)
    report = diagnose([comm, tmp_path / "ibstatus.txt"], None, [(1 << 30, 53.95)])
    assert report["machine"]["cluster"] is None or "2 node" in report["machine"]["cluster"]
    assert report["causes"][0]["label"] == "two_node_tree_anomaly"
    assert "2 x 200 Gb/s = 50.0 GB/s, on 2 nodes" in report["causes"][0]["evidence"][0]["why"]


def test_nccl_inspector_output_is_a_run_per_communicator_judged_as_kernel_time():
    """NVIDIA/nccl plugins/profiler/inspector/README.md's two examples (an AllReduce and a ReduceScatter of 8 ranks
    on one node): two runs, each at the plugin's own busbw; on 8 H100 NVSwitch both land in the expected range."""
    src = read_source(PASTES / "nccl-inspector_readme.json")
    assert src.kinds == ["nccl-inspector"] and [r.meta["collective"] for r in src.runs] == ["all_reduce",
                                                                                           "reduce_scatter"]
    assert [round(r.rows[0]["busbw_GBps"], 1) for r in src.runs] == [485.1, 366.1]
    report = diagnose([PASTES / "nccl-inspector_readme.json"], cluster="h100-nvlink")
    assert report["verdict"] == "as_expected" and [b["verdict"] for b in report["bands"]] == ["as expected"] * 2
