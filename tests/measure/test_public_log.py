"""Multi-node nccl-tests logs (one node per host of the "Rank ... on HOST" lines), published logs
(data/public) read as measurements, and `collsim compare --cluster` scoring them from the cluster
description alone."""
import json
from pathlib import Path

import pytest

from collsim.cli import main
from collsim.errors import CollsimError
from collsim.fit.points import load_points
from collsim.measure.files import load_file
from collsim.measure.public_log import load_public_log

ROOT = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parents[1] / "fixtures"
L01, L15 = (ROOT / "data" / "public" / f for f in ("L01_h100x8_1n_ring_together.jsonl",
                                                    "L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl"))


def two_node_log(tmp_path) -> Path:
    """The 2-rank fixture with each rank on its own host, as `mpirun -np 2 -H a:1,b:1` prints it."""
    text = (FIX / "nccl_tests_allreduce.txt").read_text()
    text = text.replace("Pid   1001 on    h200box device  1", "Pid   1001 on    h200box2 device  0")
    path = tmp_path / "graph_Ring_LL.log"
    path.write_text(text)
    return path


def test_nccl_tests_text_log_nodes_are_its_hosts(tmp_path):
    one = load_file(FIX / "nccl_tests_allreduce.txt", "Ring/LL")
    two = load_file(two_node_log(tmp_path))
    assert one.meta["nodes"] == 1 and two.meta["nodes"] == 2 and two.meta["hosts"] == ["h200box", "h200box2"]
    points = load_points([two_node_log(tmp_path)])
    assert {(p.config.ranks, p.config.nodes) for p in points} == {(2, 2)}      # was read as 2r1n
    out = tmp_path / "two.jsonl"
    assert main(["import-nccl-tests", str(two_node_log(tmp_path)), "--label", "Ring/LL", "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["nodes"] == 2


def test_published_logs_read_as_measurements():
    m = load_public_log(L01)
    assert (m.meta["world_size"], m.meta["nodes"], m.meta["gpus_per_process"], m.meta["iters"]) == (8, 1, 8, 20)
    assert m.meta["env"] == {"NCCL_ALGO": "Ring"} and m.meta["algo"] == "Ring"
    assert len(m.records) == 62 and {r["inplace"] for r in m.records} == {True, False}
    m15 = load_file(L15)
    assert (m15.meta["nodes"], m15.meta["gpus_per_process"], m15.meta["env"]["NCCL_MIN_CTAS"]) == (2, 1, "24")
    points = load_points([L15], inplace=False)
    assert {(p.config.ranks, p.config.nodes, p.config.channels) for p in points} == {(16, 2, 24)}


def test_published_log_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    for text, message in (('{"kind": "meta", "ranks": 16, "nodes": 3}\n', "do not split over 3 nodes"),
                          ('{"kind": "meta", "ranks": 8}\n{"size": 8, "time_us": -1}\n', "bad row"),
                          ('{"kind": "meta", "ranks": 8}\n', "no rows")):
        bad.write_text(text)
        with pytest.raises(CollsimError, match=message):
            load_public_log(bad)


def test_compare_cluster_scores_a_published_log(capsys):
    assert main(["compare", "--cluster", "h100-nvlink", "--nodes", "2", "--measured", str(L15), "--out-of-place",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    f = d["files"][0]
    assert f["gpus_per_process"] == 1 and {r["algo"] for r in f["rows"]} == {"Ring"}
    assert {r["channels"] for r in f["rows"] if r["bytes"] >= 2 << 20} == {24}          # NCCL_MIN_CTAS=24
    assert d["simulated"]["median_abs_rel_error"] < 0.05 < d["nccl"]["median_abs_rel_error"]
    assert main(["compare", "--cluster", "h100-nvlink", "--measured", str(L01)]) == 0
    out = capsys.readouterr().out
    assert "8 GPU(s) per process" in out and "from 1 MiB" in out
    assert main(["compare", "--cluster", "h100-nvlink", "--measured", str(L15)]) == 2
    assert "ran 16 ranks, the cluster has 8" in capsys.readouterr().err


def test_nodes_and_cluster_for_logs_that_lack_hosts(tmp_path, capsys):
    same_name = FIX / "nccl_tests_allreduce.txt"          # both ranks print host h200box
    assert {p.config.nodes for p in load_points([same_name], "Ring/LL")} == {1}
    assert {p.config.nodes for p in load_points([same_name], "Ring/LL", nodes=2)} == {2}
    out = tmp_path / "out.jsonl"
    assert main(["import-nccl-tests", str(two_node_log(tmp_path)), "--label", "Ring/LL", "--cluster", "h100-nvlink",
                 "--nodes", "2", "-o", str(out)]) == 0
    meta = json.loads(out.read_text().splitlines()[0])
    assert meta["nodes"] == 2 and meta["gpu"] == "H100" and meta["cluster"]["nics_per_node"] == 8
    assert main(["import-nccl-tests", str(two_node_log(tmp_path)), "--label", "Ring/LL", "--nodes", "3",
                 "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "do not split over 3 nodes" in capsys.readouterr().err


def test_show_reads_published_logs_and_nccl_tests_output(capsys, tmp_path):
    assert main(["show", str(ROOT / "data/public/L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl")]) == 0
    out = capsys.readouterr().out
    row = "     1048576       262144   float32    sum    -1         Ring    in     154.10"
    assert "ranks 16 nodes 2" in out and row in out
    log = ROOT / "data/h200x2/nccl-tests/graph_Ring_LL.log"
    assert main(["show", str(log)]) == 0
    assert "Ring/LL" in capsys.readouterr().out
    renamed = tmp_path / "mylog.txt"
    renamed.write_bytes(log.read_bytes())
    assert main(["show", str(renamed)]) == 2
    assert "pass --label ALGO/PROTO" in capsys.readouterr().err
    assert main(["show", str(renamed), "--label", "Tree/Simple"]) == 0
    assert "Tree/Simple" in capsys.readouterr().out


def test_logs_of_nccl_tests_before_2_10(tmp_path, capsys):
    """No Group in the Rank lines, no root column, and a maximum deviation ("error") where newer logs
    count wrong elements: the rows read the same; wrong is 0 when the log says its values are in
    bounds, unknown otherwise."""
    old = FIX / "nccl_tests_allreduce_old_format.txt"
    m = load_file(old, "default")
    assert [r["size"] for r in m.records] == [8, 8, 1 << 20, 1 << 20, 128 << 20, 128 << 20]
    assert [r["time_us"] for r in m.records][:2] == [39.46, 38.95] and {r["wrong"] for r in m.records} == {0}
    assert (m.meta["world_size"], m.meta["nodes"], m.meta["gpus_per_process"], m.meta["timing"]) == (8, 1, 8, "eager")
    failed = tmp_path / "old_failed.log"
    failed.write_text(old.read_text().replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED"))
    assert {r["wrong"] for r in load_file(failed, "default").records} == {None}
    bad = tmp_path / "old_bad.log"
    bad.write_text(old.read_text().replace("5e-07    60.87", "lots    60.87"))
    with pytest.raises(CollsimError, match="old_bad.log:18: bad error 'lots'"):
        load_file(bad, "default")
    assert main(["compare", "--cluster", "a100-nvlink", "--measured", str(old), "--label", "default"]) == 0
    assert "all sizes" in capsys.readouterr().out


@pytest.mark.parametrize("tag", ["[1,0]<stdout>:", "[0] ", "0: "])
def test_lines_tagged_by_the_launcher(tmp_path, tag):
    """mpirun --tag-output, mpirun -l and srun -l put a tag before every line; the log reads the same."""
    plain = FIX / "nccl_tests_allreduce.txt"
    tagged = tmp_path / "tagged.log"
    tagged.write_text("".join(tag + line for line in plain.read_text().splitlines(keepends=True)))
    a, b = load_file(plain, "Ring/LL"), load_file(tagged, "Ring/LL")
    assert b.records == a.records and len(a.records) > 0
    assert (b.meta["hosts"], b.meta["timing"]) == (a.meta["hosts"], a.meta["timing"])
