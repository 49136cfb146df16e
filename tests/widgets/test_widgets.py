"""Tests of collsim.widgets: pure logic, and widgets driven by setting .value (no browser)."""
import datetime
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.errors import CollsimError
from collsim.measure import result_record
from collsim.widgets import cost_explorer as ce, exploration as xp, measured as mv, schedule_explorer as se
from collsim.widgets.exercise import check_answer


# ------------------------------------------------------------------ pure logic
def test_topology_for_fills_nodes_or_says_why_not():
    t = xp.topology_for("ib-400g", 16)
    assert (t.nodes, t.gpus_per_node) == (2, 8)
    one = xp.topology_for("h200-nvlink", 4)
    assert (one.nodes, one.gpus_per_node) == (1, 4)
    with pytest.raises(CollsimError, match="multiple of 8"):
        xp.topology_for("ib-400g", 12)
    with pytest.raises(CollsimError, match="unknown topology"):
        xp.topology_for("nope", 4)


def test_explore_builds_checks_and_simulates():
    ex = xp.explore("hierarchical", 16, 1 << 20, "ib-400g")
    assert ex.report.ok and ex.schedule.ranks == 16
    assert ex.result.time_s > 0 and "each contribution exactly once" in ex.verdict
    assert ex.states.complete() and ex.states.distinct.shape == (17, 16, ex.states.n_chunks)
    with pytest.raises(CollsimError):
        xp.explore("ring", 65, 1024, "h200-nvlink")


def test_closed_series_are_closed_forms_on_one_or_two_levels():
    from collsim.cost import closed_form, rail_ring

    sizes = ce.size_grid(10, 20)
    assert sizes[0] == 1024 and sizes[-1] == 1 << 20 and np.all(np.diff(sizes) > 0)
    intra, inter = (2e-6, 1e-12), (8e-6, 2e-11)
    one = ce.closed_series(sizes, 1, 8, intra, inter)          # one node of 8: the intra link only
    assert list(one) == list(ce.FLAT)
    assert one["ring"][3] == pytest.approx(closed_form("ring", 8, int(sizes[3]), *intra))
    two = ce.closed_series(sizes, 2, 8, intra, inter, nics_per_node=2)
    assert list(two) == list(ce.CURVES)
    assert two["ring"][0] == pytest.approx(closed_form("ring", 16, int(sizes[0]), *inter))
    assert two[ce.RAILS][-1] == pytest.approx(rail_ring(16, int(sizes[-1]), 8, 2, *intra, *inter))
    assert two["hierarchical"][0] == pytest.approx(closed_form(      # 4 GPUs share each of the 2 NICs
        "hierarchical", 16, int(sizes[0]), *intra, gpus_per_node=8, alpha_inter=8e-6, beta_inter=4 * 2e-11))
    assert list(ce.closed_series(sizes, 4, 1, intra, inter)) == list(ce.FLAT)   # one GPU a node: all NICs
    odd = ce.size_grid(3, 5)                                     # 11 and 23 bytes: not whole floats
    assert 11 in odd and np.allclose(ce.closed_series(odd, 1, 8, intra, inter)["double-tree"],
                                     closed_form("double-tree", 8, odd, *intra))
    with pytest.raises(CollsimError, match="NICs per node"):
        ce.closed_series(sizes, 2, 4, intra, inter, nics_per_node=8)
    with pytest.raises(CollsimError):
        ce.size_grid(20, 10)


