"""collsim.cli.schedule: the README's schedule commands and every error path (one line, exit 2)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from collsim.algorithms import ALGORITHMS, BY_COLLECTIVE, build_schedule
from collsim.cli import main
from collsim.core.collective import get as get_collective
from collsim.cost import closed_form

CLI = Path(sys.executable).parent / "collsim"
A, B, G = 5e-6, 1e-11, 3e-12
UNIFORM = ["--alpha", str(A), "--beta", str(B)]


def run(capsys, *argv):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:             # argparse reports bad arguments by exiting
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, out, err, *words):
    assert rc == 2, (rc, out, err)
    lines = err.splitlines()
    assert len(lines) == 1 and "error" in lines[0], err
    assert "Traceback" not in err and out == ""
    for w in words:
        assert w in lines[0], (w, lines[0])


# ------------------------------------------------------------------ exact commands
@pytest.mark.parametrize("algo, extra", [("ring", []), ("double-tree", []), ("direct", []),
                                         ("hierarchical", ["--gpus-per-node", 2]),
                                         ("nccl-tree", ["--gpus-per-node", 3])])
def test_schedule_json_schema(capsys, algo, extra):
    rc, out, err = run(capsys, "schedule", "--algo", algo, "--ranks", 6, "--count", 37, *extra, "--json")
    assert rc == 0 and err == ""
    d = json.loads(out)
    assert (d["ranks"], d["count"], d["itemsize"]) == (6, 37, 4)
    assert d["steps"] and all(isinstance(step, list) and step for step in d["steps"])
    for step in d["steps"]:
        for t in step:
            assert set(t) - {"lane"} == {"src", "dst", "offset", "count", "op", "channel"}
            assert t["op"] in ("reduce", "copy") and t.get("lane", 1) > 0
            assert 0 <= t["src"] < 6 and 0 <= t["dst"] < 6 and 0 <= t["offset"] < t["offset"] + t["count"] <= 37
    kw = {"gpus_per_node": extra[1]} if extra else {}
    assert d["steps"] == build_schedule(algo, 6, 37, **kw).to_dict()["steps"]


def test_schedule_text_and_list(capsys):
    rc, out, _ = run(capsys, "schedule", "--list")
    assert rc == 0 and all(name in out for name in ALGORITHMS)
    assert "lecture-tree         -             (teaching only)" in out
    rc, out, _ = run(capsys, "schedule", "--algo", "ring", "--ranks", 4, "--count", 8)
    assert rc == 0 and "step    0: 0->1[0:2]+" in out


def test_predict_and_simulate_print_the_same_time(capsys):
    argv = ["--algo", "ring", "--ranks", 8, "--bytes", 1073741824, "--alpha", 5e-6, "--beta", 1e-11, "--json"]
    rc, out, _ = run(capsys, "predict", *argv)
    assert rc == 0
    predicted = json.loads(out)
    assert predicted["time_s"] == pytest.approx(2 * 7 * 5e-6 + 2 * 7 / 8 * 2 ** 30 * 1e-11, rel=1e-11)
    rc, out, _ = run(capsys, "simulate", *argv)
    assert rc == 0 and json.loads(out)["time_s"] == predicted["time_s"]


@pytest.mark.parametrize("algo", sorted(ALGORITHMS))
def test_predict_and_simulate_agree_for_every_algorithm(capsys, algo):
    # nccl-tree is exact on one link class (on two classes its step sum is an upper bound); nvls's
    # form is an upper bound; nvlstree, nvls-sharp and CollNet have none
    inter = ["--alpha-inter", 2e-5, "--beta-inter", 8e-11] if algo == "hierarchical" else \
        ["--alpha-inter", A, "--beta-inter", B]
    extra = ["--gpus-per-node", 4, *inter] if "gpus_per_node" in ALGORITHMS[algo].needs else []
    argv = ["--algo", algo, "--ranks", 16, "--bytes", 3 << 20, *UNIFORM, "--gamma", G, *extra, "--json"]
    rc, out, err = run(capsys, "simulate", *argv, "--policy", "schedule")     # the closed forms' contention
    assert rc == 0, err
    simulated = json.loads(out)["time_s"]
    rc, out, err = run(capsys, "predict", *argv)
    if ALGORITHMS[algo].closed_form is None:
        assert_one_line_error(rc, out, err, "no closed form")
        return
    assert rc == 0, err
    predicted = json.loads(out)["time_s"]
    if algo in ("ring", "halving-doubling", "hierarchical"):                   # exact (Algorithm.exact)
        assert simulated == pytest.approx(predicted, rel=1e-11)
    else:                                                                       # upper bounds
        assert simulated <= predicted * (1 + (0.03 if algo == "nvls" else 1e-12))


@pytest.mark.parametrize("coll", sorted(BY_COLLECTIVE))
def test_predict_coll_uses_the_collectives_form_and_busbw(capsys, coll):
    for algo in [n for n, a in BY_COLLECTIVE[coll].items() if a.closed_form and not a.needs]:
        for named in ([], ["--algo", algo]):        # --algo defaults to the collective's first
            if not named and algo != next(iter(BY_COLLECTIVE[coll])):
                continue
            rc, out, err = run(capsys, "predict", "--coll", coll, *named, "--ranks", 8, "--bytes", "4M",
                               *UNIFORM, "--gamma", G, "--channels", 2, "--json")
            assert rc == 0, err
            got = json.loads(out)
            t = closed_form(algo, 8, 4 << 20, A, B, G, coll, channels=2)
            assert (got["coll"], got["algo"]) == (coll, algo)
            assert got["time_s"] == pytest.approx(t, rel=1e-9)
            alg, bus = get_collective(coll).bandwidths(4 << 20, t * 1e6, 8)
            assert got["busbw_GBps"] == pytest.approx(bus, rel=1e-6)
            assert got["algbw_GBps"] == pytest.approx(alg, rel=1e-6)


@pytest.mark.parametrize("coll", sorted(BY_COLLECTIVE))
def test_predict_coll_answers_at_the_rank_bound(capsys, coll):
    rc, out, err = run(capsys, "predict", "--coll", coll, "--ranks", 1 << 20, "--bytes", "4M", *UNIFORM,
                       "--channels", 4)
    assert rc == 0 and out.startswith(f"{coll} {next(iter(BY_COLLECTIVE[coll]))} P=1048576 "), err


def test_predict_coll_all_gather_is_not_allreduce(capsys):
    argv = ["--ranks", 8, "--bytes", "4M", "--alpha", 1e-6, "--beta", 1e-11, "--json"]
    rc, out, _ = run(capsys, "predict", "--coll", "all_gather", "--algo", "ring", *argv)
    assert rc == 0 and json.loads(out)["time_s"] == pytest.approx(7e-6 + 7 / 8 * (4 << 20) * 1e-11, rel=1e-12)
    rc, out, _ = run(capsys, "simulate", "--coll", "all_gather", "--algo", "ring", *argv, "--policy", "schedule")
    assert rc == 0 and json.loads(out)["time_s"] == pytest.approx(7e-6 + 7 / 8 * (4 << 20) * 1e-11, rel=1e-9)


def test_simulate_cluster_json_reports_every_nic(capsys):
    rc, out, err = run(capsys, "simulate", "--cluster", "h100-nvlink", "--nodes", 2, "--algo", "ring",
                       "--channels", 16, "--bytes", "1G", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["ranks"] == 16 and d["channels"] == 16 and d["busbw_GBps"] > 300
    busy = {x["name"]: x["busy"] for x in d["resources"]}
    # the rail rings' 16 channels are one channel with every node's GPUs permuted, simulated once on a machine
    # whose GPUs and NICs of a node are one each ("node0.nic*": every NIC of node 0, alike)
    assert d["channel_classes"] == 1
    nics = [busy[f"node{n}.nic*.{way}"] for n in range(2) for way in ("out", "in")]
    assert len(nics) == 4 and min(nics) > 0.85                          # all 8 NICs carry the ring, both ways
    assert all(0 < busy[f"node{n}.gpu*.send"] < 1 for n in range(2))
    rc, out, err = run(capsys, "schedule", "--algo", "ring", "--cluster", "h100-nvlink", "--nodes", 2, "--channels",
                       2, "--count", 64, "--json")
    assert rc == 0 and json.loads(out)["ranks"] == 16
    rc, out, err = run(capsys, "simulate", "--cluster", "a100x4-nvlink", "--algo", "ring", "--channels", 6,
                       "--bytes", "64M")
    assert rc == 0 and "gpuN-gpuN" in out


def test_predict_passes_inter_tree(capsys):
    base = ["predict", "--algo", "hierarchical", "--ranks", 32, "--gpus-per-node", 4, "--bytes", "8M", *UNIFORM,
            "--alpha-inter", 2e-5, "--beta-inter", 8e-11, "--json"]
    times = {}
    for inter in ("ring", "tree"):
        rc, out, _ = run(capsys, *base, "--inter", inter)
        assert rc == 0
        times[inter] = json.loads(out)["time_s"]
        assert times[inter] == pytest.approx(closed_form("hierarchical", 32, 8 << 20, A, B, gpus_per_node=4,
                                                         inter=inter, alpha_inter=2e-5, beta_inter=8e-11))
    assert times["ring"] != times["tree"]


def test_simulate_text_preset_and_topology_file(capsys, tmp_path):
    rc, out, _ = run(capsys, "simulate", "--algo", "hierarchical", "--ranks", 16, "--bytes", "1M",
                     "--cluster", "ib-400g", "--gpus-per-node", 8)
    assert rc == 0 and "busbw" in out and "gpuN.send" in out
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"nodes": 2, "gpus_per_node": 2, "intra": {"alpha_s": A, "beta_s_per_byte": B},
                             "inter": {"alpha_s": 2e-5, "beta_s_per_byte": 8e-11}}))
    rc, out, _ = run(capsys, "simulate", "--algo", "ring", "--ranks", 4, "--bytes", 4096, "--cluster", f, "--json")
    assert rc == 0 and json.loads(out)["transfers"] == 24


def test_sweep_table_and_json(capsys):
    rc, out, _ = run(capsys, "sweep", "--algos", "ring,double-tree", "--ranks", 8, *UNIFORM, "-b", 8, "-e", "1M",
                     "--json")
    rows = json.loads(out)
    assert rc == 0 and len(rows) == 2 * 18 and {r["algo"] for r in rows} == {"ring", "double-tree"}
    rc, out, _ = run(capsys, "sweep", "--algos", "ring", "--ranks", 4, "--cluster", "h100-nvlink",
                     "--nodes", 1, "--gpus-per-node", 4, "-b", "1K", "-e", "4K")
    assert rc == 0 and len(out.splitlines()) == 1 + 3


# ------------------------------------------------------------------ check
def test_check_algorithm_and_lecture_ring(capsys):
    rc, out, _ = run(capsys, "check", "--algo", "double-tree", "--ranks", 7, "--count", 100)
    assert rc == 0 and out.startswith("OK")
    rc, out, _ = run(capsys, "check", "--algo", "lecture-ring", "--ranks", 4, "--count", 8)
    assert rc == 1 and out.startswith("WRONG: step 2 of 6, transfer 1 of 4:") and "twice" in out


def test_check_of_a_wrong_schedule_file_names_the_first_wrong_step(capsys, tmp_path):
    d = build_schedule("ring", 4, 8).to_dict()
    f = tmp_path / "ring.json"
    f.write_text(json.dumps(d))
    rc, out, _ = run(capsys, "check", "--file", f, "--json")
    assert rc == 0 and json.loads(out)["ok"]
    del d["steps"][2][1]                               # drop one reduce of the third step
    f.write_text(json.dumps(d))
    rc, out, _ = run(capsys, "check", "--file", f, "--json")
    r = json.loads(out)
    assert rc == 1 and not r["ok"] and r["step"] is not None and r["step"] >= 2
    rc, out, _ = run(capsys, "check", "--file", f)
    assert rc == 1 and out.startswith(f"WRONG: step {r['step'] + 1} of ")
    d["steps"][0][0]["dst"] = 9                        # a rank the schedule does not have
    f.write_text(json.dumps(d))
    rc, out, _ = run(capsys, "check", "--file", f)
    assert rc == 1 and out.startswith("WRONG: step 1 of 6, transfer 1 of 4: bad rank")


# ------------------------------------------------------------------ error paths
BAD = [
    (["predict", "--algo", "nope", "--ranks", 4, "--bytes", 8, *UNIFORM], ["unknown algorithm", "nope"]),
    (["predict", "--ranks", 4, "--bytes", 8, *UNIFORM], ["needs --algo", "--coll"]),
    (["predict", "--coll", "alltoall", "--algo", "ring", "--ranks", 4, "--bytes", 8, *UNIFORM],
     ["unknown alltoall algorithm 'ring'", "p2p"]),
    (["predict", "--algo", "nvlstree", "--ranks", 8, "--gpus-per-node", 4, "--bytes", 8, *UNIFORM],
     ["no closed form", "collsim simulate --coll all_reduce --algo nvlstree"]),
    (["simulate", "--algo", "nope", "--ranks", 4, "--bytes", 8, *UNIFORM], ["unknown algorithm"]),
    (["schedule", "--algo", "nope", "--ranks", 4, "--count", 8], ["unknown algorithm"]),
    (["predict", "--algo", "ring", "--ranks", 0, "--bytes", 8, *UNIFORM], ["--ranks", ">= 1"]),
    (["schedule", "--algo", "ring", "--ranks", -3, "--count", 8], ["--ranks"]),
    (["schedule", "--algo", "ring", "--ranks", 4, "--count", -1], ["--count", ">= 0"]),
    (["schedule", "--algo", "ring", "--ranks", 4, "--count", 2.5], ["--count", "2.5"]),
    (["schedule", "--algo", "ring", "--ranks", 4.0, "--count", 8], ["--ranks"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", -8, *UNIFORM], ["--bytes", "-8"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", "1.5", *UNIFORM], ["--bytes", "whole"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", "1e400", *UNIFORM], ["--bytes"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", "nan", *UNIFORM], ["--bytes"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", "lots", *UNIFORM], ["--bytes", "lots"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 10, "--itemsize", 4, *UNIFORM], ["multiple"]),
    (["schedule", "--algo", "ring", "--ranks", 4, "--count", 10 ** 20], ["--count", "<= 1125899906842624"]),
    (["schedule", "--algo", "ring", "--ranks", 100000, "--count", 1], ["transfers"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", -1, "--beta", B], ["--alpha"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", "inf", "--beta", B], ["--alpha"]),
    (["predict", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", A], ["--beta"]),
    (["predict", "--algo", "hierarchical", "--ranks", 6, "--gpus-per-node", 4, "--bytes", 8, *UNIFORM],
     ["does not divide"]),
    (["predict", "--algo", "direct", "--ranks", 4, "--gpus-per-node", 2, "--bytes", 8, *UNIFORM], ["gpus_per_node"]),
    (["simulate", "--algo", "ring", "--channels", 0, "--cluster", "h100-nvlink", "--bytes", 8], ["--channels"]),
    (["simulate", "--algo", "nvls", "--cluster", "a100-nvlink", "--bytes", 64], ["NVLink SHARP"]),
    (["simulate", "--algo", "nvls", "--cluster", "h100-nvlink", "--nodes", 2, "--bytes", 64], ["NVLSTree joins nodes"]),
    (["simulate", "--algo", "ring", "--cluster", "nope", "--bytes", 64], ["--cluster", "nope"]),
    (["simulate", "--algo", "ring", "--cluster", "h100-nvlink", "--ranks", 4, "--bytes", 64], ["8 GPUs"]),
    (["simulate", "--algo", "ring", "--nodes", 2, "--bytes", 64, *UNIFORM, "--ranks", 4], ["--nodes"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8], ["exactly one machine"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", A], ["--alpha and --beta"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8, *UNIFORM, "--cluster", "ib-400g"],
     ["exactly one machine"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--alpha", A, "--beta", 0], ["--beta"]),
    (["simulate", "--algo", "ring", "--ranks", 4, "--bytes", 8, "--cluster", "nope"], ["preset", "nope"]),
    (["simulate", "--algo", "ring", "--ranks", 12, "--bytes", 8, "--cluster", "h100-nvlink"], ["multiple"]),
    (["simulate", "--algo", "ring", "--ranks", 8, "--bytes", 8, "--cluster", "ib-400g", "--nodes", 2],
     ["16 GPUs", "--ranks is 8"]),
    (["simulate", "--algo", "hierarchical", "--ranks", 8, "--gpus-per-node", 4, "--bytes", 8, *UNIFORM],
     ["--alpha-inter"]),
    (["simulate", "--algo", "ring", "--ranks", 4, *UNIFORM], ["--bytes"]),
    (["simulate", "--ranks", 4, "--bytes", 8, *UNIFORM], ["--algo"]),
    (["simulate", "--algo", "ring", "--bytes", 8, *UNIFORM], ["--ranks"]),
    (["sweep", "--algos", "ring", "--ranks", 4], ["--alpha"]),
    (["sweep", "--algos", ",", "--ranks", 4, *UNIFORM], ["--algos"]),
    (["sweep", "--algos", "ring,nope", "--ranks", 4, *UNIFORM], ["unknown algorithm"]),
    (["check", "--ranks", 4, "--count", 8], ["--algo", "--file"]),
    (["check", "--algo", "lecture-nope", "--ranks", 4, "--count", 8], ["lecture"]),
    (["sweep", "--algos", "lecture-ring", "--ranks", 4, *UNIFORM], ["teaching"]),
    (["check", "--algo", "ring", "--ranks", 4, "--count", 8, "--file", "x.json"], ["not both"]),
    (["frobnicate"], ["invalid choice"]),
    ([], ["required"]),
]


@pytest.mark.parametrize("argv, words", BAD, ids=[" ".join(map(str, a[:3])) + f" #{i}" for i, (a, _) in
                                                   enumerate(BAD)])
def test_bad_arguments_give_one_line_and_exit_2(capsys, argv, words):
    assert_one_line_error(*run(capsys, *argv), *words)


TOPOLOGY_FILES = [
    ("t.json", "{not json", ["not valid JSON", "line 1"]),
    ("t.json", "[1, 2]", ["mapping"]),
    ("t.json", '{"nodes": 2}', ["gpus_per_node"]),
    ("t.json", '{"nodes": 1, "gpus_per_node": 4, "intra": {"alpha_s": -1, "beta_s_per_byte": 1e-11}, '
               '"inter": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-11}}', ["alpha"]),
    ("t.json", '{"nodes": 1, "gpus_per_node": 4, "intra": {"alpha": 1e-6, "beta": 1e-11}, '
               '"inter": {"alpha": 1e-6, "beta": 1e-11}}', ["intra", "alpha_s"]),
    ("t.yaml", "nodes: [1\n", ["invalid YAML"]),
    ("t.txt", "{}", ["extension"]),
    ("t.json", '{"nodes": 2, "gpus_per_node": 4, "intra": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-11}, '
               '"inter": {"alpha_s": 1e-6, "beta_s_per_byte": 1e-11}}', ["8 GPUs", "--ranks is 4"]),
]


@pytest.mark.parametrize("name, text, words", TOPOLOGY_FILES)
def test_malformed_topology_files(capsys, tmp_path, name, text, words):
    f = tmp_path / name
    f.write_text(text)
    assert_one_line_error(*run(capsys, "simulate", "--algo", "ring", "--ranks", 4, "--bytes", 64, "--cluster", f),
                          *words)


def test_missing_files(capsys, tmp_path):
    assert_one_line_error(*run(capsys, "simulate", "--algo", "ring", "--ranks", 4, "--bytes", 64,
                               "--cluster", tmp_path / "none.json"), "no such file")
    assert_one_line_error(*run(capsys, "check", "--file", tmp_path / "none.json"), "none.json")
    assert_one_line_error(*run(capsys, "show", tmp_path), str(tmp_path), "directory")
    assert_one_line_error(*run(capsys, "import-nccl-tests", tmp_path, "--label", "Ring/Simple",
                               "-o", tmp_path / "x.jsonl"), "directory")


def test_import_nccl_tests_env(capsys, tmp_path):
    log = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_tests_allreduce.txt"
    out = tmp_path / "x.jsonl"
    assert_one_line_error(*run(capsys, "import-nccl-tests", log, "--label", "Ring/LL", "--env", "MIXING",
                               "-o", out), "--env 'MIXING'", "NAME=VALUE")
    assert not out.exists()
    code, _, _ = run(capsys, "import-nccl-tests", log, "--label", "Ring/LL", "--env",
                     "NCCL_GRAPH_MIXING_SUPPORT=0", "-o", out)
    assert code == 0 and json.loads(out.read_text().splitlines()[0])["env"] == {"NCCL_GRAPH_MIXING_SUPPORT": "0"}


@pytest.mark.parametrize("text, words", [
    ("", ["s.json: not valid JSON"]),
    ("hello", ["s.json: not valid JSON", "line 1 column 1"]),
    ("[]", ["JSON object"]),
    ('{"ranks": 2, "count": 4}', ["steps"]),
    ('{"ranks": "2", "count": 4, "steps": []}', ["ranks"]),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0}]]}', ["steps[0][0]", "count"]),
    ('{"ranks": 2, "count": 4, "steps": [[{"src": 0, "dst": 1, "offset": 0, "count": 4, "op": "add"}]]}',
     ["op"]),
])
def test_schedule_file_that_is_not_one(capsys, tmp_path, text, words):
    f = tmp_path / "s.json"
    f.write_text(text)
    assert_one_line_error(*run(capsys, "check", "--file", f), *words)


FLAGS = ["--algo", "--ranks", "--count", "--bytes", "--alpha", "--beta", "--gamma", "--gpus-per-node", "--cluster",
         "--channels",
         "--chunks", "--slices", "--inter", "--cluster", "--cluster", "--file", "--nodes", "--itemsize", "--json",
         "--algos", "-b", "-e"]
VALUES = ["ring", "double-tree", "hierarchical", "nvls", "nope", "0", "1", "2", "3", "8", "-1", "1.5", "abc", "nan",
          "inf",
          "h100-nvlink", "a100x4-nvlink",
          "1e400", "64K", "", "5e-6", "1e-11", "ib-400g", "x.json", "lecture-ring", "--"]


@settings(max_examples=150, deadline=None)
@given(cmd=st.sampled_from(["schedule", "check", "predict", "simulate", "sweep", "junk"]),
       words=st.lists(st.sampled_from(FLAGS + VALUES), max_size=12))
def test_random_junk_arguments_never_raise(cmd, words):
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([cmd, *words])
        except SystemExit as e:
            rc = e.code
    assert rc in (0, 1, 2)
    if rc == 2:
        assert len(err.getvalue().splitlines()) == 1 and "Traceback" not in err.getvalue()


# ------------------------------------------------------------------ the console script
def test_console_script_subprocess():
    argv = ["--algo", "ring", "--ranks", "8", "--bytes", "1073741824", "--alpha", "5e-6", "--beta", "1e-11", "--json"]
    pred = subprocess.run([CLI, "predict", *argv], capture_output=True, text=True, check=True)
    sim = subprocess.run([CLI, "simulate", *argv], capture_output=True, text=True, check=True)
    assert json.loads(pred.stdout)["time_s"] == json.loads(sim.stdout)["time_s"]
    bad = subprocess.run([CLI, "predict", "--algo", "ring", "--ranks", "4", "--bytes", "1e400", "--alpha", "1",
                          "--beta", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1 and bad.stdout == ""


def test_sweep_plot_writes_a_png(capsys, tmp_path):
    png = tmp_path / "sweep.png"
    rc, out, err = run(capsys, "sweep", "--algos", "ring,double-tree", "--ranks", 8, "-b", "8", "-e", "1G",
                       "--alpha", "5e-6", "--beta", "1e-11", "--plot", str(png))
    assert rc == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    rc, out, err = run(capsys, "sweep", "--algos", "ring", "--ranks", 8, "--alpha", "5e-6", "--beta", "1e-11",
                       "--plot", str(tmp_path / "no" / "dir.png"))
    assert rc == 2 and err.count("\n") == 1 and "cannot write figure" in err and "no folder" in err


def test_fidelity_cli(capsys):
    f = Path(__file__).resolve().parents[2] / "data" / "h200x2" / "run2" / "fidelity"
    runner, ref = sorted(f.glob("runner_n400_r?.jsonl")), sorted(f.glob("nt_mpi_mix0_G20_r?.log"))
    rc, out, _ = run(capsys, "fidelity", "--runner", *runner, "--reference", *ref, "--max-bytes", "64K")
    assert rc == 0 and out.splitlines()[-1].startswith("14 sizes: ratio min") and "3/3" in out
    assert_one_line_error(*run(capsys, "fidelity", "--runner", *runner, "--reference", *ref, "--min-bytes", "1G"),
                          "share no sizes")
    assert_one_line_error(*run(capsys, "fidelity", "--runner", *runner, "--reference", *ref, "--max-bytes", "lots"),
                          "lots")


def test_list_presets_names_each_source(capsys):
    from collsim.machine.presets import PRESETS
    code, out, _ = run(capsys, "simulate", "--list-presets")
    assert code == 0
    lines = out.splitlines()
    for name, topo in PRESETS.items():
        i = next(k for k, line in enumerate(lines) if line.startswith(f"{name} "))
        assert lines[i + 1].strip().startswith("source: " + topo.source.split()[0])


def test_simulate_on_a_cluster_runs_the_schedule_nccl_runs(capsys):
    assert main(["simulate", "--cluster", "ib-400g", "--nodes", "2", "--bytes", "64M"]) == 0
    out = capsys.readouterr().out
    assert "NCCL chooses" in out and "busiest resource:" in out and "simulated" in out
    assert main(["simulate", "--cluster", "ib-400g", "--nodes", "2", "--bytes", "64M", "--algo", "nvlstree",
                 "--json"]) == 0
    sim = json.loads(capsys.readouterr().out)
    assert sim["predictor"] == "simulated_us" and sim["algo"] == "NVLSTree" and sim["chosen_by"] == "you"
    assert main(["predict-nccl", "--cluster", "ib-400g", "--nodes", "2", "--bytes", "64M", "--algo", "NVLSTree",
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert sim["time_s"] * 1e6 == pytest.approx(row["kernel_us"], rel=1e-6)     # one simulation under both
    assert main(["simulate", "--cluster", "h100-nvlink", "--bytes", "1M", "--algo", "ring", "--proto", "LL",
                 "--channels", "4", "--json"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert (forced["algo"], forced["proto"], forced["channels"]) == ("Ring", "LL", 4)
    for argv in (["--alpha", "1e-6", "--beta", "1e-10", "--ranks", "4", "--bytes", "1M", "--algo", "ring", "--proto",
                  "LL"], ["--cluster", "h100-nvlink"], ["--cluster", "h100-nvlink", "--bytes", "1M", "--slices", "2"]):
        assert main(["simulate", *argv]) == 2
        assert capsys.readouterr().err.count("\n") == 1
