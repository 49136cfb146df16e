"""collsim.measure.inspector: NCCL Inspector's JSON objects (NVIDIA/nccl plugins/profiler/inspector/README.md, its
two output examples, in tests/data/diagnose/pastes/) as measurements, at nccl-tests' sizes and busbw."""
import json
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.measure.inspector import is_inspector, read_inspector
from collsim.measure.nccl_tests import import_nccl_tests

README = Path(__file__).resolve().parents[1] / "data" / "diagnose" / "pastes" / "nccl-inspector_readme.json"


def objects():
    return [json.loads(part) for part in README.read_text().replace("}\n{", "}\n\x00{").split("\x00")]


def test_readme_examples_keep_the_plugins_own_busbw():
    """AllReduce's size is its message; ReduceScatter's is the per-rank message times the ranks (nccl-tests' size
    column), so busbw from the time equals what the plugin computed (inspector.cc inspectorComputeOpBw)."""
    text = README.read_text()
    assert is_inspector(text) and not is_inspector('{"results": []}')
    ar, rs = read_inspector(text, "readme")
    assert (ar.meta["collective"], ar.meta["world_size"], ar.meta["hosts"]) == ("all_reduce", 8, ["example-hostname"])
    assert ar.meta["harness"] == "inspector" and rs.meta["collective"] == "reduce_scatter"
    assert ar.records[0]["size"] == 17179869184 and rs.records[0]["size"] == 8 * 2147483648
    assert ar.records[0]["busbw_GBps"] == pytest.approx(485.119099, rel=1e-6)
    assert rs.records[0]["busbw_GBps"] == pytest.approx(366.134533, rel=1e-6)


def test_a_call_takes_its_slowest_rank_and_a_size_the_median_call():
    one = objects()[0]
    docs = []
    for sn, times in ((1, (100, 140)), (2, (90, 95)), (3, (300, 120))):
        for rank, t in enumerate(times):
            docs.append({**one, "header": {**one["header"], "rank": rank},
                         "coll_perf": {**one["coll_perf"], "coll_sn": sn, "coll_exec_time_us": t,
                                       "coll_msg_size_bytes": 1 << 20}})
    docs.append({**one, "coll_perf": {**one["coll_perf"], "coll": "AllGatherV"}})
    docs.append({**one, "p2p_perf": {"p2p": "Send"}, "coll_perf": None})
    (m,) = read_inspector("\n".join(json.dumps(d) for d in docs), "runs")
    assert m.records[0]["time_us"] == 140 and m.records[0]["calls"] == 3   # slowest ranks 140, 95, 300
    assert m.skipped == ["1 Inspector objects of AllGatherV, a collective collsim does not model"]


def test_damaged_objects_are_named():
    text = README.read_text()
    with pytest.raises(CollsimError, match=r"cut: NCCL Inspector output \(document 2, from line 25\): not valid JSON"):
        read_inspector(text[:-200], "cut")
    bad = objects()[0]
    bad["coll_perf"]["coll_exec_time_us"] = "fast"
    with pytest.raises(CollsimError, match=r"bad: Inspector object 1: coll_perf: field 'coll_exec_time_us'"):
        read_inspector(json.dumps(bad), "bad")
    del bad["header"]
    with pytest.raises(CollsimError, match=r"Inspector object 1: .*'header'"):
        read_inspector(json.dumps(bad), "bad")


def test_the_nccl_tests_importer_points_inspector_output_to_diagnose():
    with pytest.raises(CollsimError, match=r"NCCL Inspector output, not nccl-tests': collsim diagnose reads it"):
        import_nccl_tests(README, "default")