@pytest.mark.parametrize("preset", ["h200-nvlink", "a100x4-nvlink"])
def test_valid_ranks_are_exactly_the_rank_counts_that_build_and_simulate(preset):
    """Every P the explorer's slider offers builds, checks and simulates; a sample of the others is
    refused (P that do not fill nodes; NVLS beyond one node or on a machine without NVLink SHARP)."""
    from collsim.algorithms import ALGORITHMS

    for algo in ALGORITHMS:
        valid = xp.valid_ranks(algo, preset)
        for P in valid:
            ex = xp.explore(algo, P, 1024, preset)
            assert ex.result.time_s > 0 and ex.states.complete(), (algo, P)
        for P in sorted({3, 6, 9, 12, 17, 63, 64} - set(valid)):
            with pytest.raises(CollsimError):
                xp.explore(algo, P, 1024, preset).result
    assert xp.valid_ranks("ring", preset)[-1] == 64
    assert xp.valid_ranks("nvls", "h200-nvlink") == list(range(2, 9)) and xp.valid_ranks("nvls", "a100x4-nvlink") == []


def test_check_answer_lines():
    assert "not answered" in check_answer("q", None, 3.0)
    assert check_answer("q", 3.01, 3.0).endswith("correct")
    assert "not quite" in check_answer("q", 4.0, 3.0)
    assert "not quite" in check_answer("q", "3", 3.0)
    assert check_answer("q", "larger", "larger").endswith("correct")
    assert "4 is 33% above the answer (tolerance 2%); try again" in check_answer("q", 4.0, 3.0)
    assert "is 50% below" in check_answer("q", 1.5, 3.0)
    assert check_answer("q", 1.5, 3.0, why=[(1.5, "half: one direction only")]).endswith(
        ": half: one direction only; try again")
    assert "'smaller': the crossover grows with P" in check_answer("q", "smaller", "larger",
                                                                    why=[("smaller", "the crossover grows with P")])


def test_check_schedules_names_the_failing_P_and_step():
    from collsim.algorithms import build_schedule
    from collsim.algorithms.lecture import lecture_ring
    from collsim.widgets.exercise import check_schedules

    assert check_schedules("q", lambda P: None).endswith("not answered yet (complete the function and run this "
                                                         "cell again)")
    assert check_schedules("q", lambda P: build_schedule("ring", P, 24)).endswith(": correct")
    wrong = check_schedules("q", lambda P: lecture_ring(P, 24) if P > 2 else build_schedule("ring", P, 24))
    assert wrong.startswith("q: not quite: P=3: WRONG: step ")
    slow = check_schedules("q", lambda P: build_schedule("ring", P, 24), steps=lambda P: P - 1)
    assert "P=2: a correct AllReduce, but in 2 steps where the task asks for 1" in slow


# ------------------------------------------------------------------ ScheduleExplorer
def test_schedule_explorer_follows_its_controls():
    ex = se.ScheduleExplorer("ring", 4, 1 << 20, "h200-nvlink")
    assert ex.step.max == ex.state.schedule.n_steps == 6
    first = ex.grid_img.value
    ex.step.value = 2                         # one convention: after 2 of 6 steps, arrows of step 3
    assert ex._grid.step == 2 and ex.grid_img.value != first
    assert "after 2 of 6 steps; arrows: step 3," in ex.grid_caption.value and ex._grid.ax.get_title() == ""
    assert "shaded: step 3 of 6" in ex.time_caption.value
    timeline_before = ex.time_img.value
    ex.step.value = 3
    assert ex.time_img.value != timeline_before
    ex.step.value = 6
    assert "after 6 of 6 steps: every rank holds the sum" in ex.grid_caption.value
    assert ex.play.interval == 700
    ex.speed.value = 100                      # Play's speed
    assert ex.play.interval == 100
    ex.ranks.value = 8
    assert ex.state.schedule.ranks == 8 and ex.step.value == 0 and ex.step.max == 14
    ex.algo.value = "double-tree"
    assert ex.state.schedule.name.startswith("double-tree") or "double-tree" in ex.status.value
    assert ex.state.report.ok


