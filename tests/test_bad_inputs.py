"""Bad and extreme inputs through the CLI: each one gets one precise line on stderr and exit code
2, nothing half-written, no traceback (the cases found by feeding every command bad files and
arguments on a fresh clone), and lenient reading keeps every valid row."""
import csv
import json
import os
import shutil
from pathlib import Path

import pytest

import collsim.cli as cli
from collsim.inputs import MAX_BYTES

ROOT = Path(__file__).resolve().parents[1]
RUN2 = ROOT / "data" / "h200x2" / "run2"
SWEEP = RUN2 / "runner" / "nvlink_Ring_Simple_graph.jsonl"
PARAMS = RUN2 / "params.json"
LOG = Path(__file__).parent / "fixtures" / "nccl_tests_allreduce.txt"
UNIFORM = ["--alpha", "5e-6", "--beta", "1e-11"]


@pytest.fixture
def run(capsys):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    def call(*argv):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as e:  # argparse refuses a bad argument by exiting
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err
    return call


def one_line_error(result, *words):
    code, out, err = result
    assert code == 2, (code, out, err)
    assert len(err.splitlines()) == 1 and "error" in err and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def lines(path):
    return Path(path).read_text().splitlines()


def sweep_with(tmp_path, meta=None, record=None, name="m.jsonl"):
    """The committed Ring/Simple sweep with its meta and first record changed."""
    text = lines(SWEEP)
    first = {**json.loads(text[0]), **(meta or {})}
    rec = {**json.loads(text[1]), **(record or {})}
    path = tmp_path / name
    path.write_text("\n".join([json.dumps(first), json.dumps(rec), *text[2:]]) + "\n")
    return path


def params_with(tmp_path, **change):
    d = json.loads(PARAMS.read_text())
    d.update(change)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(d))
    return path


# ------------------------------------------------------------------ files that are not text
@pytest.mark.parametrize("argv", [
    ["show", "BIN"], ["fit", "BIN", "-o", "OUT"], ["compare", "--params", PARAMS, "--measured", "BIN"],
    ["compare", "--params", "BIN", "--measured", SWEEP], ["fidelity", "--runner", "BIN", "--reference", LOG],
    ["check", "--file", "BIN"],
], ids=["show", "fit", "compare", "compare-params", "fidelity", "check"])
def test_a_binary_file_is_not_a_text_file(tmp_path, run, argv):
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    argv = [binary if a == "BIN" else tmp_path / "o.json" if a == "OUT" else a for a in argv]
    one_line_error(run(*argv), str(binary), "not a text file (byte 128 is not UTF-8)")


# ------------------------------------------------------------------ meta and record fields
@pytest.mark.parametrize("meta, record, words", [
    ({"nodes": "two"}, None, ["m.jsonl:1: field 'nodes' must be an integer, got 'two'"]),
    ({"env": []}, None, ["m.jsonl:1: field 'env' must be an object, got []"]),
    ({"env": {"NCCL_MAX_NCHANNELS": "1000000000"}}, None, ["meta env NCCL_MAX_NCHANNELS must be <= 64"]),
    ({"env": {"NCCL_MAX_NCHANNELS": "1e9"}}, None, ["meta env NCCL_MAX_NCHANNELS must be a whole number"]),
    ({"env": {"NCCL_BUFFSIZE": "99999999999999999"}}, None, ["NCCL_BUFFSIZE must be <= 4294967296"]),
    ({"world_size": 10**30}, None, ["field 'world_size' must be <= 1048576"]),
    ({"nccl_probe": {"coll_channels": 10**9}}, None, ["nccl_probe: field 'coll_channels' must be <= 64"]),
    ({"nccl_probe": {"choices": [{"bytes": "8"}]}}, None, ["choices[0]: field 'bytes' must be an integer"]),
    (None, {"time_us_min": "fast"}, ["m.jsonl:2: field 'time_us_min' must be a finite number, got 'fast'"]),
    (None, {"time_us_min": float("inf")}, ["m.jsonl:2: field 'time_us_min' must be a finite number, got inf"]),
    (None, {"time_us": float("nan")}, ["m.jsonl:2: field 'time_us' must be a finite number, got nan"]),
    (None, {"time_us_min": -3.0}, ["m.jsonl:2: field 'time_us_min' must be >= 0, got -3"]),
    (None, {"time_us_min": 0.0}, ["size 8: no positive time"]),
    (None, {"wrong": 5}, ["size 8: 5 wrong elements, not an AllReduce to fit or compare"]),
    (None, {"size": 10**30}, ["m.jsonl:2: field 'size' must be <= 1125899906842624"]),
], ids=lambda x: json.dumps(x)[:40] if isinstance(x, dict) else None)
@pytest.mark.parametrize("command", ["fit", "compare"])
def test_bad_meta_and_record_fields_are_named(tmp_path, run, meta, record, words, command):
    f = sweep_with(tmp_path, meta, record)
    argv = ["fit", f, "-o", tmp_path / "p.json"] if command == "fit" else ["compare", "--params", PARAMS,
                                                                            "--measured", f]
    one_line_error(run(*argv), *words)
    assert not (tmp_path / "p.json").exists()


