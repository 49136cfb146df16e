"""collsim fit / compare / explain through the CLI entry point."""
import json
from pathlib import Path

import pytest

import collsim.cli as cli
from tests.model_data import write_run

cli_data = (Path(__file__).resolve().parents[2] / "data" / "h200x2").joinpath


@pytest.fixture
def run(monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["collsim.cli.fit", "collsim.cli.compare"])

    def call(*argv):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as e:  # argparse refuses a bad argument by exiting
            code = e.code
        out = capsys.readouterr()
        return code, out.out, out.err
    return call


def test_fit_compare_explain(tmp_path, run):
    a, b = write_run(tmp_path / "a.jsonl", 1), write_run(tmp_path / "b.jsonl", 2)
    params = tmp_path / "p.json"
    code, out, _ = run("fit", a, "-o", params, "--holdout", "odd")
    assert code == 0 and "held out (odd)" in out and "nvlink/Ring/Simple/2r1n/graph" in out
    code, out, _ = run("compare", "--params", params, "--measured", b, "--json", "--algo", "Ring", "--proto", "Simple")
    res = json.loads(out)
    for model in ("model", "nccl"):
        assert set(res[model]) >= {"median_abs_rel_error", "p90_abs_rel_error"}
    assert res["model"]["median_abs_rel_error"] < 0.03 < res["nccl"]["median_abs_rel_error"]
    code, out, _ = run("compare", "--params", params, "--measured", b, "--plot", tmp_path / "c.png")
    assert code == 0 and "nccl_us" in out and (tmp_path / "c.png").exists()
    code, out, _ = run("explain", "--params", params, "--algo", "ring", "--proto", "simple", "--ranks", 2,
                       "--sizes", "8", "4G")
    lines = out.splitlines()
    assert code == 0 and "latency" in lines[1] and "bandwidth" in lines[2] and "nvlink util" in lines[0]


def test_explain_with_a_reused_buffer_uses_the_committed_warm_factor(run):
    """run2/params.json: Ring LL with one reused slice (the runner's default) is faster at 16 MiB
    (warm 0.74: the buffer stays in L2) and the same at 64 MiB; nccl-tests' 20 slices are cold."""
    params = cli_data("run2/params.json")
    times = {}
    for k in ("0", "1", "20"):
        code, out, _ = run("explain", "--params", params, "--algo", "Ring", "--proto", "LL", "--ranks", 2,
                           "--sizes", "16M", "64M", "--reused-slices", k)
        assert code == 0
        times[k] = [float(line.split()[1]) for line in out.splitlines()[1:]]
    assert times["1"][0] < 0.85 * times["0"][0] and times["1"][1] == times["0"][1]
    assert times["20"] == times["0"]


def test_fit_run_holdout_and_nccl_tests_label(tmp_path, run):
    a, b = (write_run(tmp_path / f"{n}.jsonl", seed, timings=("graph",)) for n, seed in (("a", 1), ("b", 2)))
    code, out, _ = run("fit", a, b, "-o", tmp_path / "p.json", "--holdout", "run")
    assert code == 0 and "(run)" in out


def _shifted(src, dst, env=None, add_us=0.0):
    """A copy of runner file ``src`` with its meta env replaced and every time + ``add_us``."""
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    for rec in lines:
        if rec["type"] == "meta" and env is not None:
            rec["env"] = env
        for k in ("time_us", "time_us_mean", "time_us_min"):
            if k in rec:
                rec[k] += add_us
    dst.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return dst


