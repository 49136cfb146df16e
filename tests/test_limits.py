"""README's Limits on every path added since they were written (issue 29): a path inside a measurement
file is never opened unless the user names it; only regular files are read (a FIFO or a device is
refused before any open); --env is strict and read as NCCL reads it; work is refused up front when its
memory estimate is over the bound; no output over an input; one line and exit 2 everywhere; and
README's Limits name the bounds the code enforces. The worst cases run as subprocesses under a 4 GB
address-space limit and a 20 s clock."""
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import collsim.cli as cli
import collsim.fit.compare as compare_module
from collsim.core.schedule import Schedule
from collsim.fit import _unseen
from collsim.measure import result_record, write_jsonl
from collsim.measure.executed import schedule_hash
from tests.measure.test_executed import executed_file

ROOT = Path(__file__).resolve().parents[1]
RUN2 = ROOT / "data" / "h200x2" / "run2"
SWEEP = RUN2 / "runner" / "nvlink_Ring_Simple_graph.jsonl"
PARAMS = RUN2 / "params.json"
LOG = Path(__file__).parent / "fixtures" / "nccl_tests_allreduce.txt"
NCCL_LOG = Path(__file__).parent / "fixtures" / "nccl_2.28_rank0.log"
LIMIT_AS = 4 * 10**9
SECONDS = 20


@pytest.fixture
def run(capsys):
    def call(*argv):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
        out, err = capsys.readouterr()
        return code, out, err
    return call


def one_line(result, *words):
    code, out, err = result
    assert code == 2, (code, out[-500:], err)
    assert len(err.splitlines()) == 1 and "error: " in err and "Traceback" not in err, err
    assert "internal error" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def collsim(*argv, env=None, cwd=ROOT):
    """``python -m collsim ARGV`` under a 4 GB address space and a 20 s clock: (code, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "collsim", *map(str, argv)], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env or {})},
                       preexec_fn=_limits, timeout=SECONDS)
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------------ 1. read only what the user named
def _executed_with_file(folder: Path, named: str, sha: str = "0" * 64) -> Path:
    f = folder / "e.jsonl"
    write_jsonl(f, [{"type": "meta", "world_size": 2, "schedule": {"file": named, "sha256": sha}},
                    result_record(32, 8, "float32", 50.0, 2, 0, algo="collsim:x", executor="collsim",
                                  schedule_sha256=sha)])
    return f


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("named", ["/etc/passwd", "/proc/self/environ", "/dev/zero", "FIFO", "OTHER"])
def test_a_path_inside_a_measurement_file_is_never_opened(tmp_path, fifo, named):
    """The meta names a file elsewhere: collsim opens none of them (a FIFO would block for ever,
    /dev/zero would give 1 GiB), and nothing any of them holds reaches the message."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = elsewhere / "other.json"
    other.write_text(json.dumps({"ranks": "SECRET-FIELD", "count": 4, "steps": []}))
    named = {"FIFO": str(fifo), "OTHER": str(other)}.get(named, named)
    measured = tmp_path / "measured"
    measured.mkdir()
    code, out, err = collsim("compare", _executed_with_file(measured, named), "--alpha", 1e-6, "--beta", 1e-10)
    one_line((code, out, err), "which is not beside the measurement file with the recorded sha256",
             "give it with --schedule FILE")
    assert "SECRET" not in err and "root:" not in err


def test_the_schedule_is_the_one_the_user_names_or_the_one_beside_with_its_hash(tmp_path, run):
    s = Schedule.from_steps(2, 8, [[(0, 1, 0, 8, "reduce")], [(1, 0, 0, 8, "copy")]], name="hand")
    elsewhere = tmp_path / "schedules"
    elsewhere.mkdir()
    (elsewhere / "hand.json").write_text(s.to_json())
    measured = tmp_path / "measured"
    measured.mkdir()
    f = _executed_with_file(measured, str(elsewhere / "hand.json"), schedule_hash(s))
    one_line(run("compare", f, "--alpha", 1e-6, "--beta", 1e-10), "give it with --schedule FILE")
    code, out, err = run("compare", f, "--alpha", 1e-6, "--beta", 1e-10, "--schedule", elsewhere / "hand.json")
    assert code == 0 and "collsim:x" in out, err
    (measured / "hand.json").write_text(s.to_json())     # beside it, by the name's last part: read, hash checked
    code, out, err = run("compare", f, "--alpha", 1e-6, "--beta", 1e-10)
    assert code == 0 and "collsim:x" in out, err