# ------------------------------------------------------------------ arguments
@pytest.mark.parametrize("argv, words", [
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", "1e30", *UNIFORM], ["--bytes", f"at most {MAX_BYTES}"]),
    (["sweep", "--ranks", 4, "-e", "1e20", *UNIFORM], ["-e/--max-bytes", "at most"]),
    (["check", "--algo", "ring", "--ranks", 4, "--count", 8, "--seed", -1], ["--seed", "must be >= 0"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", 0, "--beta", 0], ["--beta", "must be > 0"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", "1e300", "--beta", 1],
     ["--alpha", "<= 3600"]),
    (["sweep", "--ranks", 4, *UNIFORM, "--plot", "s.yaml"], ["--plot", "unknown format 'yaml'", ".png"]),
    (["sweep", "--ranks", 4, *UNIFORM, "--plot", "s"], ["--plot", "unknown format '(no extension)'"]),
    (["demo", "--out", "d.yaml"], ["unknown format 'yaml'"]),
    (["compare", "--params", PARAMS, "--measured", SWEEP, "--plot", "c.yaml"], ["unknown format 'yaml'"]),
    (["compare", "--params", PARAMS, "--measured", SWEEP, "--ranks", 0], ["--ranks", "must be >= 1"]),
    (["explain", "--params", PARAMS, "--algo", "Ring", "--proto", "LL", "--ranks", 2, "--channels", 0],
     ["--channels", "must be >= 1"]),
    (["explain", "--params", PARAMS, "--algo", "Ring", "--proto", "LL", "--ranks", 2, "--channels", -3],
     ["--channels", "must be >= 1"]),
    (["explain", "--params", PARAMS, "--algo", "Ring", "--proto", "LL", "--ranks", 2, "--channels", 10**9],
     ["--channels", "must be <= 64"]),
    (["explain", "--params", PARAMS, "--algo", "Ring", "--proto", "LL", "--ranks", 2, "--buffsize", 10**20],
     ["--buffsize", "must be <="]),
    (["schedule", "--algo", "ring", "--ranks", 10**7, "--count", 8], ["--ranks", "must be <= 1048576"]),
    (["check", "--algo", "ring", "--ranks", 4, "--count", 8, "--itemsize", 10**6], ["--itemsize", "<= 1024"]),
])
def test_arguments_out_of_range_are_refused_before_any_work(run, argv, words):
    one_line_error(run(*argv), *words)