def test_compare_warns_on_unknown_harness_and_takes_overhead_from(tmp_path, run):
    """Graph records timed with NCCL's default graph mixing carry the harness key
    "torch-graph-mixing"; params fitted without its overhead warn, --overhead-from A/B files
    (bare runner vs the harness, same sizes) supply it."""
    a, b = (write_run(tmp_path / f"{n}.jsonl", seed, timings=("graph",)) for n, seed in (("a", 1), ("b", 2)))
    run("fit", a, "-o", tmp_path / "p.json")
    code, out, _ = run("compare", "--params", tmp_path / "p.json", "--measured", b)
    assert code == 0 and "warning: no per-call overhead known for torch-graph-mixing" in out
    bare = _shifted(b, tmp_path / "bare.jsonl", env={"NCCL_GRAPH_MIXING_SUPPORT": "0"})
    mixed = _shifted(b, tmp_path / "mixed.jsonl", add_us=5.0)
    code, out, _ = run("compare", "--params", tmp_path / "p.json", "--measured", b, "--json",
                       "--overhead-from", bare, mixed)
    res = json.loads(out)
    assert code == 0 and res["unknown_harness"] == [] and res["unused_overheads"] == []
    # the measured 5 us is applied: the same points without it are predicted 5 us faster
    cfg = res["configs"][0]
    _, out0, _ = run("compare", "--params", tmp_path / "p.json", "--measured", b, "--json")
    base = json.loads(out0)["configs"][0]
    assert cfg["config"] == base["config"]
    extra = [x - y for x, y in zip(cfg["model_us"], base["model_us"])]
    assert extra == pytest.approx([5.0] * len(cfg["sizes"]), rel=0.05)
    # an A/B whose harness no measured point has is named, not silently dropped
    code, out, _ = run("compare", "--params", tmp_path / "p.json", "--measured", bare, "--overhead-from", bare, mixed)
    assert code == 0 and "warning: --overhead-from measured torch-graph-mixing, which no measured point uses" in out


@pytest.mark.parametrize("argv,msg", [
    (["fit", "missing.jsonl", "-o", "p.json"], "no such file"),
    (["fit", "BAD", "-o", "p.json"], "cannot tell algorithm/protocol"),
    (["fit", "BAD", "-o", "p.json", "--label", "Ring/LL"], "-J output: not valid JSON"),
    (["compare", "--params", "BAD", "--measured", "BAD"], "not valid JSON"),
    (["explain", "--params", "P", "--algo", "Star", "--proto", "LL", "--ranks", "2"], "unknown name"),
    (["explain", "--params", "P", "--algo", "Ring", "--proto", "LL", "--ranks", "3", "--nodes", "2"], "divisible"),
    (["explain", "--params", "P", "--algo", "Ring", "--proto", "LL", "--ranks", "2", "--sizes", "lots"], "bad size"),
    (["fit", "A", "-o", "p.json", "--holdout", "timing"], "eager and graph"),
    (["explain", "--params", "P", "--algo", "Ring", "--proto", "LL", "--ranks", "2", "--reused-slices", "-1"],
     "slices"),
])
def test_bad_input_one_line_exit_2(tmp_path, run, argv, msg):
    (tmp_path / "BAD").write_text("{not json\n")
    write_run(tmp_path / "A", 1, timings=("graph",))
    (tmp_path / "A.jsonl").write_text((tmp_path / "A").read_text())
    run("fit", tmp_path / "A.jsonl", "-o", tmp_path / "P")
    argv = [str(tmp_path / x) if x in ("BAD", "P") else (str(tmp_path / "A.jsonl") if x == "A" else x) for x in argv]
    code, out, err = run(*argv)
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_fit_prints_each_clocks_cost_from_two_call_counts(tmp_path, run):
    """run6 (committed): the runner's sweep and -n 400 file, nccl-tests' -G 20 and -G 100 logs."""
    d = Path(__file__).resolve().parents[2] / "data" / "h200x2" / "run6"
    ab = [d / "runner" / "nvlink_default_graph.jsonl", d / "start" / "gated_n400.jsonl",
          d / "nccl-tests" / "graph_default.jsonl", d / "start" / "nt_G100.jsonl"]
    code, out, _ = run("fit", d / "runner" / "nvlink_Ring_LL_graph.jsonl", "-o", tmp_path / "p.json",
                       "--overhead-from", *ab)
    assert code == 0 and "clock cost per measurement: nccl-tests-mpi 75.0 us" in out
    assert json.loads((tmp_path / "p.json").read_text())["start_us"]["nccl-tests-mpi"] == pytest.approx(75.0)