def test_a_fifo_beside_the_measurement_file_is_not_opened(tmp_path):
    os.mkfifo(tmp_path / "s.json")
    code, out, err = collsim("compare", _executed_with_file(tmp_path, "s.json"), "--alpha", 1e-6, "--beta", 1e-10)
    one_line((code, out, err), "give it with --schedule FILE")


@pytest.mark.parametrize("argv", [
    ["predict-nccl", "--cluster", "FIFO.yaml", "--bytes", 8],
    ["compare", "--cluster", "ib-400g", "--measured", "FIFO.jsonl"],
    ["compare", "--params", PARAMS, "--measured", "FIFO.jsonl"],
    ["show", "FIFO.jsonl"],
    ["check", "--file", "FIFO.json"],
    ["simulate", "--algo", "ring", "--bytes", 8, "--cluster", "FIFO.json"],
    ["show", "--label", "Ring/LL", "/dev/zero"],
], ids=["predict-nccl", "compare-cluster", "compare-params", "show", "check", "simulate", "device"])
def test_a_fifo_or_a_device_as_input_is_refused_before_it_is_opened(tmp_path, argv):
    for suffix in (".yaml", ".jsonl", ".json"):
        os.mkfifo(tmp_path / f"FIFO{suffix}")
    argv = [tmp_path / a if str(a).startswith("FIFO") else a for a in argv]
    one_line(collsim(*argv), "not a regular file (a pipe, a device or a socket)")


def test_schedule_bench_refuses_a_fifo_schedule(tmp_path):
    os.mkfifo(tmp_path / "s.json")
    p = subprocess.run([sys.executable, str(ROOT / "runners" / "schedule_bench.py"), "--backend", "gloo",
                        "--schedule", str(tmp_path / "s.json")], capture_output=True, text=True, timeout=SECONDS,
                       env={**os.environ, "WORLD_SIZE": "2"})
    assert p.returncode == 2 and "not a regular file" in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr


