"""collsim.nccl.log on logs built from NCCL 2.28.9's printf formats (see the fixture header)."""
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.nccl.log import canonical_algo, canonical_proto, parse_file, parse_text

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_2.28_rank0.log"
PRE = "node1:77:78 [1] NCCL INFO "


def test_fixture_version_comm_channels_rings():
    log = parse_file(FIXTURE)
    assert log.version == "2.28.9" and log.version_suffix == "+cuda12.9"
    assert log.n_nodes == 1 and log.comms[0]["nranks"] == 2 and log.comms[0]["local_ranks"] == 2
    assert log.coll_channels == 24 and log.p2p_channels == 32 and log.nvls_channels == 0
    assert sorted(log.rings) == list(range(24)) and log.rings[5] == [0, 1]
    assert len(log.trees) == 24 and log.trees[3] == {"channel": 3, "down": [1, -1, -1], "rank": 0, "up": -1}
    assert log.ring_links[0] == {"channel": 0, "prev": 1, "rank": 0, "next": 1}
    assert log.graphs[0]["pattern"] == 4 and log.graphs[0]["n_channels"] == 12
    assert log.graphs[0]["type_intra"] == "NVL"


def test_fixture_tuning_table_spans_three_column_groups():
    log = parse_file(FIXTURE)
    assert len(log.tuning_tables) == 1
    ar = log.tuning["AllReduce"]
    assert set(ar) == {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"}
    assert ar["Ring"]["LL"] == [8.4, 70.5]
    assert ar["Ring"]["Simple"] == [15.6, 360.0]
    assert ar["Tree"]["LL128"] == [16.3, 165.6]
    assert ar["PAT"]["Simple"] == [0.0, 0.0]
    assert set(log.tuning) == {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"}
    assert log.max_threads["Ring"]["LL128"] == 640


def test_fixture_per_call_choices_and_dict():
    log = parse_file(FIXTURE)
    by = log.choices_by_size()
    assert by[8] == ("Ring", "LL") and by[1048576] == ("Ring", "LL128")
    assert by[268435456] == ("Ring", "Simple") and by[4] == ("Tree", "LL")
    assert log.choices[2]["channel_hi"] == 23
    d = log.to_dict()
    assert d["n_nodes"] == 1 and d["rings"]["0"] == [0, 1] and d["choices"][0]["bytes"] == 8


def test_nccl_2_23_integer_codes_and_two_nodes():
    text = "\n".join([
        PRE + "comm 0xabc rank 1 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0",
        PRE + "Tree 0 : 0 -> 1 -> -1/-1/-1",
        PRE + "Trees [0] -1/-1/-1->1->0 [1] 3/-1/-1->1->0",
        PRE + "AllReduce: 4096 Bytes -> Algo 0 proto 2 time 21.500000",
        PRE + "AllReduce: 8 Bytes -> Algo 1 proto 0 time 9.100000",
    ])
    log = parse_text(text)
    assert log.n_nodes == 2 and log.version is None
    assert log.choices[0] == {"func": "AllReduce", "bytes": 4096, "algo": "Tree", "proto": "Simple",
                              "time_us": 21.5}
    assert log.choices_by_size()[8] == ("Ring", "LL")
    assert log.tree_links == [{"channel": 0, "up": 0, "rank": 1, "down": [-1, -1, -1]}]
    assert log.trees[1]["down"] == [3, -1, -1]


def test_truncated_ring_line_drops_partial_number():
    log = parse_text(PRE + "Channel 00/02 :  0  1  2  3 1...")
    assert log.rings[0] == [0, 1, 2, 3] and log.ring_truncated


@pytest.mark.parametrize("bad, match", [
    ("AllReduce: 64 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..", "malformed NCCL per-call"),
    ("AllReduce: 64 Bytes -> Algo SPIRAL proto LL channel{Lo..Hi}={0..1}", "unknown NCCL algorithm"),
    ("  Algorithm   |    Tree   |\n" + PRE + "    AllReduce |     7.8/  35.2 |", "TUNING row before"),
])
def test_malformed_known_line_names_the_line(bad, match):
    text = PRE + "NCCL version 2.28.9+cuda12.9\n" + PRE + bad
    line = text.count("\n") + 1
    with pytest.raises(CollsimError, match=rf"^x.log:line {line}: .*{match}"):
        parse_text(text, "x.log")


def test_bad_tuning_cell_count_is_an_error():
    lines = FIXTURE.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if "AllReduce |" in line)
    lines[i] = lines[i].rsplit("|", 2)[0] + "|"
    with pytest.raises(CollsimError, match=f"line {i + 1}: TUNING row has 8 cells, expected 9"):
        parse_text("\n".join(lines))


def test_canonical_names():
    assert canonical_algo("ring") == "Ring" and canonical_algo("NVLS_TREE") == "NVLSTree"
    assert canonical_algo("6") == "PAT" and canonical_proto("SIMPLE") == "Simple"
    with pytest.raises(CollsimError, match="unknown NCCL protocol"):
        canonical_proto("LL256")
