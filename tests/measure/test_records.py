"""collsim.measure (records, loader, CSV) and collsim.measure.nccl_tests (nccl-tests import)."""
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.core.collective import ALLREDUCE
from collsim.errors import CollsimError, CollsimWarning
from collsim.measure import (
    JsonlWriter,
    Measurements,
    format_row,
    load,
    read_records,
    result_record,
    write_jsonl,
)
from collsim.measure.files import to_csv
from collsim.measure.nccl_tests import import_nccl_tests, parse_env
from collsim.measure.nccl_tests_rows import parse_label
from collsim.units import parse_size

FIX = Path(__file__).resolve().parents[1] / "fixtures"
META = {"type": "meta", "harness": "collsim", "world_size": 4}


def _write(path, recs, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) + tail)
    return path


def test_parse_size_suffixes_and_errors():
    sizes = [parse_size(s) for s in ("8", "64K", "1M", "4G", "4GiB", "2kb")]
    assert sizes == [8, 65536, 1 << 20, 4 << 30, 4 << 30, 2048]
    for bad in ("", "K", "1.5", "-8", "12Q"):
        with pytest.raises(CollsimError, match="bad size"):
            parse_size(bad)


def test_bandwidths_follow_nccl_tests():
    algbw, busbw = ALLREDUCE.bandwidths(1 << 30, 1e4, 8)
    assert algbw == pytest.approx((1 << 30) / 1e9 / 1e-2)
    assert busbw == pytest.approx(algbw * 2 * 7 / 8)


def test_bandwidths_edge_cases():
    assert ALLREDUCE.bandwidths(0, 0.0, 4) == (0.0, 0.0) and ALLREDUCE.bandwidths(0, 3.0, 4) == (0.0, 0.0)
    assert ALLREDUCE.bandwidths(8, 0.0, 4) == (np.inf, np.inf)
    alg, bus = ALLREDUCE.bandwidths(8, 0.0, 1)  # one rank: no time, no bus traffic
    assert alg == np.inf and np.isnan(bus)
    assert all(np.isnan(ALLREDUCE.bandwidths(8, -1.0, 4))) and np.isnan(ALLREDUCE.bandwidths(8, 2.0, 0)[1])
    assert all(np.isnan(ALLREDUCE.bandwidths(0, -1.0, 4)))  # a negative time is invalid whatever the size
    assert ALLREDUCE.bandwidths(8, 2.0, 0)[0] == pytest.approx(8 / 1e3 / 2.0)


