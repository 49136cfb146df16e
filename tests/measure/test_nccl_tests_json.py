"""collsim.measure.nccl_tests_json: nccl-tests' -J files as nccl-tests writes them (src/util.cu), read from the files
measured here on 2 x H200 (data/h200x2/fidelity), several in one paste, damaged ones named."""
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.measure.nccl_tests import import_nccl_tests
from collsim.measure.nccl_tests_json import read_nccl_tests_json

REAL_J = Path(__file__).resolve().parents[2] / "data" / "h200x2" / "fidelity"   # nccl-tests 2.17 -J, 2 x H200


def test_import_real_nccl_tests_json_files(tmp_path):
    """What nccl-tests writes (src/util.cu): nwrong as a double (0.0), one devices entry per process with hostname
    and device_info; two files pasted one after another are refused by the importer, a cut second one named."""
    m = import_nccl_tests(REAL_J / "nt_graph.json")
    assert m.meta["collective"] == "all_reduce" and m.meta["world_size"] == 2 and m.meta["timing"] == "graph"
    assert m.meta["hosts"] == ["vm"] and m.meta["nodes"] == 1 and m.meta["devices"][0]["gpu"] == "NVIDIA H200"
    assert len(m.records) == 60 and m.records[0]["wrong"] == 0 and m.time_us[0] == pytest.approx(6.144985)
    one, other = ((REAL_J / f"nt_{t}.json").read_text() for t in ("graph", "eager"))
    runs = read_nccl_tests_json(one + "\n" + other.replace('"vm"', '"vm2"'), "paste")
    assert [r.meta["hosts"] for r in runs] == [["vm"], ["vm2"]] and [r.meta["timing"] for r in runs] == [
        "graph", "eager"]
    both = tmp_path / "both.json"
    both.write_text(one + other)
    with pytest.raises(CollsimError, match=r"holds 2 nccl-tests -J documents"):
        import_nccl_tests(both)
    with pytest.raises(CollsimError, match=r"paste: nccl-tests -J output \(document 2, from line 2\): not valid JSON"):
        read_nccl_tests_json(one + "\n" + other[:900], "paste")
    with pytest.raises(CollsimError, match=r"results\[0\].out_of_place: field 'nwrong' must be a whole count, got 0.5"):
        read_nccl_tests_json(one.replace('"nwrong":0.000000', '"nwrong":0.5', 1), "paste")
