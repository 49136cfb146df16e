"""runners/schedule_bench.py under torchrun with the gloo backend on CPU (2 and 4 processes), and
its bad arguments (one line, exit 2, before torch loads).

Each torchrun start costs seconds, so one launch runs every registered algorithm at once.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collsim.algorithms import ALGORITHMS
from collsim.cli import main as collsim_main
from collsim.core.checker import check
from collsim.core.schedule import Schedule
from collsim.machine.topology import Topology
from collsim.measure import load
from collsim.measure.executed import build, schedule_hash
from collsim.simulate import simulate

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "runners" / "schedule_bench.py"
sys.path.insert(0, str(REPO / "runners"))
import schedule_bench  # noqa: E402

SIZES = (4, 20, 4096)  # one element (fewer than the ranks), five (uneven chunks), 1024
# Reduce to rank 0 in two messages between one pair in one step, then broadcast beside a copy of
# rank 0 to itself.
HAND = [[(1, 0, 0, 6, "reduce"), (1, 0, 6, 4, "reduce")],
        [(0, 1, 0, 10, "copy"), (0, 0, 2, 3, "copy")]]


def torchrun(nproc, *args):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           str(BENCH), "--backend", "gloo", *map(str, args)]
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


@pytest.mark.slow
@pytest.mark.parametrize("nproc", [2, 4])
def test_every_registered_algorithm_gives_the_sum_and_the_lectures_ring_is_reported_wrong(tmp_path, nproc):
    out = tmp_path / "all.jsonl"
    p = torchrun(nproc, "--algo", "all,lecture-ring", "--sizes", ",".join(map(str, SIZES)), "-w", "0", "-n", "1",
                 "--out", out)
    m = load(out)
    by = {(r["algo"], r["size"]): r for r in m.records}
    names = [n for n, a in ALGORITHMS.items() if not (a.switches or a.network)] + ["lecture-ring"]   # no switch on gloo
    assert sorted(by) == sorted(("collsim:" + n, s) for n in names for s in SIZES)
    params = m.meta["schedule"]["algorithms"]
    assert params["hierarchical"] == {"gpus_per_node": nproc} and params["ring"] == {} and len(params) == len(names)
    for (algo, size), r in by.items():
        s = build(algo.split(":")[1], nproc, size // 4, 4, params[algo.split(":")[1]])
        assert r["schedule_sha256"] == schedule_hash(s) and (r["steps"], r["transfers"]) == (s.n_steps, s.n_transfers)
        assert r["executor"] == "collsim" and r["time_us"] > 0 and r["ranks"] == nproc
        assert r["wrong"] == (0 if check(s).ok else nproc * size // 4), algo  # the lecture's ring: every element
    wrong = [by["collsim:lecture-ring", s]["wrong"] for s in SIZES]
    if nproc == 2:  # right on two ranks
        assert wrong == [0, 0, 0] and "schedule_bench: wrong" not in p.stderr
    else:
        assert wrong == [4, 20, 4096]
        assert ("schedule_bench: wrong: collsim:lecture-ring at 20 B: 20 elements (over the ranks) differ from the "
                "exact sum (collsim check: step 2 of 6, transfer 1 of 4: rank 0 -> 3 elements [0, 5): reduce counts "
                "the contribution of rank(s) 0 twice)") in p.stderr
    assert "\r" not in p.stderr and "size/s" not in p.stderr   # no progress bar into a log file
    meta = m.meta
    assert meta["runner"] == "schedule_bench" and meta["world_size"] == nproc and meta["timing"] == "host"
    assert meta["algo"] is None and meta["with_native"] is False and meta["rounds"] == 1


@pytest.mark.slow
def test_a_hand_written_schedule_beside_gloos_all_reduce_and_its_simulation(tmp_path, capsys):
    s = Schedule.from_steps(2, 10, HAND, name="hand")
    assert check(s).ok
    (tmp_path / "hand.json").write_text(s.to_json())
    out = tmp_path / "hand.jsonl"
    torchrun(2, "--schedule", tmp_path / "hand.json", "--with-native", "--rounds", "2", "-w", "1", "-n", "2",
             "--out", out)
    m = load(out)
    native, hand = m.records
    assert (native["executor"], native["algo"], hand["executor"], hand["algo"]) == ("native", None, "collsim",
                                                                                  "collsim:hand")
    assert native["size"] == hand["size"] == 40 and native["wrong"] == hand["wrong"] == 0
    assert m.meta["schedule"] == {"file": str(tmp_path / "hand.json"), "sha256": schedule_hash(s), "name": "hand"}
    assert hand["schedule_sha256"] == schedule_hash(s) and m.meta["rounds"] == 2 and m.meta["with_native"] is True
    assert collsim_main(["compare", str(out), "--alpha", "1e-6", "--beta", "1e-9", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert row["simulated_us"] == pytest.approx(simulate(s, Topology.uniform(2, 1e-6, 1e-9)).time_s * 1e6)
    assert (row["measured_us"], row["native_us"]) == (hand["time_us"], native["time_us"])


def schedule_file(tmp_path, ranks, steps, name, count=8):
    path = tmp_path / f"{name}.json"
    path.write_text(Schedule.from_steps(ranks, count, steps).to_json())
    return path


def test_a_bad_argument_is_one_line_exit_2_before_torch_loads(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(
        "raise ImportError('torch loaded before the arguments were checked')")
    for rank in ("0", "3"):   # every rank says it (torchrun may stop rank 0 first)
        env = {**os.environ, "RANK": rank, "WORLD_SIZE": "4", "PYTHONPATH": str(tmp_path)}
        p = subprocess.run([sys.executable, str(BENCH), "--algo", "double-tree", "--slices", "2"],
                           capture_output=True, text=True, timeout=60, env=env)
        assert p.returncode == 2 and p.stdout == ""
        assert p.stderr == f"schedule_bench: error: rank {rank}: no algorithm of double-tree takes 'slices'\n"


@pytest.mark.parametrize("args, message", [
    ([], "one of the arguments --algo --schedule is required"),
    (["--algo", "spiral"], "unknown algorithm 'spiral'; choose from ring,"),
    (["--algo", "hierarchical", "--gpus-per-node", "3"], "gpus_per_node 3 does not divide ranks 4"),
    (["--algo", "ring", "--timing", "graph", "--backend", "gloo"], "--timing graph needs --backend nccl"),
    (["--algo", "ring", "--rounds", "0"], "--rounds must be 1 to 1073741824"),
    (["--algo", "ring", "--rounds", str(2**40)], "--rounds must be 1 to 1073741824 (collsim.inputs.MAX_CALLS)"),
    (["--algo", "ring", "--channels", "65"], "channels must be <= 64 (NCCL's MAXCHANNELS"),
    (["--schedule", "{good}", "--out", "{good}"], "cannot write --out"),
    (["--algo", "ring", "-e", "12Q"], "bad size '12Q'"),
    (["--algo", "ring", "--schedule", "{good}"], "argument --schedule: not allowed with argument --algo"),
    (["--schedule", "{eight}"], "eight at 32 B: the schedule is for 8 ranks, the run has 4"),
    (["--schedule", "{switch}"],
     "step 2 of 2, transfer 1 of 1: 1 -> 4 goes through a switch endpoint (ranks are 0..3)"),
    (["--schedule", "{outside}"], "step 1 of 1, transfer 1 of 1: element range [4, 12) outside the buffer [0, 8)"),
    (["--schedule", "{good}", "--sizes", "8"], "--schedule FILE fixes the size (its count x itemsize)"),
    (["--schedule", "{good}", "--slices", "2"], "--slices applies to --algo, not to --schedule"),
    (["--schedule", "{good}", "--dtype", "bfloat16"], "itemsize 4 is not --dtype bfloat16's 2 bytes"),
    (["--schedule", "{missing}"], "missing.json: no such file"),
    (["--schedule", "{notjson}"], "notjson.json: not valid JSON (line 1 column 1"),
])
def test_bad_arguments_one_line_exit_2(tmp_path, monkeypatch, capsys, args, message):
    files = {"good": schedule_file(tmp_path, 4, [[(0, 1, 0, 8, "reduce")]], "good"),
             "eight": schedule_file(tmp_path, 8, [[(0, 1, 0, 8, "reduce")]], "eight"),
             "switch": schedule_file(tmp_path, 4, [[(0, 1, 0, 8, "reduce")], [(1, 4, 0, 8, "reduce")]], "switch"),
             "outside": schedule_file(tmp_path, 4, [[(0, 1, 4, 8, "reduce")]], "outside"),
             "missing": tmp_path / "missing.json", "notjson": tmp_path / "notjson.json"}
    files["notjson"].write_text("ring, please")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(SystemExit) as e:
        schedule_bench.parse_args([a.format(**files) for a in args])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert err.startswith("schedule_bench: error: ") and message in err, err
