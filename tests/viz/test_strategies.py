import matplotlib
import pytest

matplotlib.use("Agg")

from collsim.errors import CollsimError  # noqa: E402
from collsim.strategies.launch_overhead import LaunchModel, Op, pipeline  # noqa: E402
from collsim.strategies.overlap import BF16, MIB, Event, Layer, simulate  # noqa: E402
from collsim.viz.strategies import launch_figure, overlap_figure, stream_bars  # noqa: E402


def test_stream_bars_follow_the_events():
    layers = [Layer(f"L{i}", 1.0, (MIB,)) for i in range(3)]
    r = simulate(layers, lambda b: 2.0, bucket_cap_mb=1, hook=BF16.with_cast(0.1 / MIB), optimizer_s=0.5)
    bars = stream_bars(r.events)
    assert [k for _, _, k, _ in bars["comm"]] == ["allreduce", "decompress"] * 3
    assert [k for _, _, k, _ in bars["compute"]].count("backward") == 3
    assert bars["compute"][-1][2] == "optimizer"
    assert sum(d for _, d, _, _ in bars["comm"]) == pytest.approx(r.comm_s)
    with pytest.raises(CollsimError, match="unknown stream/kind"):
        stream_bars([Event("disk", "write", "x", 0.0, 1.0)])


def test_figures_draw_one_panel_each():
    layers = [Layer(f"L{i}", 1e-3, (MIB,)) for i in range(4)]
    res = {c: simulate(layers, lambda b: 5e-4, c) for c in (1, 100)}
    fig = overlap_figure(res)
    assert len(fig.axes) == 2 and "exposed communication" in fig.axes[0].get_title(loc="left")
    ops = [Op("mm", 8e-6, 20e-6), Op("allreduce", 37e-6, 42e-6)]
    fig2 = launch_figure({"eager": pipeline(ops, LaunchModel(42e-6)),
                          "graph": pipeline(ops, LaunchModel(42e-6), graph=True)})
    assert len(fig2.axes) == 2
    with pytest.raises(CollsimError):
        overlap_figure({})
