"""Where each input of a description comes from (collsim.machine.provenance): one record the ranges read."""
from dataclasses import replace

import pytest

from collsim.errors import CollsimError
from collsim.machine import Cluster, load_cluster


def kinds(cluster):
    return {k: v.kind for k, v in cluster.inputs.items()}


def test_kinds_follow_the_logs_that_calibrated_each_input():
    assert kinds(load_cluster("h100-nvlink")) == {"intra": "log", "step": "log", "nccl": "log"}
    p4d = kinds(load_cluster("p4d", 2))
    assert p4d["intra"] == "datasheet" and p4d["step"] == "datasheet"        # A100: a maintainer's plateau
    assert p4d["nic"] == "log" and p4d["hop"] == "log"                       # P03, P05
    tcp = kinds(replace(load_cluster("dgx-h100"), net="tcp"))
    assert tcp["nic"] == "assumed" and tcp["hop"] == "assumed"
    assert kinds(Cluster("RTX4090", 4))["intra"] == "assumed"                # SHM: no log
    assert kinds(Cluster("RTX4090", 4, p2p=True))["intra"] == "log"          # P02
    assert kinds(Cluster("H100", 8, nccl="2.9"))["nccl"] == "assumed"         # 2.9 follows 2.18's choice


def test_a_calibrated_record_makes_its_inputs_this_machines_and_sets_their_values():
    c = replace(load_cluster("dgx-h100"), calibrated={"source": "q.txt", "intra_efficiency": 0.7,
                                                     "nic_efficiency": 0.5, "hop_us": 9.0, "step_scale": 1.5})
    assert {k: v for k, v in kinds(c).items() if k != "nccl"} == dict.fromkeys(("intra", "step", "nic", "hop"),
                                                                                "machine")
    assert (c.intra_efficiency, c.nic_efficiency, c.hop_us, c.step_scale) == (0.7, 0.5, 9.0, 1.5)
    assert "q.txt" in c.inputs["nic"].source
    assert c.to_dict()["calibrated"]["hop_us"] == 9.0
    assert Cluster.from_dict(c.to_dict()).calibrated == c.calibrated


@pytest.mark.parametrize("record, words", [
    ({"intra_eff": 0.5}, "unknown key"), ({"hop_us": -1}, "within"), ({"step_scale": "x"}, "finite number"),
    ([1, 2], "must be a mapping"), ({"nic_efficiency": 9}, "within")])
def test_a_bad_calibrated_record_is_one_line(record, words):
    with pytest.raises(CollsimError, match=words):
        Cluster("H100", 8, calibrated=record)