def test_schedule_explorer_caches_configurations_and_backgrounds():
    ex = se.ScheduleExplorer("ring", 8, 1 << 20, "h200-nvlink")
    first_state, first_picture = ex.state, ex.grid_img.value
    draws = ex._grid_png.full_draws, ex._time_png.full_draws
    ex.size.value = 1 << 22                   # same P and chunks: the grid background is reused
    assert ex._grid_png.full_draws == draws[0] and ex._time_png.full_draws == draws[1] + 1
    assert ex.state.result.time_s > first_state.result.time_s
    ex.size.value = 1 << 20                   # back: exploration and both backgrounds from the caches
    assert ex.state is first_state and ex.grid_img.value == first_picture
    assert (ex._grid_png.full_draws, ex._time_png.full_draws) == (draws[0], draws[1] + 1)
    ex.algo.value = "direct"                  # one step, P(P-1) arrows
    ex.ranks.value = 64
    assert ex.state.schedule.n_transfers == 64 * 63 and ex.step.max == 1
    assert len(ex._grid.arrows.get_paths()) == 256 and "256 of them drawn" in ex.grid_caption.value
    ex.step.value = 1
    assert "every rank holds the sum" in ex.grid_caption.value


def test_schedule_explorer_offers_only_valid_ranks_and_survives_what_cannot_run():
    from traitlets import TraitError

    ex = se.ScheduleExplorer("ring", 8, 1 << 20, "ib-400g")
    assert list(ex.ranks.options) == xp.valid_ranks("ring", "ib-400g")
    picture = ex.grid_img.value
    with pytest.raises(TraitError):          # 12 does not fill nodes of 8: the slider has no such value
        ex.ranks.value = 12
    assert ex.state.schedule.ranks == 8 and ex.grid_img.value == picture and ex.error == ""
    ex.ranks.value = 16
    assert ex.error == "" and ex.state.schedule.ranks == 16 and ex._grid.gpus_per_node == 8   # node lines
    ex.ranks.value = 64
    ex.algo.value = "nvls"                    # one node only: P moves to the nearest it allows
    assert ex.ranks.options == tuple(range(2, 9)) and ex.ranks.value == 8 and ex.state.schedule.ranks == 8
    ex.preset.value = "a100-nvlink"           # no NVLink SHARP: a message, the last picture stays
    shown = ex.state
    assert "NVLink SHARP" in ex.error and "NVLink SHARP" in ex.status.value and ex.state is shown
    ex.step.value = 1                         # ... and the widget still answers
    assert ex._grid.step == 1
    ex.algo.value = "double-tree"
    assert ex.error == "" and ex.state.topology.name.startswith("a100") and ex.state.report.ok


def test_schedule_explorer_in_a_kernel_loop_shows_grid_first_then_timeline():
    """Inside a running asyncio loop (a Jupyter kernel) a new configuration shows its grid at
    once and simulates on the loop's next tick; a configuration left before then is not simulated."""
    import asyncio

    async def drive():
        ex = se.ScheduleExplorer("ring", 8, 1 << 20, "h200-nvlink")
        old_timeline = ex.time_img.value
        ex.ranks.value = 16
        new = ex.state
        assert new.schedule.ranks == 16 and not new.simulated and ex._timeline_state is not new
        assert "simulating" in ex.time_caption.value and ex.time_img.value == old_timeline
        ex.ranks.value = 32                   # moved on before the tick: 16 is never simulated
        await asyncio.sleep(0)
        assert not new.simulated and ex.state.simulated and ex._timeline_state is ex.state
        assert "simulated" in ex.status.value and ex.time_img.value != old_timeline
        assert ex._timeline.schedule is ex.state.schedule

    asyncio.run(drive())


