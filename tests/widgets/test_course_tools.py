"""The library behind notebooks 05 and 08: the alpha-beta fit and its residuals, torchrun's identity
against the lecture's, the profiler-trace reader, and the executed-HTML helpers."""
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.cost import closed_form
from collsim.errors import CollsimError
from collsim.fit.alpha_beta import alpha_beta_fit, switches
from collsim.fit.compare import attach_probe, term_shares
from collsim.fit.points import load_points
from collsim.fitted.params import load_params
from collsim.launch import function_source, identity_table, problems, torchrun_env
from collsim.strategies.trace import overlap, trace_lanes

DATA = Path(__file__).resolve().parents[2] / "data" / "h200x2"


def _points():
    pts = load_points(sorted((DATA / "runner").glob("nvlink_*_graph.jsonl")))
    attach_probe(pts, DATA / "runner" / "nvlink_default_eager.jsonl")
    return pts


def test_alpha_beta_recovers_an_exact_line_and_scores_held_out_sizes():
    from collsim.fit.points import Point
    from collsim.fitted.layout import Config
    sizes = [2 ** k for k in range(3, 31)]
    times = closed_form("ring", 2, np.array(sizes, float), 5e-6, 1 / 300e9) * 1e6
    pts = [Point(s, t, "Ring", "Simple", Config(2), 0, {}) for s, t in zip(sizes, times)]
    e = alpha_beta_fit(pts)["Ring/Simple"]
    assert e["alpha_s"] == pytest.approx(5e-6, rel=1e-6) and e["rate_GBps"] == pytest.approx(300, rel=1e-6)
    assert e["test"]["n"] == 14 and e["test"]["median_abs_rel_error"] < 1e-9
    assert sum(e["held_out"]) == 14 and e["held_out"][0]       # 8 B = 2^3: an odd power, held out
    with pytest.raises(CollsimError):
        alpha_beta_fit([])


def test_alpha_beta_on_h200_misses_most_where_nccl_switches_protocol():
    ab = alpha_beta_fit(_points())
    choice = ab["NCCL's choice"]
    assert switches(choice) == [(2 << 20, "Ring/LL", "Ring/Simple")]
    assert choice["worst"][0] == 2 << 20 and choice["worst"][1] < -0.35
    assert 0.05 < choice["test"]["median_abs_rel_error"] < 0.10
    assert ab["Ring/LL"]["test"]["median_abs_rel_error"] < choice["test"]["median_abs_rel_error"]


def test_term_shares_sum_to_one_and_follow_nccls_protocol():
    pts = [p for p in _points() if p.algo is None]
    sizes, shares = term_shares(load_params(DATA / "params.json"), pts)
    assert len(sizes) == 30 and np.allclose(sum(shares.values()), 1.0)
    ll = sizes < (2 << 20)
    assert shares["protocol"][ll].max() > 0                                              # LL's flags below the switch
    assert shares["protocol"][~ll].max() == pytest.approx(0.0, abs=1e-12)              # Simple has none


def test_torchrun_identity_and_the_lectures():
    env = torchrun_env(2, 4)
    assert [e["RANK"] for e in env] == [str(i) for i in range(8)] and {e["WORLD_SIZE"] for e in env} == {"8"}
    assert problems(identity_table(1, 8)) == []
    lines = problems(identity_table(2, 4))
    assert "claimed by 2 processes" in lines[0] and "!= 8 processes" in lines[1]
    src = function_source(Path(__file__).resolve().parents[2] / "runners" / "first_steps.py", "who_am_i")
    assert 'os.environ["RANK"]' in src and "--local_rank" not in src.split('"""')[-1]
    with pytest.raises(CollsimError):
        function_source(__file__, "no_such_function")


def test_trace_lanes_and_overlap(tmp_path):
    ev = [{"ph": "X", "name": "autograd::engine::evaluate_function: AddmmBackward0", "ts": 100, "dur": 50, "tid": 1},
          {"ph": "X", "name": "c10d::allreduce_", "ts": 120, "dur": 2, "tid": 1},
          {"ph": "X", "name": "gloo:all_reduce", "ts": 130, "dur": 40, "tid": 2},       # 20 of 40 us in backward
          {"ph": "X", "name": "aten::mm", "ts": 100, "dur": 5, "tid": 1}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    lanes = trace_lanes(path)
    assert [len(lanes[k]) for k in ("backward", "launch", "allreduce")] == [1, 1, 1]
    assert lanes["backward"][0][0] == 0.0 and lanes["backward"][0][2] == "AddmmBackward0"
    ov = overlap(lanes)
    assert ov["allreduce_us"] == 40 and ov["during_backward_us"] == 20 and ov["fraction"] == 0.5
    path.write_text(json.dumps({"traceEvents": ev[:1]}))
    with pytest.raises(CollsimError):
        trace_lanes(path)
    path.write_text("not json")
    with pytest.raises(CollsimError):
        trace_lanes(path)


def test_notebooks_html_refuses_an_empty_selection(tmp_path, capsys):
    from collsim.widgets import notebooks_html
    assert notebooks_html.main([str(tmp_path / "out"), "--only", "99"]) == 2
    assert "notebooks_html: error: no notebooks" in capsys.readouterr().err
