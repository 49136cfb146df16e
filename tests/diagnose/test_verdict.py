"""collsim.diagnose.verdict: bands, the expected range and its tolerance, the verdict, the ranking; and the
public cases: the maintainer's named cause in the first three for most of them."""
import statistics
from pathlib import Path

import pytest

from collsim.diagnose import diagnose
from collsim.diagnose.verdict import KNOWN_GOOD, TOLERANCE
from collsim.measure.bundled import data_path
from tests.diagnose.cases import PUBLIC, run

WORST = {"small": 1.26, "mid": 1.21, "large": 1.09}   # the module docstring's figures


def test_the_tolerance_covers_every_healthy_run_and_the_docstring_says_its_worst():
    worst = {}
    for name in KNOWN_GOOD:
        report = diagnose([data_path(*name.split("/"))])
        assert report["verdict"] == "as_expected", (name, report["bands"])
        for b in report["bands"]:
            dev = max(b["ratio"], 1 / b["ratio"])
            worst[b["band"]] = max(worst.get(b["band"], 0), dev)
            assert b["verdict"] == "as expected" and dev < 1 + TOLERANCE[b["band"]]
    assert {k: round(v, 2) for k, v in worst.items()} == WORST
    assert all(WORST[b] - 1 >= TOLERANCE[b] / 2.5 for b in WORST)   # not a range that nothing could leave
    import collsim.diagnose.verdict as verdict
    docs = (Path(__file__).resolve().parents[2] / "docs" / "diagnose.md").read_text()
    for band, v in WORST.items():
        assert f"{v:.2f}x {band}" in " ".join(verdict.__doc__.split()) and f"{v:.2f}x" in docs


def test_bands_ranges_and_nccl_model_beside(tmp_path):
    report = diagnose([data_path("public", "L01_h100x8_1n_ring_together.jsonl")])
    small, mid, large = report["bands"]
    assert [b["band"] for b in (small, mid, large)] == ["small", "mid", "large"]
    assert small["sizes"] == "8-32K" and large["sizes"] == "64M-8G"
    lo, hi = large["range_GBps"]
    assert lo == pytest.approx(large["expected_busbw_GBps"] / 1.2) and hi == pytest.approx(large["expected_busbw_GBps"]
                                                                                          * 1.2)
    assert 300 < large["measured_busbw_GBps"] < 400 and large["nccl_busbw_GBps"] > 0
    pts = [p for p in report["points"] if p["bytes"] >= 64 << 20]
    assert large["ratio"] == pytest.approx(statistics.median(p["measured"] / p["expected"] for p in pts))
    assert report["causes"][0]["label"] == "expected_performance"


def test_a_band_under_half_decides_the_verdict_and_says_so():
    """Small messages at 0.3 of their expected busbw, large ones as expected: below, and the verdict line names
    the band that decided it, not only the large band's ratio."""
    from collsim.diagnose.report import text
    sizes = (4 << 10, 1 << 30)
    expected = {p["bytes"]: p["expected"] for p in diagnose([], "ib-400g", [(n, 1.0) for n in sizes])["points"]}
    report = diagnose([], "ib-400g", [(4 << 10, 0.3 * expected[4 << 10]), (1 << 30, expected[1 << 30])])
    small, large = report["bands"]
    assert (small["band"], large["band"], large["verdict"]) == ("small", "large", "as expected")
    assert small["ratio"] == pytest.approx(0.3) and report["verdict"] == "below_expected"
    assert report["ratio"] == pytest.approx(1.0)   # the causes' effect ranges read large-message busbw
    assert report["decided_by"] == {"band": "small", "run": "--measured", "ratio": small["ratio"],
                                    "rule": "under half its expected", "main_band": "large"}
    assert ("verdict: below what this hardware should give (small band of --measured: measured / expected 0.30, "
            "under half; large band 1.00)") in text(report)
    ok = diagnose([], "ib-400g", [(1 << 30, 0.9 * expected[1 << 30])])
    assert ok["verdict"] == "as_expected" and ok["decided_by"]["rule"] == "main band"
    assert "verdict: as expected: within the range this hardware should give (measured / expected 0.90)" in text(ok)


def test_a_shortfall_ranks_causes_and_nothing_measured_is_not_judged():
    report = diagnose([], "h100-nvlink", [(1 << 30, 100.0)])
    assert report["verdict"] == "below_expected" and report["ratio"] < 0.5
    assert report["bands"][0]["run"] == "--measured"
    assert diagnose([], "h100-nvlink", [(1 << 30, report["bands"][0]["expected_busbw_GBps"])])["verdict"] == \
        "as_expected"
    two = diagnose([], "ib-400g", [(1 << 30, 40.0)])   # 4 nodes, 8 x 400G: a tenth of the network's busbw
    assert two["verdict"] == "below_expected"
    labels = [c["label"] for c in two["causes"]]
    assert "sockets_instead_of_ib" in labels and "expected_performance" not in labels
    assert all(c["evidence"] == [] for c in two["causes"])   # no file speaks: priors only, each below 1
    assert max(c["score"] for c in two["causes"]) < 1