@pytest.mark.parametrize("error, code, words", [
    (MemoryError("Unable to allocate 5 GiB"), 2, "collsim: error: out of memory (Unable to allocate 5 GiB): ask for"),
    (ZeroDivisionError("float division by zero"), 70, "collsim: internal error: ZeroDivisionError: float division by "
                                                     "zero (a bug in collsim: please report it"),
])
def test_the_last_resorts_are_one_line_too(run, monkeypatch, error, code, words):
    import collsim.cli.schedule

    def fail(*args, **kwargs):
        raise error
    monkeypatch.setattr(collsim.cli.schedule, "closed_form", fail)
    got, out, err = run("predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, *UNIFORM)
    assert (got, out) == (code, "") and err.startswith(words) and err.count("\n") == 1 and "Traceback" not in err


def test_predict_json_is_valid_json_when_a_bandwidth_is_infinite(run):
    code, out, _ = run("predict", "--algo", "ring", "--ranks", 1, "--bytes", 8, *UNIFORM, "--json")
    assert code == 0 and json.loads(out)["algbw_GBps"] is None and "Infinity" not in out


# ------------------------------------------------------------------ schedule files
@pytest.mark.parametrize("steps, words", [
    ([[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": None}]], ["'op' must be 'reduce' or 'copy', got None"]),
    ([[{"src": 0, "dst": 1, "offset": 0, "count": 1, "op": ["copy"]}]], ["'op' must be", "got ['copy']"]),
    ([[{"src": 0, "dst": 1, "offset": 0, "count": 10**30, "op": "copy"}]], ["'count' must be an integer from -"]),
    ([[[0, 1, 0, 1, "copy"]]], ["steps[0][0] is not an object"]),
])
def test_schedule_files_with_bad_transfers(tmp_path, run, steps, words):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"ranks": 2, "count": 4, "steps": steps}))
    one_line_error(run("check", "--file", f), *words)


def test_a_schedule_too_large_to_check_is_refused_before_allocating(tmp_path, run):
    f = tmp_path / "s.json"
    steps = [[{"src": 0, "dst": 1, "offset": i, "count": 1, "op": "copy"} for i in range(0, 2000, 2)]]
    f.write_text(json.dumps({"ranks": 1 << 20, "count": 4000, "steps": steps}))
    one_line_error(run("check", "--file", f), "checking this schedule needs",
                   "GiB of state (1048576 ranks x 2000 element ranges)")


def test_deeply_nested_schedule_json(tmp_path, run):
    f = tmp_path / "s.json"
    f.write_text('{"ranks": 2, "count": 4, "steps": ' + "[" * 100000 + "]" * 100000 + "}")
    one_line_error(run("check", "--file", f), "s.json: JSON nested deeper than 32 levels")


# ------------------------------------------------------------------ nccl-tests output
def _log_with(tmp_path, old, new):
    text = LOG.read_text()
    assert old in text
    f = tmp_path / "log.txt"
    f.write_text(text.replace(old, new, 1))
    return f


@pytest.mark.parametrize("old, new, words", [
    *[("-1    14.90    4.40    4.40       0", f"-1    14.90    4.40    4.40     {bad}",
       [":21: #wrong must be a whole number"]) for bad in ("inf", "nan")],
    ("-1    14.90", "-1      nan", [":21: time in nccl-tests row must be a finite number, got nan"]),
    ("       65536", "       ²5536", [":21: size must be a whole number, got '²5536'"]),
    ("#  Rank  1 Group  0 Pid   1001 on    h200box device  1 [0000:1c:00] NVIDIA H200",
     "#  Rank 99999999999999999999999999999999 Group 0 Pid 1 on h device 0 [x] G", [":10: Rank must be"]),
    ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   "
     "busbw  #wrong", "#  size count type", [":15: nccl-tests column header has 3 columns"]),
])
def test_nccl_tests_logs_with_bad_values(tmp_path, run, old, new, words):
    f = _log_with(tmp_path, old, new)
    one_line_error(run("import-nccl-tests", f, "--label", "Ring/LL", "-o", tmp_path / "o.jsonl"), *words)
    assert not (tmp_path / "o.jsonl").exists()


def test_a_truncated_log_keeps_its_complete_rows(tmp_path, run):
    text = LOG.read_text()
    f = tmp_path / "cut.txt"
    f.write_text(text[:text.index("       65536") + 40])
    code, out, err = run("import-nccl-tests", f, "--label", "Ring/LL", "-o", tmp_path / "o.jsonl")
    assert code == 0 and "6 records (3 sizes" in out
    assert err.count("\n") == 1 and err.startswith("collsim: warning: skipped ") and "row: truncated)" in err


J_DOC = {"args": ["./all_reduce_perf"], "env": ["NCCL_ALGO=Ring"], "nccl_version": 22809,
         "config": {"nthreads": 1, "ngpus": 2, "graph": 0, "iterations": 20, "warmup_iters": 5, "devices": [{}]},
         "results": [{"size": 8, "count": 2, "type": "float",
                      "out_of_place": {"time": 10.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0},
                      "in_place": {"time": 9.5, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0}}]}


