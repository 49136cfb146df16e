"""collsim demo (collsim/cli/demo.py): the quick-start job of README, and README's copy of its output."""
import re
from pathlib import Path

from collsim.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def test_demo_prints_both_tables_and_writes_the_figure(capsys, tmp_path):
    out = tmp_path / "demo.png"
    assert main(["demo", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Predicted AllReduce time (us), event simulation on ib-400g" in text
    assert "fastest" in text and "all 105 points" in text
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    # README shows this output (rows elided with "..."): every row it shows is printed as shown
    shown = re.search(r"What `bash scripts/demo.sh` prints.*?```\n(.*?)```", README.read_text(), re.S).group(1)
    rows = [line for line in shown.splitlines() if line.strip() and line != "..."]
    assert len(rows) >= 5
    assert [r for r in rows if r not in text.splitlines()] == []
    last = text.splitlines()[-3] if "wrote" in text else text.splitlines()[-1]
    model, nccl = re.findall(r"([\d.]+)% /", last)[:2]
    assert f"**{model}% median error for collsim's fitted model (`model_us`), {nccl}% for NCCL's own (`nccl_us`)**" \
        in README.read_text()


def test_demo_unknown_preset_is_one_line(capsys):
    assert main(["demo", "--out", "", "--cluster", "no-such-preset"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "no-such-preset" in err
