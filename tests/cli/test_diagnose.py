"""collsim diagnose through the CLI: text and --json, and bad, partial, binary, empty and truncated files:
a named skip or one line, never a traceback."""
import json
import os

import pytest

import collsim.cli as cli
from tests.diagnose.cases import DATA, files


@pytest.fixture
def run(monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ["collsim.cli.diagnose"])

    def call(*argv):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as e:   # argparse refuses a bad argument by exiting
            code = e.code
        out = capsys.readouterr()
        return code, out.out, out.err
    return call


def test_text_and_json(run):
    case = files(DATA / "synthetic" / "gdr_disabled")
    code, out, err = run("diagnose", *case)
    assert code == 0 and err == "" and "1. gdr_disabled" in out and "verdict: below" in out
    code, out, _ = run("diagnose", *case, "--json")
    res = json.loads(out)
    assert res["verdict"] == "below_expected" and res["causes"][0]["label"] == "gdr_disabled"
    assert set(res["causes"][0]) >= {"label", "score", "evidence", "fix", "source"}
    assert {"band", "measured_busbw_GBps", "expected_busbw_GBps", "range_GBps", "nccl_busbw_GBps"} <= \
        set(res["bands"][-1])
    code, out, _ = run("diagnose", *files(DATA / "synthetic" / "expected_performance"), "--json")
    assert json.loads(out)["causes"][0]["label"] == "expected_performance"


def test_measured_and_cluster_without_files(run):
    code, out, _ = run("diagnose", "--cluster", "ib-400g", "--measured", "1G=40", "4G=41", "--json")
    res = json.loads(out)
    assert code == 0 and res["verdict"] == "below_expected" and len(res["bands"]) == 1
    assert res["bands"][0]["points"] == 2


@pytest.mark.parametrize("argv, message", [
    ([], "nothing to diagnose: give files or --measured"),
    (["--measured", "1G"], "expected SIZE=BUSBW_GBps"), (["--measured", "1G=fast"], "is not a number"),
    (["--measured", "1G=-3"], "must be >= 0"), (["--measured", "1Q=3"], "bad size"),
    (["--measured", "0=5"], "the size must be at least 1 byte"),
    (["--measured", "1G=5", "--cluster", "nowhere"], "not a preset"),
])
def test_bad_arguments_are_one_line(run, argv, message):
    code, out, err = run("diagnose", *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_and_partial_files_are_named_and_skipped(run, tmp_path):
    good = DATA / "synthetic" / "gdr_disabled" / "run.out"
    text = good.read_text()
    (tmp_path / "cut.out").write_text(text[:text.index("16777216") + 40])   # cut inside a row
    (tmp_path / "bin").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "empty").write_text("")
    (tmp_path / "prose").write_text("my cluster is slow, please help\n")
    (tmp_path / "bad.json").write_text('{"results": [1, 2')
    os.mkfifo(tmp_path / "fifo")   # opened, it would block for ever: never opened
    code, out, err = run("diagnose", tmp_path / "cut.out", tmp_path / "bin", tmp_path / "empty", tmp_path / "prose",
                         tmp_path / "bad.json", tmp_path / "missing", tmp_path / "fifo", tmp_path)
    assert code == 0 and "Traceback" not in out + err
    skipped = [line for line in out.splitlines() if line.startswith("skipped: ")]
    names = ("bin", "empty", "prose", "bad.json", "missing", "fifo")
    assert [s.split(": ")[1] for s in skipped] == [f"file {tmp_path / n}" for n in names] + [f"file {tmp_path}"]
    assert "not a regular file" in skipped[-2]
    assert "truncated" in out and "gdr_disabled" in out
    for bad in (("bin", "empty"), ("fifo",), ("",)):
        code, out, err = run("diagnose", *(tmp_path / n for n in bad))
        assert code == 2 and err.startswith("collsim: error: nothing to diagnose: file ") and len(err.splitlines()) == 1


def test_plot_writes_a_figure_and_never_over_an_input(run, tmp_path):
    log = DATA / "synthetic" / "gdr_disabled" / "run.out"
    code, out, _ = run("diagnose", log, "--plot", tmp_path / "d.png")
    assert code == 0 and (tmp_path / "d.png").stat().st_size > 10_000
    code, _, err = run("diagnose", log, "--plot", tmp_path / "d.xyz")
    assert code == 2 and "unknown format" in err
    copy = tmp_path / "run.png"
    copy.write_text(log.read_text())
    code, _, err = run("diagnose", copy, "--plot", copy)
    assert code == 2 and len(err.splitlines()) == 1
