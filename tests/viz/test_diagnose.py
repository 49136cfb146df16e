"""collsim.viz.diagnose: the picture of a diagnose report (measured points, expected curve inside its range,
NCCL's model), also for runs without a prediction."""
import matplotlib

from collsim.diagnose import diagnose
from collsim.viz.diagnose import diagnose_figure
from tests.diagnose.cases import DATA, files

matplotlib.use("Agg")


def test_figure_of_a_shortfall_and_of_a_run_without_prediction(tmp_path):
    report = diagnose(files(DATA / "synthetic" / "gdr_disabled"))
    fig = diagnose_figure(report, tmp_path / "d.png", lines={"8 x 400 Gb/s": 400.0})
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["run.out: simulated_us (collsim expects)", "run.out: nccl_us (NCCL's model)", "run.out: measured",
                      "8 x 400 Gb/s"]
    measured = ax.get_lines()[2].get_ydata()
    assert list(measured) == [p["measured"] for p in sorted(report["points"], key=lambda p: p["bytes"])]
    assert ax.get_title() == "verdict: below expected" and (tmp_path / "d.png").stat().st_size > 10_000
    pairs = diagnose(files(DATA / "synthetic" / "measurement_error"), "ib-400g")
    assert diagnose_figure(pairs).axes[0].get_lines()[0].get_label().endswith("(collsim expects)")
    none = diagnose(files(DATA / "synthetic" / "slow_or_bad_node"), measured=[(1 << 30, 40.0)])
    (line,) = diagnose_figure(none).axes[0].get_lines()
    assert line.get_label() == "--measured: measured (no prediction)" and list(line.get_ydata()) == [40.0]
