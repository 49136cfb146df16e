"""collsim.diagnose.causes: one record per cause, with its source; every label is detected on its synthetic
case with the evidence line shown (a line of the case's files)."""
import re

import pytest

from collsim.diagnose.causes import BY_LABEL, CAUSES, LABELS
from tests.diagnose.cases import SYNTHETIC, case, run

ISSUE_LABELS = ("sockets_instead_of_ib gdr_disabled acs_enabled nic_on_cpu_or_wrong_numa nic_link_rate "
                "too_few_channels nvls_disabled_or_unavailable two_node_tree_anomaly p2p_disabled_or_shm "
                "wrong_interface slow_or_bad_node iommu cpu_binding nccl_version_regression measurement_error "
                "expected_performance").split()


def test_the_table_holds_the_issues_labels_each_with_a_fix_a_settling_file_and_a_source():
    assert list(LABELS) == ISSUE_LABELS and len(BY_LABEL) == len(CAUSES)
    for c in CAUSES:
        assert re.match(r"https://(docs\.nvidia\.com/deeplearning/nccl/|github\.com/\S+/issues/\d+)", c.source), c.label
        assert c.fix and c.settle[1] and c.title
        for p in c.patterns + c.counter:
            re.compile(p.regex)
            assert (p.weight > 0) == (p in c.patterns)
        if c.effect:
            assert 0 <= c.effect[0] < c.effect[1] <= 1


def test_every_label_has_a_synthetic_case():
    assert sorted(case(d)["label"] for d in SYNTHETIC) == sorted(LABELS)


@pytest.mark.parametrize("folder", SYNTHETIC, ids=[d.name for d in SYNTHETIC])
def test_each_label_is_detected_first_with_its_evidence_line(folder):
    c, report, rank = run(folder)
    assert rank == 1, [(x["label"], x["score"]) for x in report["causes"][:3]]
    top = report["causes"][0]
    assert top["evidence"] and top["fix"] and top["source"] == BY_LABEL[c["label"]].source
    texts = {f"{p.name}:{n}": line.strip() for p in folder.iterdir() for n, line in
             enumerate(p.read_text().splitlines(), 1)}
    shown = [e for e in top["evidence"] if e["where"] in texts]
    if c["label"] != "expected_performance":   # its evidence is the bands, not a line
        assert shown and all(e["line"] == texts[e["where"]][:200] for e in shown)
