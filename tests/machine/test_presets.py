"""collsim.machine.presets: the machines users have, each with its source, listed by simulate --list-presets."""
import pytest

from collsim.cli import main
from collsim.machine.presets import CLUSTERS, PRESETS, get_preset

NEW = ("dgx-a100", "dgx-h100", "dgx-h800", "h20", "a100-pcie-box", "l40s-box", "rtx4090-box", "rtx3090-pair", "p4d",
       "p5", "a3-mega", "gb200-nvl72", "gh200", "h100-sharp")


def test_common_machines_are_presets_with_a_source():
    assert set(NEW) <= set(CLUSTERS) and set(PRESETS) == set(CLUSTERS)
    for name, c in CLUSTERS.items():
        assert c.name == name and len(c.source) > 40, name
    assert CLUSTERS["p5"].nics_per_node == 32 and CLUSTERS["h100-sharp"].sharp
    assert CLUSTERS["rtx4090-box"].p2p is False and CLUSTERS["gb200-nvl72"].nvlink_domain == 72


def test_list_presets_prints_every_source(capsys):
    assert main(["simulate", "--list-presets"]) == 0
    out = capsys.readouterr().out
    assert out.count("source: ") == len(PRESETS)
    for name in NEW:
        assert f"\n{name} " in "\n" + out
    assert "aws-ofi-nccl" in out and "NVLink domain" in out


def test_resizing_a_preset():
    assert get_preset("p5", nodes=4).nodes == 4
    assert get_preset("gb200-nvl72", gpus_per_node=2).gpus_per_node == 2    # a resized tray is its own domain
    with pytest.raises(Exception, match="unknown preset"):
        get_preset("p6")