def test_a_large_yaml_file_is_refused_before_parsing(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("gpu: H100\nnotes: |\n" + "  x\n" * (1 << 19))
    one_line(collsim("predict-nccl", "--cluster", f, "--bytes", 8), "YAML larger than 1048576 bytes",
             "MAX_YAML_BYTES", "write it as JSON")


# ------------------------------------------------------------------ 2. --env strict, read as NCCL reads it
def test_repeated_env_options_are_merged(run):
    code, out, err = run("predict-nccl", "--cluster", "ib-400g", "--bytes", "1M", "64M", "--env", "NCCL_ALGO=Tree",
                         "--env", "NCCL_PROTO=Simple", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert {(r["algo"], r["proto"]) for r in rows} == {("Tree", "Simple")}


@pytest.mark.parametrize("env, words", [
    (["NCCL_ALGO=Tree", "NCCL_ALGO=Ring"], ["--env NCCL_ALGO given twice ('Tree' and 'Ring')"]),
    (["NCCL_BUFFSIZE=1099511627776"], ["NCCL_BUFFSIZE=1099511627776: out of range 32768..4294967296 bytes",
                                       "BUFFSIZE_RANGE"]),
    (["NCCL_MIN_NCHANNELS=0"], ["NCCL_MIN_NCHANNELS=0: out of range 1..64"]),
    (["NCCL_MIN_NCHANNELS=1_6"], ["NCCL reads it as 1 (its strtoll stops at '_')"]),
    (["NCCL_MIN_NCHANNELS=\u0661\u0666"], ["not an integer (NCCL's strtoll reads no digits: 0)"]),
    (["NCCL_MAX_NCHANNELS=1e9"], ["NCCL reads it as 1 (its strtoll stops at 'e')"]),
    (["NCCL_MIN_NCHANNELS=010"], ["NCCL reads a leading 0 as octal, 8"]),
    (["ALGO=Tree"], ["--env 'ALGO=Tree': expected NCCL_NAME=VALUE"]),
], ids=lambda x: x[0][:30] if isinstance(x, list) else None)
def test_env_values_are_bounded_and_read_as_nccl_reads_them(run, env, words):
    argv = ["predict-nccl", "--cluster", "ib-400g", "--bytes", "1M"]
    for e in env:
        argv += ["--env", e]
    one_line(run(*argv), *words)


def test_a_hex_value_is_what_nccl_reads(run):
    code, out, err = run("predict-nccl", "--cluster", "ib-400g", "--bytes", "1G", "--env", "NCCL_MAX_NCHANNELS=0x4",
                         "--json")
    assert code == 0 and {r["channels"] for r in json.loads(out)["rows"]} <= {1, 2, 3, 4}, err


def test_import_nccl_tests_merges_and_checks_env(tmp_path, run):
    out = tmp_path / "o.jsonl"
    code, _, err = run("import-nccl-tests", LOG, "--label", "Ring/LL", "-o", out, "--env", "NCCL_A=1",
                       "--env", "NCCL_B=2")
    assert code == 0, err
    assert {"NCCL_A": "1", "NCCL_B": "2"}.items() <= json.loads(out.read_text().splitlines()[0])["env"].items()
    one_line(run("import-nccl-tests", LOG, "--label", "Ring/LL", "-o", out, "--env", "NCCL_A=1", "--env", "NCCL_A=2"),
             "given twice")


# ------------------------------------------------------------------ 3. memory bounded by an estimate
@pytest.mark.parametrize("argv, words", [
    (["simulate", "--algo", "nvls", "--ranks", 65536, "--bytes", "1M", "--alpha", 1e-6, "--beta", 1e-10],
     ["simulating it (65537 endpoints"]),
    (["check", "--algo", "direct", "--ranks", 4096, "--count", 4096], ["checking this schedule (4096 ranks"]),
    (["simulate", "--algo", "direct", "--ranks", 4096, "--bytes", "1M", "--alpha", 1e-6, "--beta", 1e-10],
     ["simulating direct on 4096 ranks (up to 16773120 transfers)"]),
    (["schedule", "--cluster", "ib-400g", "--nodes", 1024, "--algo", "ring", "--count", 1048576],
     ["ring on 8192 ranks (134201344 transfers)"]),
], ids=["simulate-nvls-65536", "check-direct-4096", "simulate-direct-4096", "schedule-ring-8192"])
def test_work_over_the_memory_bound_is_refused_up_front(argv, words):
    err = one_line(collsim(*argv), *words, "collsim's estimate", "over the 4 GB memory bound",
                   "--max-memory SIZE or COLLSIM_MAX_MEMORY=SIZE")
    assert float(re.search(r"about ([0-9.e+]+) GB", err).group(1)) > 4


def test_printing_twenty_steps_of_a_big_schedule_stays_within_the_bounds():
    """105 s and 8.8 GB before (every transfer became a Python object to print 20 steps)."""
    code, out, err = collsim("schedule", "--cluster", "ib-400g", "--nodes", 512, "--algo", "ring", "--count", 1048576)
    assert code == 0 and out.startswith("Schedule(ring, ranks=4096") and "8170 more steps" in out, err


def test_the_memory_bound_is_lifted_or_lowered_by_its_override(run, monkeypatch):
    argv = ["schedule", "--algo", "ring", "--ranks", 64, "--count", 4096]
    assert run(*argv)[0] == 0
    one_line(run("--max-memory", "1M", *argv), "over the 0.00105 GB memory bound")
    monkeypatch.setenv("COLLSIM_MAX_MEMORY", "1M")
    one_line(run(*argv), "over the 0.00105 GB memory bound")
    assert run("--max-memory", "16G", *argv)[0] == 0
    monkeypatch.setenv("COLLSIM_MAX_MEMORY", "lots")
    one_line(run(*argv), "COLLSIM_MAX_MEMORY must be a size in bytes such as 16G, got 'lots'")


def test_closed_forms_answer_or_refuse_at_a_million_ranks_within_seconds():
    for algo in ("ring", "halving-doubling", "recursive-doubling", "direct", "nvls", "double-tree", "binary-tree"):
        code, out, err = collsim("predict", "--algo", algo, "--ranks", 1 << 20, "--bytes", "4M", "--alpha", 1e-6,
                                 "--beta", 1e-10)
        assert code == 0 and "P=1048576" in out, (algo, err)
    one_line(collsim("predict", "--algo", "nccl-tree", "--gpus-per-node", 1, "--ranks", 1 << 20, "--bytes", "4M",
                     "--alpha", 1e-6, "--beta", 1e-10), "a tree over 1048576 positions", "MAX_TREE_POSITIONS")


def test_the_singular_values_of_a_tall_jacobian_take_no_rows_x_rows_matrix():
    """fit's check of what the data cannot tell apart: 400,000 points would be a 1.2 TB U in full."""
    jac = np.random.default_rng(0).normal(size=(400_000, 5))
    jac[:, 4] = 0.0                                        # a parameter the data does not see
    assert _unseen(jac, np.ones(5, bool)).tolist() == [False, False, False, False, True]


def test_compare_makes_nccl_table_once_per_run(monkeypatch, run):
    calls = []
    real = compare_module.nccl_table
    monkeypatch.setattr(compare_module, "nccl_table", lambda *a, **k: calls.append(a) or real(*a, **k))
    code, _, err = run("compare", "--params", PARAMS, "--measured", SWEEP, "--holdout", "all")
    assert code == 0 and len(calls) == 1, (err, len(calls))


# ------------------------------------------------------------------ 4. no output over an input
def test_import_nccl_tests_does_not_write_over_its_cluster_file(tmp_path, run):
    c = tmp_path / "c.yaml"
    c.write_text("gpu: H100\ngpus_per_node: 2\nnodes: 1\n")
    one_line(run("import-nccl-tests", LOG, "--label", "Ring/LL", "--cluster", c, "-o", c), "it is also an input")
    assert c.read_text().startswith("gpu: H100")


# ------------------------------------------------------------------ 5. one-line errors in new code
@pytest.mark.parametrize("algorithms", ["ring", ["ring"], {"ring": 5}, {"ring": {"spiral": 1}},
                                        {"ring": {"slices": "two"}}, {"spiral": {}}, {"ring": {"channels": 65}}],
                         ids=["string", "list", "params-int", "odd-key", "bad-type", "unknown-algo", "channels"])
def test_executed_metas_with_odd_algorithms_are_one_line(tmp_path, run, algorithms):
    f = executed_file(tmp_path / "x.jsonl")
    lines = f.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["schedule"] = {"algorithms": algorithms}
    f.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    one_line(run("compare", f, "--alpha", 1e-6, "--beta", 1e-10))


def test_a_number_such_as_1_2_3_in_an_nccl_log_is_one_line(tmp_path, run):
    text = NCCL_LOG.read_text().replace("AllReduce |     7.8/  35.2", "AllReduce |     1.2.3/  35.2", 1)
    (tmp_path / "bad.log").write_text(text)
    one_line(run("compare", "--params", PARAMS, "--measured", SWEEP, "--nccl-log", tmp_path / "bad.log"),
             "bad TUNING cell '1.2.3/  35.2'")


def test_compare_cluster_refuses_records_with_wrong_elements(tmp_path, run):
    lines = SWEEP.read_text().splitlines()
    rec = {**json.loads(lines[1]), "wrong": 5}
    (tmp_path / "m.jsonl").write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    (tmp_path / "c.yaml").write_text("gpu: H200\ngpus_per_node: 2\n")
    assert run("compare", "--cluster", tmp_path / "c.yaml", "--measured", SWEEP)[0] == 0
    for argv in (["--cluster", tmp_path / "c.yaml"], ["--params", PARAMS]):
        one_line(run("compare", *argv, "--measured", tmp_path / "m.jsonl"), "5 wrong elements")


def test_show_lenient_keeps_every_valid_row_of_a_file_whose_meta_has_one_bad_field(tmp_path, run):
    lines = SWEEP.read_text().splitlines()
    meta = {**json.loads(lines[0]), "nodes": "two", "gpu": "H200\nforged row"}
    (tmp_path / "m.jsonl").write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    code, out, err = run("show", "--lenient", tmp_path / "m.jsonl")
    assert code == 0, err
    rows = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert len(rows) == len(lines) - 1
    assert out.splitlines()[0].startswith("# ") and "gpu H200\\nforged row" in out.splitlines()[0]
    assert "field 'nodes' must be an integer" in out


@pytest.mark.parametrize("where", ["FILE", "/dev/full", "FILE/sub"])
def test_notebooks_html_says_one_line_for_a_bad_output_folder(tmp_path, capsys, where):
    from collsim.widgets import notebooks_html
    (tmp_path / "f").write_text("a file")
    out = where.replace("FILE", str(tmp_path / "f"))
    assert notebooks_html.main([out, "--only", "01"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("notebooks_html: error: cannot write into ") and len(err.splitlines()) == 1, err


def test_notebooks_html_says_one_line_on_a_full_file_system(tmp_path, capsys, monkeypatch):
    from collsim.widgets import notebooks_html

    def full(_fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(notebooks_html.os, "fsync", full)
    assert notebooks_html.main([str(tmp_path / "out"), "--only", "01"]) == 2
    assert capsys.readouterr().err == f"notebooks_html: error: cannot write into {tmp_path / 'out'}: " \
                                      "No space left on device\n"


def test_launch_torchrun_without_gpus_or_torchrun_says_why(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GPUS_PER_NODE"}
    for extra, words in (({"PATH": "/usr/bin:/bin"}, "no GPU found by nvidia-smi: set GPUS_PER_NODE"),
                         ({"GPUS_PER_NODE": "two"}, "GPUS_PER_NODE must be a whole number >= 1"),
                         ({"GPUS_PER_NODE": "2", "NNODES": "0"}, "NNODES must be a whole number >= 1"),
                         ({"GPUS_PER_NODE": "2", "PATH": "/usr/bin:/bin"}, "torchrun not found")):
        p = subprocess.run(["bash", str(ROOT / "runners" / "launch_torchrun.sh")], capture_output=True, text=True,
                           env={**env, **extra}, timeout=SECONDS)
        assert p.returncode == 2 and p.stderr == f"launch_torchrun: error: {p.stderr.split(': ', 2)[2]}", p.stderr
        assert words in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr


# ------------------------------------------------------------------ 6. README's Limits against the code
def test_readme_limits_name_the_bounds_the_code_enforces():
    from collsim import inputs
    from collsim.algorithms.tree_plan import MAX_TREE_POSITIONS
    from collsim.core.execution import MAX_STATE_BYTES
    from collsim.nccl.settings import MAX_ANY_CHANNELS
    readme = (ROOT / "README.md").read_text()
    limits = readme[readme.index("## Limits"):]
    limits = " ".join(limits[:limits.index("\n## ", 4)].split())
    said = [  # (what README says, the value in the code, what README says it is)
        ("larger than 1 GiB", inputs.MAX_FILE_BYTES, 1 << 30),
        ("YAML files larger than 1 MiB", inputs.MAX_YAML_BYTES, 1 << 20),
        ("deeper than 32 levels", inputs.MAX_JSON_DEPTH, 32),
        ("sizes above 2^50 bytes", inputs.MAX_BYTES, 1 << 50),
        ("more than 2^20 ranks or nodes", inputs.MAX_RANKS, 1 << 20),
        ("channel counts outside 1-64", inputs.MAX_CHANNELS, 64),
        ("channel counts outside 1-64", MAX_ANY_CHANNELS, 64),
        ("NCCL_BUFFSIZE outside 32 KiB-4 GiB", inputs.BUFFSIZE_RANGE, (32 << 10, 4 << 30)),
        ("latencies above 3600 s", inputs.MAX_SECONDS, 3600),
        ("more than 1 s per byte", inputs.MAX_SECONDS_PER_BYTE, 1),
        ("more than 2^30 calls", inputs.MAX_CALLS, 1 << 30),
        ("trees over more than 32768 ranks", MAX_TREE_POSITIONS, 32768),
        ("estimated above 4 GB", inputs.MAX_MEMORY_BYTES, 4 * 10**9),
        ("checker state above 4 GiB", MAX_STATE_BYTES, 4 << 30),
    ]
    wrong = [(text, code, value) for text, code, value in said if text not in limits or code != value]
    assert not wrong, wrong
    for name in ("COLLSIM_MAX_MEMORY", "--max-memory", "collsim/core/budget.py", "--schedule", "regular files",
                 "strtoll", "--env"):
        assert name in limits, name

