"""collsim.measure.executed and ``collsim compare EXECUTED.jsonl``: the schedule behind each record
of runners/schedule_bench.py, proved by its hash, set beside its simulation and the native
all_reduce (files written here as the runner writes them; the runner itself: test_schedule_bench_gloo)."""
import json

import pytest

from collsim.algorithms import ALGORITHMS, build_schedule
from collsim.cli import main
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError
from collsim.fit.points import load_points
from collsim.machine.topology import Topology
from collsim.measure import result_record, write_jsonl
from collsim.measure.executed import (
    algorithm_names,
    algorithm_params,
    build,
    executed_schedule,
    parameters,
    schedule_hash,
)
from collsim.simulate import simulate

A, B = 5e-6, 1e-10
PARAMS = {"ring": {"slices": 2}, "double-tree": {"chunks": 3}}


def executed_file(path, world=4, sizes=(64, 4096), params=PARAMS, native=True, timing="host"):
    """A file as schedule_bench writes it: meta with "schedule", per size native then schedules."""
    records = [{"type": "meta", "harness": "collsim", "backend": "gloo" if timing == "host" else "nccl",
                "timing": timing, "world_size": world, "nodes": 1, "schedule": {"algorithms": params}}]
    for size in sizes:
        if native:
            records.append(result_record(size, size // 4, "float32", 100.0 + size / 64, world, 0, inplace=True,
                                         algo=None, proto=None, timing=timing, executor="native"))
        for name, p in params.items():
            s = build(name, world, size // 4, 4, p)
            records.append(result_record(size, size // 4, "float32", 200.0 + size / 32, world, 0, inplace=True,
                                         algo="collsim:" + name, proto=None, timing=timing, executor="collsim",
                                         schedule_sha256=schedule_hash(s), steps=s.n_steps, transfers=s.n_transfers))
    write_jsonl(path, records)
    return path


def run(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_hash_names_one_schedule():
    s = build_schedule("ring", 4, 100)
    assert schedule_hash(s) == schedule_hash(Schedule.from_json(s.to_json(indent=2)))  # canonical, not textual
    assert len({schedule_hash(build_schedule("ring", 4, n, slices=k)) for n in (100, 101) for k in (1, 2)}) == 4


def test_build_schedules_keyword_parameters_are_the_runners_options():
    p = parameters()
    assert {"slices": int, "chunks": int, "gpus_per_node": int, "inter": str}.items() <= p.items()


def test_algorithm_names_and_their_parameters():
    runnable = [n for n, a in ALGORITHMS.items() if not (a.switches or a.network)]
    assert algorithm_names("all") == runnable
    names = algorithm_names("double-tree, all,lecture-ring")
    assert names == ["double-tree"] + [a for a in runnable if a != "double-tree"] + ["lecture-ring"]
    with pytest.raises(CollsimError, match="unknown algorithm 'spiral'; choose from ring, .* or all"):
        algorithm_names("ring,spiral")
    got = algorithm_params(["ring", "double-tree", "hierarchical", "lecture-ring"], {"slices": 2}, 4)
    assert got == {"ring": {"slices": 2}, "double-tree": {}, "hierarchical": {"slices": 2, "gpus_per_node": 4},
                   "lecture-ring": {}}
    with pytest.raises(CollsimError, match="no algorithm of double-tree, direct takes 'slices'"):
        algorithm_params(["double-tree", "direct"], {"slices": 2}, 4)


def test_a_record_gives_back_the_schedule_that_ran_or_says_it_cannot(tmp_path):
    f = executed_file(tmp_path / "x.jsonl")
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    meta, tree = lines[0], next(r for r in lines if r.get("algo") == "collsim:double-tree" and r["size"] == 4096)
    assert executed_schedule(meta, tree).to_dict() == build_schedule("double-tree", 4, 1024, chunks=3).to_dict()
    meta["schedule"]["algorithms"]["double-tree"] = {"chunks": 4}  # not what ran
    with pytest.raises(CollsimError, match=r"tree \{'chunks': 4\} rebuilt by this collsim is not the schedule "
                                           "that ran at 4096 B"):
        executed_schedule(meta, tree)


def test_a_schedule_file_is_read_beside_the_measurements_and_checked(tmp_path, monkeypatch):
    s = Schedule.from_steps(2, 8, [[(0, 1, 0, 8, "reduce")], [(1, 0, 0, 8, "copy")]], name="hand")
    (tmp_path / "hand.json").write_text(s.to_json())
    f = tmp_path / "h.jsonl"
    write_jsonl(f, [{"type": "meta", "world_size": 2, "schedule": {"file": "hand.json", "sha256": schedule_hash(s)}},
                    result_record(32, 8, "float32", 50.0, 2, 0, algo="collsim:hand", executor="collsim",
                                  schedule_sha256=schedule_hash(s))])
    monkeypatch.chdir("/")
    meta, rec = (json.loads(x) for x in f.read_text().splitlines())
    assert executed_schedule(meta, rec, tmp_path).to_dict() == s.to_dict()
    (tmp_path / "hand.json").write_text(Schedule.from_steps(2, 8, [[(0, 1, 0, 8, "reduce")]], name="hand").to_json())
    with pytest.raises(CollsimError, match="schedule file hand.json is not the schedule that ran at 32 B"):
        executed_schedule(meta, rec, tmp_path)


def test_compare_sets_each_schedule_beside_its_simulation_and_the_native_all_reduce(tmp_path, capsys):
    f = executed_file(tmp_path / "x.jsonl")
    rc, out, err = run(capsys, "compare", f, "--alpha", A, "--beta", B, "--json")
    assert rc == 0, err
    rows = json.loads(out)["rows"]
    assert [(r["algo"], r["bytes"]) for r in rows] == [("collsim:double-tree", 64), ("collsim:double-tree", 4096),
                                                      ("collsim:ring", 64), ("collsim:ring", 4096)]
    topo = Topology.uniform(4, A, B)
    for r in rows:
        name = r["algo"].split(":")[1]
        expect = simulate(build_schedule(name, 4, r["bytes"] // 4, **PARAMS[name]), topo).time_s * 1e6
        assert r["simulated_us"] == pytest.approx(expect, rel=1e-12)
        assert r["measured_us"] == 200.0 + r["bytes"] / 32 and r["native_us"] == 100.0 + r["bytes"] / 64
    rc, out, err = run(capsys, "compare", f)
    assert rc == 2
    assert "give exactly one machine: --cluster SPEC, or --alpha and --beta" in err
    rc, out, _ = run(capsys, "compare", f, "--cluster", "h200-nvlink", "--gpus-per-node", 4)
    lines = out.splitlines()
    assert rc == 0 and lines[1].startswith(f"# {f} simulated on h200-nvlink: 1 node(s) x 4 GPU(s), intra ")
    assert lines[2].split()[:3] == ["collsim:double-tree", "4", "64"]
    assert lines[2].split()[-3:] == ["101.00", "2.000", "0"]


def test_nccl_fits_keep_the_native_all_reduce_and_leave_the_schedules_out(tmp_path):
    points = load_points([executed_file(tmp_path / "x.jsonl", timing="eager")])
    assert [(p.size, p.algo, p.time_us) for p in points] == [(64, None, 101.0), (4096, None, 164.0)]


@pytest.mark.parametrize("argv, words", [
    (["compare"], "compare needs --params PARAMS.json or --cluster SPEC with --measured FILE... (NCCL "
                  "measurements), or executed-schedule"),
    (["compare", "X", "--params", "P", "--alpha", "1", "--beta", "1"], "not both"),
    (["compare", "--params", "P", "--measured", "M", "--cluster", "h200-nvlink"], "--cluster goes with --measured"),
    (["compare", "--params", "P", "--measured", "M", "--alpha", "1", "--beta", "1"], "go with executed-schedule files"),
    (["compare", "data/h200x2/run2/runner/nvlink_Ring_Simple_graph.jsonl", "--alpha", "1e-6", "--beta", "1e-9"],
     "not a file of executed collsim schedules"),
])
def test_compare_errors_are_one_line(capsys, argv, words):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and words in err, err


def test_a_record_without_its_ranks_is_compared_on_the_runs_world_size(tmp_path, capsys):
    """The record's "ranks" is optional (the meta's world_size stands for it): once an internal error."""
    f = executed_file(tmp_path / "x.jsonl")
    lines = f.read_text().splitlines()
    recs = [json.loads(line) for line in lines]
    for r in recs[1:]:
        r.pop("ranks", None)
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    rc, out, err = run(capsys, "compare", f, "--alpha", A, "--beta", B, "--json")
    assert rc == 0, err
    assert {r["ranks"] for r in json.loads(out)["rows"]} == {4}


def test_a_record_without_its_algorithm_is_named_in_one_line(tmp_path, capsys):
    """Found by tests/test_fuzz_inputs.py: a collsim record without "algo" was an internal KeyError."""
    f = executed_file(tmp_path / "x.jsonl")
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    next(r for r in recs[1:] if r.get("executor") == "collsim").pop("algo")
    f.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    rc, out, err = run(capsys, "compare", f, "--alpha", A, "--beta", B)
    assert rc == 2 and len(err.splitlines()) == 1 and "the meta lists no such algorithm" in err, err