@pytest.mark.parametrize("change, words", [
    ({"config": [1, 2]}, ["field 'config' must be an object"]),
    ({"env": {"NCCL_ALGO": "Ring"}}, ["field 'env' must be a list"]),
    ({"env": [1]}, ["'env' must be a list of strings"]),
    ({"args": "./all_reduce_perf -b 8"}, ["field 'args' must be a list"]),
    ({"config": {**J_DOC["config"], "devices": "abc"}}, ["config: field 'devices' must be a list"]),
    ({"config": {**J_DOC["config"], "nthreads": "x" * 1000, "ngpus": 10**9}},  # was a 12 GB string
     ["config: field 'nthreads' must be an integer"]),
    ({"config": {**J_DOC["config"], "ngpus": 10**9}}, ["config: field 'ngpus' must be <= 1048576"]),
    ({"results": [{**J_DOC["results"][0], "in_place": {"time": "slow"}}]},
     ["results[0].in_place: field 'time' must be a finite number"]),
    ({"results": [{**J_DOC["results"][0], "size": -8}]}, ["results[0]: field 'size' must be >= 0"]),
    ({"results": [7]}, ["results[0] must be an object"]),
])
def test_nccl_tests_json_with_fields_of_the_wrong_type(tmp_path, run, change, words):
    f = tmp_path / "j.json"
    f.write_text(json.dumps({**J_DOC, **change}))
    one_line_error(run("import-nccl-tests", f, "--label", "Ring/LL", "-o", tmp_path / "o.jsonl"), *words)


def test_nccl_tests_json_that_is_fine(tmp_path, run):
    f = tmp_path / "j.json"
    f.write_text(json.dumps(J_DOC))
    code, out, _ = run("import-nccl-tests", f, "--label", "Ring/LL", "-o", tmp_path / "o.jsonl")
    assert code == 0 and "2 records (1 sizes" in out


# ------------------------------------------------------------------ topology and parameters files
def test_yaml_aliases_are_refused(tmp_path, run):
    pytest.importorskip("yaml")
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    f = tmp_path / "t.yaml"
    f.write_text(laughs)
    one_line_error(run("simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--cluster", f),
                   "t.yaml: invalid YAML at line 2", "aliases (*name) are not allowed")


@pytest.mark.parametrize("change, words", [
    ({"channels": 10**9}, ["field 'channels' must be <= 64"]),
    ({"channels": 1e9}, ["field 'channels' must be an integer"]),
    ({"link_exp": 1e9}, ["link_exp must be <= 16"]),
], ids=["channels", "float-channels", "link_exp"])
@pytest.mark.parametrize("command", ["compare", "explain"])
def test_parameters_out_of_range(tmp_path, run, change, words, command):
    p = params_with(tmp_path, **change)
    argv = ["compare", "--params", p, "--measured", SWEEP] if command == "compare" else \
        ["explain", "--params", p, "--algo", "Ring", "--proto", "LL", "--ranks", 2]
    one_line_error(run(*argv), "p.json", *words)


def test_a_zero_channel_rate_is_refused(tmp_path, run):
    d = json.loads(PARAMS.read_text())
    d["paths"][0]["chan_GBps"] = 0
    (tmp_path / "p.json").write_text(json.dumps(d))
    one_line_error(run("explain", "--params", tmp_path / "p.json", "--algo", "Ring", "--proto", "LL", "--ranks", 2),
                   "paths[0]: chan_GBps must be >= 0.001, got 0")


def test_an_nccl_log_with_a_huge_channel_count_is_refused(tmp_path, run):
    log = tmp_path / "n.log"
    log.write_text("h:1:1 [0] NCCL INFO NCCL version 2.28.9\nh:1:1 [0] NCCL INFO 1000000000 coll channels, "
                   "0 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer\n")
    one_line_error(run("compare", "--params", PARAMS, "--measured", LOG, "--label", "Ring/LL", "--nccl-log", log),
                   "NCCL log", "field 'coll_channels' must be <= 64, got 1000000000")


# ------------------------------------------------------------------ outputs
def test_an_output_that_is_one_of_the_inputs_is_refused(tmp_path, run):
    f = tmp_path / "m.jsonl"
    shutil.copy(SWEEP, f)
    before = f.read_bytes()
    one_line_error(run("fit", f, "-o", f), "cannot write parameters file", "it is also an input")
    one_line_error(run("show", f, "--csv", tmp_path / "." / "m.jsonl"), "cannot write CSV file", "also an input")
    log = tmp_path / "log.txt"
    shutil.copy(LOG, log)
    one_line_error(run("import-nccl-tests", log, "--label", "Ring/LL", "-o", log), "also an input")
    one_line_error(run("compare", "--params", PARAMS, "--measured", f, "--plot", f.with_suffix(".png"),
                       "--overhead-from", f.with_suffix(".png")), "cannot write figure", "also an input")
    assert f.read_bytes() == before and log.read_text() == LOG.read_text()


