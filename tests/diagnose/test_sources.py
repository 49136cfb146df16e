"""collsim.diagnose.sources: each file recognised by its content, whatever its name, and a one-line error
for a file that cannot be read (binary, empty, missing, a folder, nothing recognisable)."""
import json
from pathlib import Path

import pytest

from collsim.diagnose.sources import read_source
from collsim.errors import CollsimError

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
RANK0_LOG = FIXTURES / "nccl_2.28_rank0.log"


def test_nccl_tests_text_with_interleaved_nccl_lines_by_content_not_name(tmp_path):
    path = tmp_path / "whatever.bin"
    path.write_text((FIXTURES / "nccl_tests_allreduce.txt").read_text())
    src = read_source(path)
    assert {"nccl-tests", "nccl-log"} <= set(src.kinds)
    (run,) = src.runs
    assert [r["bytes"] for r in run.rows] == [8, 32, 1024, 65536, 1048576]
    assert run.rows[-1]["busbw_GBps"] == 46.81 and src.lines[run.rows[-1]["line"] - 1].split()[0] == "1048576"
    assert run.groups == [["h200box", "h200box"]] and run.gpus[0][0] == "NVIDIA H200"
    assert run.version == ("2.28.9", 11) and run.meta["timing"] == "graph"


def test_launcher_tags_old_format_and_truncation(tmp_path):
    text = (FIXTURES / "nccl_tests_allreduce.txt").read_text()
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("".join(f"[1,0]<stdout>:{line}\n" for line in text.splitlines()))
    assert [r["bytes"] for r in read_source(tagged).runs[0].rows] == [8, 32, 1024, 65536, 1048576]
    old = read_source(FIXTURES / "nccl_tests_allreduce_old_format.txt")
    assert old.runs[0].rows and old.runs[0].gpus[0][0] == "A100-SXM4-40GB"
    cut = tmp_path / "cut.txt"
    cut.write_text(text[:text.index("65536") + 30])
    src = read_source(cut)
    assert [r["bytes"] for r in src.runs[0].rows] == [8, 32, 1024]
    assert any("truncated" in n for n in src.notes)


def test_two_runs_in_one_file_are_two_rank_groups(tmp_path):
    lines = (FIXTURES / "nccl_tests_allreduce.txt").read_text().splitlines()
    ranks = [line for line in lines if "#  Rank" in line]
    other = [line.replace("h200box", "other") for line in ranks]
    path = tmp_path / "two.txt"
    path.write_text("\n".join(lines[:8] + ranks + other + lines[10:]) + "\n")
    (run,) = read_source(path).runs
    assert run.groups == [["h200box", "h200box"], ["other", "other"]] and run.hosts == ["h200box", "other"]


def test_rows_broken_by_tags_are_read_loosely_and_other_collectives_read_as_theirs(tmp_path):
    broken = tmp_path / "broken.txt"
    broken.write_text("[0]      1048576        262144     float     sum      -1[0]    1626.5    0.64    1.24      0"
                      "[0]    2302.3    0.46    0.87      0\n")
    src = read_source(broken)
    assert src.runs[0].rows == [{"bytes": 1048576, "busbw_GBps": 1.24, "time_us": 1626.5, "line": 1}]
    assert any("read loosely" in n for n in src.notes)
    rs = tmp_path / "reduce_scatter.txt"   # count = size / 4 / 8 ranks: ReduceScatter's rows, read as its
    rs.write_text("      524288         16384     float     sum      -1    62.66    8.37    7.32      0    61.61    "
                  "8.51    7.45      0\n")
    src = read_source(rs)
    assert src.runs[0].meta["collective"] == "reduce_scatter" and src.rows_ranks == (8, 1)
    assert src.runs[0].rows == [{"bytes": 524288, "busbw_GBps": 7.32, "time_us": 62.66, "line": 1}]


def test_json_and_collsim_records(tmp_path):
    res = {"time": 10.0, "alg_bw": 1.0, "bus_bw": 1.0, "nwrong": 0}
    doc = {"env": ["NCCL_ALGO=Tree"], "nccl_version": 22809, "config": {"devices": [{"rank": 0, "hostname": "h"}]},
           "results": [{"size": 8, "count": 2, "type": "float", "out_of_place": res, "in_place": res}]}
    path = tmp_path / "out"
    path.write_text(json.dumps(doc))
    src = read_source(path)
    assert src.kinds[0] == "nccl-tests-json" and src.runs[0].rows[0]["bytes"] == 8 and src.runs[0].hosts == ["h"]
    assert src.runs[0].version == ("2.28.9", 1) and src.runs[0].meta["env"] == {"NCCL_ALGO": "Tree"}
    runner = read_source(ROOT / "data" / "h200x2" / "runner" / "nvlink_Ring_Simple_graph.jsonl")
    assert runner.kinds == ["collsim-records"] and len(runner.runs[0].rows) > 10
    public = read_source(ROOT / "data" / "public" / "L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl")
    assert public.runs[0].meta["nodes"] == 2 and public.runs[0].rows[-1]["bytes"] == 8 << 30


def test_real_json_files_pasted_one_after_another_are_a_run_each(tmp_path):
    """nccl-tests -J files as measured on 2 x H200 (data/h200x2/fidelity), graph then eager, pasted into one file:
    two runs, each with its host and GPU."""
    real = ROOT / "data" / "h200x2" / "fidelity"
    path = tmp_path / "paste.txt"
    path.write_text((real / "nt_graph.json").read_text() + "\n" + (real / "nt_eager.json").read_text())
    src = read_source(path)
    assert src.kinds[0] == "nccl-tests-json" and len(src.runs) == 2
    assert [r.meta["timing"] for r in src.runs] == ["graph", "eager"] and all(r.hosts == ["vm"] for r in src.runs)
    assert src.runs[0].gpus == [("NVIDIA H200", 1)] and len(src.runs[1].rows) == 30


def test_nccl_log_lines_it_cannot_read_are_left_out_and_named(tmp_path):
    lines = RANK0_LOG.read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if " AllReduce |" in line)
    lines[i] = lines[i].rsplit("|", 3)[0]   # a TUNING row cut short
    path = tmp_path / "debug.txt"
    path.write_text("\n".join(lines) + "\n")
    src = read_source(path)
    assert "nccl-log" in src.kinds and src.log.coll_channels == 24
    assert any(f"line {i + 1}:" in n and "TUNING row has" in n for n in src.notes)


def test_other_kinds_by_content(tmp_path):
    (tmp_path / "a").write_text("  ACSCtl: SrcValid+ TransBlk- ReqRedir+\n")
    (tmp_path / "b").write_text("BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n")
    (tmp_path / "c").write_text("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n")
    (tmp_path / "d").write_text("export NCCL_IB_HCA=mlx5_0\n")
    assert [read_source(tmp_path / n).kinds for n in "abcd"] == [["lspci"], ["kernel"], ["gpu-list"], ["environment"]]


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x02\xff\xfe" * 10, "not a text file"), (b"", "empty"), (b"   \n\n", "empty"),
    (b"hello world\nnothing to see\n", "no nccl-tests output"), ("é".encode("latin-1") * 500, "not a text file")])
def test_unreadable_files_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "f.log"
    path.write_bytes(content)
    with pytest.raises(CollsimError, match=message) as e:
        read_source(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_missing_file_and_folder(tmp_path):
    for path, message in ((tmp_path / "nope", "no such file"), (tmp_path, "is a directory")):
        with pytest.raises(CollsimError, match=message):
            read_source(path)