# ------------------------------------------------------------------ CostExplorer
def test_cost_explorer_updates_curves_and_crossovers():
    ex = ce.CostExplorer(nodes=8, gpus_per_node=8)
    assert ex.ranks == 64
    view = ex.views["time"]
    line, hier = view.lines["ring"], view.lines["hierarchical"]
    before = (list(ex.crossings), ex.image.value, line.get_ydata().copy(), hier.get_ydata().copy())
    ex.latency.value = 30.0                   # intra-node latency: only hierarchical uses it
    assert view.lines["ring"] is line
    assert np.allclose(line.get_ydata(), before[2]) and not np.allclose(hier.get_ydata(), before[3])
    assert ex.image.value != before[1]
    ex.inter_latency.value = 100.0            # flat algorithms pay the inter-node link
    assert not np.allclose(line.get_ydata(), before[2])
    assert [c.size for c in ex.crossings] != [c.size for c in before[0]]
    ex.kind.value = "busbw"
    assert ex.views["busbw"].lines["ring"].get_ydata().max() <= 46.0      # one NIC's rate
    assert ex.views["busbw"].lines[ce.RAILS].get_ydata().max() <= 8 * 46.0   # all 8 NICs
    ex.gpus_per_node.value = 4                # P = 8 x 4; the NIC slider follows GPUs per node
    assert ex.ranks == 32 and ex.nics.max == 4 and ex.nics.value == 4 and ex.error == ""
    ex.nodes.value = 1                        # one node: no inter-node curves
    assert set(ex.series) == set(ce.FLAT) and "one node" in ex.machine.value
    ex.sizes.value = (12, 12)                 # squeezed: widened, never empty
    assert ex.sizes.value == (12, 13) and ex.error == ""


def test_cost_explorer_error_leaves_it_usable(monkeypatch):
    ex = ce.CostExplorer(nodes=4, gpus_per_node=8)
    picture, series = ex.image.value, ex.series

    def broken(*args, **kwargs):
        raise CollsimError("something went wrong")
    monkeypatch.setattr(ce, "closed_series", broken)
    ex.latency.value = 10.0
    assert ex.error == "something went wrong" and "something went wrong" in ex.status.value
    assert ex.image.value == picture and ex.series is series
    ex.kind.value = "busbw"                   # the toggle still redraws (the last valid curves)
    assert ex.image.value != picture
    monkeypatch.undo()
    ex.latency.value = 3.0
    assert ex.error == "" and ex.series is not series


# ------------------------------------------------------------------ MeasuredVsPredicted
def _synthetic_run(path, algo, proto, scale):
    """A runner-style JSONL file whose times are ``scale`` x the model's own prediction."""
    from collsim.fitted.layout import Config
    from collsim.fitted.model import predict
    from collsim.fitted.params import default_params

    sizes = [2**k for k in range(3, 25, 3)]
    pred = predict(default_params(), algo, proto, sizes, Config(2))
    with open(path, "w") as f:
        f.write(json.dumps({"type": "meta", "world_size": 2, "nodes": 1, "timing": "graph"}) + "\n")
        for s, t in zip(sizes, pred):
            rec = result_record(s, s // 4, "float32", float(t) * scale, 2, 0, algo=algo, proto=proto,
                                timing="graph")
            f.write(json.dumps(rec) + "\n")
    return sizes


def test_measured_vs_predicted_on_synthetic_files(tmp_path):
    from collsim.fitted.params import default_params, save_params

    a, b = tmp_path / "ring_ll.jsonl", tmp_path / "tree_simple.jsonl"
    sizes = _synthetic_run(a, "Ring", "LL", 1.10)       # model 10% fast on this one
    _synthetic_run(b, "Tree", "Simple", 1.0)             # exact on this one
    params = tmp_path / "params.json"
    save_params(default_params(), params)
    w = mv.MeasuredVsPredicted([a, b], params)
    labels = list(w.config.options)
    assert labels == [c["config"] for c in w.result["configs"]] and len(labels) == 2
    w.config.value = next(x for x in labels if x.startswith("Ring/LL/"))
    c = w.comparison
    assert c["sizes"] == sizes and c["config"] == w.config.value
    assert np.allclose(np.array(c["model_us"]) / c["measured_us"], 1 / 1.10)
    assert "median |error| 9.1%" in w.status.value
    measured = w.panel.lines[0]["measured"]                # the panel's artists, moved in place
    assert np.allclose(measured.get_ydata(), c["measured_us"])
    err = w.panel.lines[0]["model_err"].get_ydata()
    assert np.allclose(err, 100 * (1 / 1.10 - 1))         # signed error strip
    picture = w.image.value
    w.config.value = next(x for x in labels if x.startswith("Tree/Simple/"))
    assert w.panel.lines[0]["measured"] is measured and len(w.panel.lines) == 1
    assert np.allclose(w.panel.lines[0]["model_err"].get_ydata(), 0.0) and w.image.value != picture
    assert "median |error| 0.0%" in w.status.value