def test_load_arrays_meta_and_csv(tmp_path):
    recs = [META] + [result_record(s, s // 4, "float32", 10.0 + i, 4, 0, inplace=True, algo="Ring")
                     for i, s in enumerate((8, 1024, 1 << 20))]
    m = load(_write(tmp_path / "a.jsonl", recs))
    assert m.meta["world_size"] == 4 and len(m) == 3
    assert m.size.dtype == np.int64 and list(m["size"]) == [8, 1024, 1 << 20]
    assert m.time_us.tolist() == [10.0, 11.0, 12.0] and m.wrong.tolist() == [0, 0, 0]
    assert m.busbw_GBps[2] == pytest.approx((1 << 20) / 1e3 / 12.0 * 1.5)
    assert list(m.algo) == ["Ring"] * 3
    to_csv(m, tmp_path / "a.csv")
    rows = list(csv.DictReader(open(tmp_path / "a.csv")))
    assert len(rows) == 3 and rows[1]["size"] == "1024" and float(rows[2]["time_us"]) == 12.0
    assert "8" in format_row(m.records[0]) and "Ring" in format_row(m.records[0])


def test_to_pandas(tmp_path):
    pd = pytest.importorskip("pandas")
    m = load(_write(tmp_path / "a.jsonl", [META, result_record(8, 2, "float32", 5.0, 2, 1)]))
    df = m.to_pandas()
    assert isinstance(df, pd.DataFrame) and df["wrong"].tolist() == [1]


def test_malformed_line_strict_and_lenient(tmp_path):
    good = [META, result_record(8, 2, "float32", 5.0, 2, 0), result_record(16, 4, "float32", 6.0, 2, 0)]
    path = _write(tmp_path / "c.jsonl", good, tail='{"type": "result", "size": 32, "cou')
    with pytest.raises(CollsimError, match=r"c.jsonl:4: not valid JSON"):
        load(path)
    m = load(path, strict=False)
    assert m.size.tolist() == [8, 16] and len(m.skipped) == 1 and "c.jsonl:4" in m.skipped[0]


def test_lenient_load_keeps_the_valid_records_after_a_bad_line_and_names_each_skipped_one(tmp_path):
    ok = [result_record(s, s // 4, "float32", 5.0, 2, 0) for s in (8, 16, 32, 64)]
    path = _write(tmp_path / "c.jsonl", [META, ok[0], {**ok[1], "time_us": -1.0}, ok[2], {**ok[3], "size": "x"},
                                         ok[3]], tail="{oops\n")
    m = load(path, strict=False)
    assert m.size.tolist() == [8, 32, 64]
    assert [e.split(": ")[0][-9:] for e in m.skipped] == ["c.jsonl:3", "c.jsonl:5", "c.jsonl:7"]
    assert "'time_us' must be >= 0" in m.skipped[0] and "'size' must be an integer" in m.skipped[1]


@pytest.mark.parametrize("bad, match", [
    ({"type": "result", "size": -8, "count": 2, "dtype": "float32", "time_us": 1.0,
      "algbw_GBps": 1.0, "busbw_GBps": 1.0, "wrong": 0}, "'size' must be >= 0, got -8"),
    ({"type": "result", "size": 8, "count": 2, "dtype": "float32", "time_us": 1.0,
      "algbw_GBps": 1.0, "busbw_GBps": 1.0}, "lacks field 'wrong'"),
    ({"type": "oops"}, "type 'meta' or 'result'"),
])
def test_bad_records_name_the_line(tmp_path, bad, match):
    with pytest.raises(CollsimError, match=rf"b.jsonl:2: .*{match}"):
        load(_write(tmp_path / "b.jsonl", [META, bad]))


def test_result_before_meta_and_empty_file(tmp_path):
    with pytest.raises(CollsimError, match="before any meta"):
        load(_write(tmp_path / "d.jsonl", [result_record(8, 2, "float32", 5.0, 2, 0)]))
    with pytest.raises(CollsimError, match="no meta record"):
        load(_write(tmp_path / "e.jsonl", []))


def test_save_round_trip(tmp_path):
    m = Measurements(meta={"harness": "x"}, records=[result_record(8, 2, "float32", 5.0, 2, None)])
    m.save(tmp_path / "r.jsonl")
    back = load(tmp_path / "r.jsonl")
    assert back.meta == {"harness": "x"} and back.records == m.records and np.isnan(back.wrong[0])


def test_jsonl_writer_puts_type_first_and_flushes_each_record(tmp_path):
    path = tmp_path / "w.jsonl"
    with JsonlWriter(path) as out:
        out.write("meta", {"harness": "x", "type": "ignored"})
        assert path.read_text() == '{"type": "meta", "harness": "x"}\n'  # on disk before close
        out.write("result", {"size": 8, "type": "result"})
        assert path.read_text().splitlines()[1] == '{"type": "result", "size": 8}'


def test_jsonl_writer_on_a_full_disk_cuts_back_to_the_last_complete_line(tmp_path):
    """A disk that fills mid-record (here RLIMIT_FSIZE at 100 bytes: the third 40-byte line is
    cut at byte 100) leaves the two complete lines and a one-line error; writing goes on failing
    cleanly."""
    import resource
    import signal
    import subprocess
    import sys
    code = ("import sys\nfrom collsim.measure import JsonlWriter\nw = JsonlWriter(sys.argv[1])\n"
            "for i in range(5):\n    try:\n        w.write('result', {'pad': 'x' * 12, 'i': i})\n"
            "    except Exception as e:\n        print(type(e).__name__, e)\n")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
    out = tmp_path / "w.jsonl"
    p = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, preexec_fn=limit,
                       cwd=Path(__file__).resolve().parents[2])
    lines = out.read_text().splitlines(keepends=True)
    assert len(lines) == 2 and all(ln.endswith("}\n") for ln in lines) and read_records(out)[1]["i"] == 1
    assert p.stdout.splitlines() == [f"CollsimError cannot write {out}: File too large; it keeps its 2 complete "
                                     "records"] * 3, p.stderr


def test_write_jsonl_refuses_an_untyped_record_before_writing(tmp_path):
    with pytest.raises(CollsimError, match='record 1 has no "type"'):
        write_jsonl(tmp_path / "x.jsonl", [{"type": "meta"}, {"size": 8}])
    assert not (tmp_path / "x.jsonl").exists()


def test_write_jsonl_creates_the_folder_and_keeps_each_records_type(tmp_path):
    recs = [{"type": "meta", "runner": "r"}, {"type": "op", "op": "mm"}, result_record(8, 2, "float32", 5.0, 2, 0)]
    write_jsonl(tmp_path / "new" / "x.jsonl", recs)
    lines = (tmp_path / "new" / "x.jsonl").read_text().splitlines()
    assert lines == [json.dumps(r) for r in recs] and read_records(tmp_path / "new" / "x.jsonl") == recs


def test_import_nccl_tests_text_with_interleaved_log():
    m = import_nccl_tests(FIX / "nccl_tests_allreduce.txt", "Ring/LL")
    assert len(m) == 10 and m.meta["world_size"] == 2 and m.meta["timing"] == "graph"
    assert m.meta["nccl_version"] == "2.28.9" and m.meta["nccl_library_version"] == "2.28.9"
    assert m.meta["avg_busbw_GBps"] == 12.3456 and m.meta["hosts"] == ["h200box"]
    assert m.size.tolist()[:4] == [8, 8, 32, 32] and m.inplace.tolist()[:2] == [False, True]
    assert m.time_us.tolist()[:2] == [10.71, 10.52] and m.busbw_GBps[-1] == 47.45
    assert set(m.algo) == {"Ring"} and set(m.proto) == {"LL"} and set(m.dtype) == {"float32"}
    assert m.ranks.tolist() == [2] * 10


def test_import_nccl_tests_env_given_by_the_caller(tmp_path):
    """Text logs do not record NCCL_* variables; the caller's env lands in the meta (and wins
    over what -J JSON recorded)."""
    m = import_nccl_tests(FIX / "nccl_tests_allreduce.txt", "Ring/LL", env={"NCCL_GRAPH_MIXING_SUPPORT": 0})
    assert m.meta["env"] == {"NCCL_GRAPH_MIXING_SUPPORT": "0"}
    assert parse_env(["NCCL_GRAPH_MIXING_SUPPORT=0", "NCCL_ALGO=Ring=x"]) == {
        "NCCL_GRAPH_MIXING_SUPPORT": "0", "NCCL_ALGO": "Ring=x"}
    for bad in ("NCCL_ALGO", "=1", "1X=2"):
        with pytest.raises(CollsimError, match="expected NAME=VALUE"):
            parse_env([bad])


def test_import_nccl_tests_malformed_row(tmp_path):
    lines = (FIX / "nccl_tests_allreduce.txt").read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("65536"))
    lines[i] = lines[i].replace("14.90", "14.9x")
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CollsimError, match=rf"bad.txt:{i + 1}: bad time '14.9x'"):
        import_nccl_tests(bad, "default")
    m = import_nccl_tests(bad, "default", strict=False)  # the rows before and after the bad one
    assert m.size.tolist() == [8, 8, 32, 32, 1024, 1024, 1 << 20, 1 << 20]
    assert len(m.skipped) == 1 and m.skipped[0].startswith(f"{bad}:{i + 1}: bad time")
    lines[i] = "       65536         16384     float     sum      -1    14.90"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(CollsimError, match=rf"bad.txt:{i + 1}: nccl-tests row has 6 fields"):
        import_nccl_tests(bad, "default")


