"""collsim.widgets.diagnose_box: paste or upload, diagnose, see the report and its figure; errors are one line
in the status."""
import datetime

import pytest

pytest.importorskip("ipywidgets")

from collsim.widgets.diagnose_box import DiagnoseBox  # noqa: E402
from tests.diagnose.cases import DATA  # noqa: E402


def test_pasted_text_and_uploads_are_diagnosed():
    box = DiagnoseBox((DATA / "synthetic" / "p2p_disabled_or_shm" / "a100.log").read_text())
    report = box.run()
    assert report is box.report and report["causes"][0]["label"] == "p2p_disabled_or_shm"
    assert box.status.value == "verdict: below expected"
    assert "1. p2p_disabled_or_shm" in box.text.value and box.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    box.paste.value = ""
    content = (DATA / "synthetic" / "slow_or_bad_node" / "pairs.txt").read_bytes()
    box.upload.value = ({"name": "pairs.txt", "type": "", "size": len(content), "content": content,
                         "last_modified": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)},)
    assert box.run()["causes"][0]["label"] == "slow_or_bad_node"


def test_errors_are_one_line_and_keep_the_last_report():
    box = DiagnoseBox("nothing to read here")
    assert box.run() is None and "nothing to diagnose" in box.status.value and box.report is None
    box = DiagnoseBox("", cluster="h100-nvlink", measured="1G=fast")
    assert box.run() is None and "could not convert string to float: &#x27;fast&#x27;" in box.status.value
    box.measured.value = "1G=100"
    assert box.run()["verdict"] == "below_expected"
    box.cluster.value = "nowhere"
    assert box.run() is None and "not a preset" in box.status.value and box.report["verdict"] == "below_expected"


def test_messages_name_the_boxes_not_cli_flags():
    from collsim.widgets import plain

    box = DiagnoseBox("")
    assert box.run() is None and "--" not in box.status.value
    assert "type a busbw in the measured box" in plain(box.status.value)
    box = DiagnoseBox("", measured="1G=5")                      # no GPU named: no machine to compare with
    assert box.run()["machine"]["why_not"].endswith("give --cluster")
    shown = plain(box.text.value)
    assert "name a cluster in the cluster box" in shown and "--cluster" not in shown and "--measured" not in shown
    assert plain("<b style='color:#b00'>the timeline&#x27;s 60 µs</b>") == "the timeline's 60 µs"