def test_measured_vs_predicted_shows_nccls_choice_too(tmp_path):
    from collsim.fitted.params import default_params, save_params

    p = tmp_path / "x.jsonl"
    with open(p, "w") as f:
        f.write(json.dumps({"type": "meta", "world_size": 2}) + "\n")
        f.write(json.dumps(result_record(1024, 256, "float32", 10.0, 2, 0)) + "\n")
    params = tmp_path / "params.json"
    save_params(default_params(), params)
    w = mv.MeasuredVsPredicted([p], params)
    assert list(w.config.options) == [w.comparison["config"]]
    assert w.comparison["config"].startswith("default/default/2r1n/")
    assert np.isfinite(w.comparison["model_us"]).all()    # predicted with the pair NCCL would pick


def test_measured_vs_predicted_offers_every_bundled_run_and_survives_bad_files(tmp_path):
    data = Path(__file__).resolve().parents[2] / "data" / "h200x2"
    runs = mv.bundled_runs(data)
    assert len(runs) >= 12 and all(r.files and r.params.exists() for r in runs.values())
    assert {"run 1: runner, CUDA graphs", "run 4: nccl-tests, CUDA graphs", "run 6: runner, CUDA graphs"} <= set(runs)
    w = mv.MeasuredVsPredicted(data=data)
    assert list(w.run.options) == list(runs) and w.run.value == "run 1: runner, CUDA graphs"
    first = w.image.value
    w.run.value = "run 4: nccl-tests, CUDA graphs"
    assert w.result["unknown_harness"] == []               # its nccl-tests term measured from run 4's A/B
    assert "run 4: nccl-tests" in w.status.value and w.image.value != first
    sizes, shares = w.shares                               # where time goes: shares per size sum to 1
    assert len(sizes) == len(w.comparison["sizes"])
    assert np.allclose(sum(shares.values()), 1.0)
    assert shares["bandwidth"][-1] > shares["bandwidth"][0] and shares["latency"][0] > shares["latency"][-1]
    shown, picture = w.comparison, w.image.value
    bad = tmp_path / "notes.txt"
    bad.write_text("not a measurement\n")
    assert not w.load_files([bad])                          # one line in the status ...
    assert "could not show notes.txt" in w.status.value and w.comparison is shown and w.image.value == picture
    assert not w.load_files([tmp_path / "missing.jsonl"])
    w.config.value = w.config.options[-1]                   # ... and the widget still works
    assert w.comparison["config"] == w.config.options[-1] and "could not" not in w.status.value
    good = tmp_path / "ring_ll.jsonl"
    _synthetic_run(good, "Ring", "LL", 1.0)
    assert w.load_files([good]) and w.config.options == (w.comparison["config"],)
    assert "your files" in w.status.value


def test_measured_vs_predicted_upload(tmp_path):
    from collsim.fitted.params import default_params, save_params

    good = tmp_path / "ring_ll.jsonl"
    _synthetic_run(good, "Ring", "LL", 1.0)
    params = tmp_path / "params.json"
    save_params(default_params(), params)
    w = mv.MeasuredVsPredicted([good], params)
    w.upload.value = ({"name": "up.jsonl", "type": "", "size": 0, "last_modified": datetime.datetime(2026, 1, 1),
                       "content": memoryview(good.read_bytes())},)
    assert w.comparison["config"].startswith("Ring/LL/") and "could not" not in w.status.value
    w.upload.value = ({"name": "bad.log", "type": "", "size": 0, "last_modified": datetime.datetime(2026, 1, 1),
                       "content": memoryview(b"garbage")},)
    assert "could not show bad.log" in w.status.value and w.comparison["config"].startswith("Ring/LL/")