@pytest.mark.parametrize("cut", ["    14.90", "    14.90    4.40    4.4", "    14.90    4.40    4.40       0    14.7"])
def test_a_log_cut_off_inside_a_row_keeps_its_complete_rows(tmp_path, cut):
    text = (FIX / "nccl_tests_allreduce.txt").read_text()
    i = text.index("       65536         16384")
    (tmp_path / "cut.txt").write_text(text[:i] + "       65536         16384     float     sum      -1" + cut)
    with pytest.warns(CollsimWarning, match=r"cut.txt:\d+: .*\(the file ends inside this row: truncated\)"):
        m = import_nccl_tests(tmp_path / "cut.txt", "Ring/LL")
    assert m.size.tolist() == [8, 8, 32, 32, 1024, 1024]
    assert len(m.skipped) == 1 and "ends inside this row: truncated" in m.skipped[0]


def test_import_nccl_tests_json(tmp_path):
    res = lambda t: {"time": t, "alg_bw": 1.0, "bus_bw": 1.0, "nwrong": 0}  # noqa: E731
    doc = {"version": 1, "args": ["./all_reduce_perf", "-G", "20"], "env": ["NCCL_ALGO=Tree", "HOME=/x"],
           "nccl_version": 22809,
           "config": {"nthreads": 1, "ngpus": 2, "graph": 20, "iterations": 20, "warmup_iters": 5,
                      "devices": [{"rank": 0, "hostname": "h"}]},
           "results": [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": "    -1",
                        "out_of_place": res(10.0), "in_place": res(9.5)}],
           "average_bus_bandwidth": {"bandwidth": 0.5, "okay": "unchecked"}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc, indent=1))
    m = import_nccl_tests(path, "Tree/Simple")
    assert m.time_us.tolist() == [10.0, 9.5] and m.meta["world_size"] == 2
    assert m.meta["env"] == {"NCCL_ALGO": "Tree"} and m.meta["nccl_library_version"] == "2.28.9"
    assert import_nccl_tests(path, "Tree", env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}).meta["env"] == {
        "NCCL_ALGO": "Ring", "NCCL_PROTO": "LL"}
    assert m.meta["timing"] == "graph" and list(m.proto) == ["Simple", "Simple"]
    assert m.meta["gpus_per_process"] == 2  # one process drove both GPUs (-g 2): not the -mpi harness
    path.write_text(json.dumps(doc, indent=1)[:-40])
    with pytest.raises(CollsimError, match=r"t.json: nccl-tests -J output: not valid JSON \(line \d+"):
        import_nccl_tests(path, "default")


def test_parse_label():
    assert parse_label("ring/ll128") == ("Ring", "LL128")
    assert parse_label("Tree") == ("Tree", None) and parse_label("default") == (None, None)
    with pytest.raises(CollsimError, match="unknown NCCL algorithm"):
        parse_label("Spiral/LL")


def test_read_records_names_the_bad_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"type": "meta"}\n\n{"type": "result", "size": 8}\n')
    assert read_records(p) == [{"type": "meta"}, {"type": "result", "size": 8}]
    p.write_text('{"type": "meta"}\n[1, 2]\n')
    with pytest.raises(CollsimError, match=r"r.jsonl:2: expected a JSON object"):
        read_records(p)
    p.write_text('{"type": "meta"}\n{oops\n')
    with pytest.raises(CollsimError, match=r"r.jsonl:2: not valid JSON"):
        read_records(p)
