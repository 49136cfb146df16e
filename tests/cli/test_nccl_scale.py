"""collsim.cli.nccl_scale: predict-nccl over a list of node counts (text, --json, --plot, bad lists)."""
import json

import pytest

from collsim.cli import main
from collsim.cli.nccl_scale import parse_nodes
from collsim.errors import CollsimError


@pytest.mark.parametrize("text, counts", [("2,4,...,2048", [2 ** k for k in range(1, 12)]), ("8", [8]),
                                          ("2, 4, 8", [2, 4, 8]), ("2,4,...,10", [2, 4, 6, 8, 10]),
                                          ("1,3,...,27", [1, 3, 9, 27]), ("1,2,4,...,16", [1, 2, 4, 8, 16])])
def test_node_lists(text, counts):
    assert parse_nodes(text) == counts


@pytest.mark.parametrize("text, message", [("2,4,...,9", "neither multiplying by 4/2 nor adding 2 reaches 9"),
                                           ("4,2", "increasing order"), ("2,2", "increasing order"),
                                           ("2,...,8", "FIRST,SECOND,...,LAST"), ("2,4,...", "FIRST,SECOND,...,LAST"),
                                           ("0,2", "'0' is not a node count from 1 to 65536"), ("x", "'x' is not"),
                                           ("2,4,,8", "'' is not"), ("1,2,...,100", "at most 64 node counts")])
def test_bad_node_lists_are_one_line_errors(text, message, capsys):
    with pytest.raises(CollsimError, match=message):
        parse_nodes(text)
    with pytest.raises(SystemExit) as e:
        main(["predict-nccl", "--cluster", "ib-400g", "--nodes", text, "--bytes", "1G"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and message.split("'")[0] in err


def test_a_sweep_prints_busbw_per_node_count_with_nccls_choice_marked(capsys, tmp_path):
    argv = ["predict-nccl", "--cluster", "ib-400g", "--nodes", "1,2", "--bytes", "256M", "--algos", "ring,nvls"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    one, two = (next(x for x in out if x.split()[:1] == [n]) for n in ("1", "2"))
    assert one.split()[3] == "NVLS/Simple" and one.split()[-1].endswith("*")           # one node: NCCL runs NVLS
    assert two.split()[-1] == "-" and "* NCCL's choice; - NCCL cannot run it there" in out[-1]   # not across nodes
    assert main(argv + ["--json", "--plot", str(tmp_path / "s.png")]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["nodes"] == [1, 2] and d["algos"] == ["Ring", "NVLS"] and (tmp_path / "s.png").stat().st_size > 1000
    assert [(r["nodes"], r["algo"], r["nccl_choice"]) for r in d["rows"]] == \
        [(1, "NVLS", True), (1, "Ring", False), (2, "NVLSTree", True), (2, "Ring", False), (2, "NVLS", False)]
    assert d["rows"][-1]["busbw_GBps"] is None and "not available" in d["rows"][-1]["unavailable"]
    assert main(["predict-nccl", "--cluster", "ib-400g", "--nodes", "2", "--bytes", "1G", "--algos", "Ring"]) == 2
    assert main(["predict-nccl", "--cluster", "ib-400g", "--nodes", "1,2", "--bytes", "1G", "--algos", "Rung"]) == 2
    assert "unknown name 'Rung'" in capsys.readouterr().err