# ------------------------------------------------------------------ ChunksExplorer
def test_chunks_explorer_pipelines_on_a_fixed_time_axis():
    from collsim.algorithms.tree import tree_chunks
    from collsim.cost import closed_form
    from collsim.widgets import chunks_explorer as cx

    w = cx.ChunksExplorer("binary-tree", 15, 8 << 20, chunks=1)
    assert w.policy.value == w.result.policy == "fair"                     # the simulator's default
    t1 = w.result.time_s
    xlim = w.ax_time.get_xlim()
    picture = w.image.value
    w.chunks.value = 8
    assert w.ax_time.get_xlim() == xlim and w.image.value != picture      # the 1-chunk axis stays
    assert w.result.time_s < t1
    form = closed_form("binary-tree", 15, 8 << 20, 5e-6, 1e-11, chunks=8)
    fair = w.result.time_s
    # shared fairly: no bound (Algorithm.exact), below the form here, and never faster than its busiest port
    assert max(w.result.resource_busy_s.values()) <= fair < form
    assert "8 chunk(s): 20 steps up, 21 down; simulated (fair ports)" in w.status.value
    assert w.result.schedule.n_steps == 20 + 21                          # U(k) = 2k + 4, D(k) = U(k) + 1 on 15 ranks
    w.policy.value = "schedule"                                            # the closed forms' policy
    assert w.result.policy == "schedule" and w.result.time_s <= form * (1 + 1e-12) and w.result.time_s != fair
    assert "(schedule ports)" in w.status.value and w.ax_time.get_xlim() == xlim
    w.policy.value = "fair"
    c = w.curve
    assert c["time_s"][c["best"] - 1] == c["time_s"].min() and c["nccl"] == tree_chunks(8 << 20) == 16
    assert "fastest with" in w.status.value and "NCCL's 512 KiB chunks: 16" in w.status.value
    w.algo.value = "double-tree"                     # the double tree: each tree half the data
    assert w.curve["nccl"] == tree_chunks(4 << 20) and w.result.schedule.name == "double-tree"
    with pytest.raises(CollsimError, match="contention policy 'first-come' is not one of fair, schedule"):
        cx.ChunksExplorer(policy="first-come")


def test_step_slider_is_recreated_when_its_range_grows_and_flush_settles_the_timeline():
    """ipywidgets 8's slider keeps its first range for the End key: a larger range needs a new slider
    (placed where the old one was, still linked to Play); ``flush`` simulates what waits for the loop."""
    from collsim.widgets.schedule_explorer import ScheduleExplorer

    ex = ScheduleExplorer("ring", 4, 1 << 20, "h200-nvlink")
    first = ex.step
    assert first.max == 6 and ex._controls.children[1] is first
    ex.preset.value = "ib-400g"
    ex.ranks.value = 16
    assert ex.step is not first and ex.step.max == 30 and ex._controls.children[1] is ex.step
    ex.step.value = 3
    assert ex.play.value == 3 and ex._grid.step == 3
    second = ex.step
    ex.ranks.value = 8                                   # a smaller range keeps the slider
    assert ex.step is second and ex.step.max == 14
    ex.flush()
    assert "simulating" not in ex.status.value and "fixed cost per call" in ex.status.value


def test_nics_slider_is_recreated_when_gpus_per_node_grows():
    from collsim.widgets.cost_explorer import CostExplorer

    ex = CostExplorer(nodes=2, gpus_per_node=8, nics_per_node=8)
    first = ex.nics
    ex.gpus_per_node.value = 16
    assert ex.nics is not first and ex.nics.max == 16 and ex._machine_row.children[2] is ex.nics
    ex.nics.value = 16
    assert "16 NIC(s) per node" in ex.machine.value
    second = ex.nics
    ex.gpus_per_node.value = 4
    assert ex.nics is second and ex.nics.max == 4 and ex.nics.value == 4