@pytest.mark.parametrize("argv", [
    ["sweep", "--ranks", 4, *UNIFORM, "--plot", "OUT"], ["demo", "--out", "OUT"],
    ["fit", SWEEP, "-o", "OUT"], ["show", SWEEP, "--csv", "OUT"],
    ["import-nccl-tests", LOG, "--label", "Ring/LL", "-o", "OUT"],
], ids=["sweep", "demo", "fit", "show", "import"])
def test_a_device_or_a_folder_is_not_an_output(tmp_path, run, argv):
    figure = argv[0] in ("sweep", "demo")
    full = tmp_path / "full.png"  # /dev/full under a figure's name: writes fail with "no space"
    full.symlink_to("/dev/full")
    folder = tmp_path / "d.png"
    folder.mkdir()
    for out, words in ((full if figure else "/dev/full", "not a regular file"), (folder, "it is a directory")):
        err = one_line_error(run(*[out if a == "OUT" else a for a in argv]), "cannot write", words)
        assert "wrote" not in err
    assert Path("/dev/full").is_char_device()


def test_a_failed_write_leaves_the_old_file(tmp_path, run, monkeypatch):
    """A write that fails half-way (a full disk) leaves the previous version whole and no
    temporary file; the error is one line."""
    out = tmp_path / "x.csv"
    out.write_text("old\n")
    import collsim.measure.files as measure
    real = measure.csv.writer

    def failing(f):
        w = real(f)

        class Half:
            def writerow(self, row):
                w.writerow(row)
                if len(row) and row[0] != "size":
                    raise OSError(28, "No space left on device")
        return Half()
    monkeypatch.setattr(measure.csv, "writer", failing)
    one_line_error(run("show", SWEEP, "--csv", out), "cannot write CSV file", "No space left on device",
                   "nothing written")
    assert out.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
def test_a_read_only_folder_is_refused_before_any_work(tmp_path, run):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    code, out, err = run("show", SWEEP, "--csv", folder / "x.csv")
    assert out == "" and "the folder" in one_line_error((code, out, err), "read-only") and not list(folder.iterdir())


def test_outputs_keep_the_permissions_of_the_file_they_replace(tmp_path, run):
    out = tmp_path / "x.csv"
    out.write_text("old\n")
    out.chmod(0o640)
    assert run("show", SWEEP, "--csv", out)[0] == 0
    assert out.stat().st_mode & 0o777 == 0o640 and lines(out)[0].startswith("size,count")


# ------------------------------------------------------------------ showing what files hold
def test_show_escapes_terminal_control_characters_and_csv_neutralises_formulas(tmp_path, run):
    f = sweep_with(tmp_path, {"gpu": "\x1b[2J\x1b[31mH200\rX"}, {"dtype": "=HYPERLINK(\"http://x\")",
                                                                  "algo": "\x07Ring"})
    code, out, _ = run("show", f, "--csv", tmp_path / "x.csv")
    assert code == 0 and "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "gpu \\x1b[2J\\x1b[31mH200\\rX" in out and "\\x07Ring" in out
    rows = list(csv.reader(open(tmp_path / "x.csv")))
    assert rows[1][rows[0].index("dtype")] == "'=HYPERLINK(\"http://x\")"
    assert rows[1][rows[0].index("size")] == "8"


def test_no_command_prints_a_control_character_from_a_file(tmp_path, run):
    text = lines(SWEEP)
    f = tmp_path / "m.jsonl"
    f.write_text("\n".join([text[0]] + [json.dumps({**json.loads(t), "dtype": "\x1b]0;owned\x07"}) for t in text[1:]]))
    code, out, _ = run("fidelity", "--runner", f, "--reference", f)
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "\\x1b]0;owned\\x07" in out


def test_lenient_show_keeps_every_valid_row_and_names_the_skipped_lines(tmp_path, run):
    text = lines(SWEEP)
    bad = [text[0], text[1], "{oops", text[2], json.dumps({**json.loads(text[3]), "time_us": -1}), *text[4:]]
    f = tmp_path / "m.jsonl"
    f.write_text("\n".join(bad) + "\n")
    one_line_error(run("show", f), "m.jsonl:3: not valid JSON")
    code, out, _ = run("show", f, "--lenient")
    shown = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert code == 0 and len(shown) == len(text) - 2
    skipped = [ln for ln in out.splitlines() if ln.startswith("# skipped")]
    assert len(skipped) == 2 and "m.jsonl:3:" in skipped[0] and "m.jsonl:5: field 'time_us' must be >= 0" in skipped[1]