PUBLIC_RESULTS = {}


@pytest.mark.parametrize("folder", PUBLIC, ids=[d.name for d in PUBLIC])
def test_public_case_runs_and_names_its_source(folder):
    c, report, rank = run(folder)
    assert c["url"].startswith("https://github.com/") and c["quote"] and c["maintainer"]
    PUBLIC_RESULTS[folder.name] = rank
    assert report["verdict"] in ("as_expected", "below_expected", "above_expected", "not_judged")


def test_most_public_cases_rank_the_named_cause_in_the_first_three():
    ranks = {f.name: run(f)[2] for f in PUBLIC}
    top3 = sorted(n for n, r in ranks.items() if r is not None and r <= 3)
    missed = sorted(set(ranks) - set(top3))
    assert len(PUBLIC) >= 15 and len(top3) >= 13, ranks   # issue 35's goal: 13 of 15
    # the miss, and why (docs/diagnose.md): a V100 machine collsim does not describe, its 2 nodes only in prose
    assert missed == ["nccl-tests-251"], ranks


def test_nccl_tests_297_hit_rests_on_the_prediction():
    """docs/diagnose.md: the slower run (328 GB/s) is 0.90 of the 365 expected, inside cpu_binding's effect range;
    the faster one (362) is what the hardware should give. A prediction under 328 / 0.98 would drop the hit."""
    from collsim.diagnose.causes import BY_LABEL
    from tests.diagnose.cases import DATA
    _, report, rank = run(DATA / "nccl-tests-297")
    (band,) = report["bands"]
    lo, hi = BY_LABEL["cpu_binding"].effect
    assert round(band["expected_busbw_GBps"]) == 365 and lo <= band["ratio"] <= hi and rank == 2
    assert 362.198 / band["expected_busbw_GBps"] > 1 / (1 + TOLERANCE["large"]) and round(327.98 / hi) == 335
    docs = " ".join((Path(__file__).resolve().parents[2] / "docs" / "diagnose.md").read_text().split())
    assert "collsim expects 365 GB/s there, the user's faster run gave 362 and the slower 328 (0.90" in docs
    assert "a prediction under 335 GB/s" in docs


def test_docs_table_and_example_are_what_diagnose_says(capsys):
    import re

    import collsim.cli as cli
    from tests.diagnose.cases import DATA
    docs = (Path(__file__).resolve().parents[2] / "docs" / "diagnose.md").read_text()
    rows = re.findall(r"^\| \[([\w.-]+)\]\((\S+)\) \| `(\w+)` \| ([\d-]+) \| ([^|]+) \| (\w+) \|$", docs, re.M)
    assert len(rows) == len(PUBLIC)
    for name, url, label, rank, first, verdict in rows:
        c, report, got = run(next(f for f in PUBLIC if f.name == name))
        assert (url, label, rank, verdict) == (c["url"], c["label"], str(got) if got else "-", report["verdict"])
        assert first.strip() == (", ".join(x["label"] for x in report["causes"][:3]) or "(none)")
    hits = sum(1 for r in rows if r[3] != "-" and int(r[3]) <= 3)
    assert f"**{hits} of {len(rows)}**" in docs
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    claim = f"on {len(rows)} public threads it puts the maintainer's named cause in the first three for {hits} "
    assert claim in readme
    assert cli.main(["diagnose", str(DATA / "synthetic" / "gdr_disabled" / "run.out"), "--top", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    example = docs.split("--top 2` (a")[1].split("```")[1].strip().splitlines()
    assert example and all(line in out for line in example), [line for line in example if line not in out]


def test_mutated_files_give_a_report_or_a_one_line_error(tmp_path):
    """Cut, thinned, shuffled and corrupted copies of every case file (seeded): never another exception."""
    import random

    from collsim.errors import CollsimError
    from tests.diagnose.cases import DATA
    texts = [p.read_text() for p in DATA.rglob("*") if p.is_file() and p.name != "case.json"]
    rng = random.Random(27)
    for i in range(240):
        t = rng.choice(texts)
        lines = t.splitlines(True)
        op = i % 5
        if op == 0:
            t = t[:rng.randrange(len(t) + 1)]
        elif op == 1:
            t = "".join(line for line in lines if rng.random() > 0.3)
        elif op == 2:
            t = "".join(rng.choice(lines) for _ in range(rng.randrange(1, 30)))
        elif op == 3:
            t = "".join(c if not c.isdigit() or rng.random() > 0.1 else rng.choice(["-", ".", "nan", "1e400", "x"])
                        for c in t)
        else:
            t = t.replace(" ", "", rng.randrange(1, 30))
        path = tmp_path / f"m{i}.txt"
        path.write_text(t)
        try:
            report = diagnose([path], rng.choice([None, "ib-400g"]), rng.choice([None, [(1 << 30, 10.0)]]))
        except CollsimError as e:
            assert "\n" not in str(e)
        else:
            assert report["verdict"] in ("as_expected", "below_expected", "above_expected", "not_judged")
