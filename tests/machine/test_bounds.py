"""collsim.machine.bounds: every number of a cluster description within named bounds, one line each (issue 29)."""
import pytest

from collsim.errors import CollsimError
from collsim.machine.bounds import BOUNDS, check
from collsim.machine.cluster import Cluster

BASE = {"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 400}


@pytest.mark.parametrize("key, value", [
    ("call_us", 1e308), ("call_us", -1), ("nvlink_GBps", 1e-300), ("nvlink_GBps", 1e300), ("pcie_GBps", 1e-300),
    ("nic_Gbps", 1e-300), ("nic_Gbps", 1e9), ("fabric_efficiency", 0), ("fabric_efficiency", 1.5),
    ("fabric_efficiency", float("nan")), ("nvlink_GBps", float("inf")), ("gpus_per_node", 1025), ("nodes", 1 << 17),
    ("nvlink_domain", 0), ("pcie_gen", 2), ("nics_per_node", 65),
])
def test_out_of_bounds_numbers_are_one_line_errors_naming_the_key(key, value):
    with pytest.raises(CollsimError) as e:
        Cluster.from_dict({**BASE, key: value}, where="c.yaml")
    text = str(e.value)
    assert text.startswith("c.yaml: ") and key in text and "\n" not in text and len(text) < 220


@pytest.mark.parametrize("key", sorted(BOUNDS))
def test_bounds_are_inclusive_where_they_say_and_give_their_reason(key):
    low, high, why = BOUNDS[key]
    assert len(why) > 20 and check(key, high) == high
    if key == "fabric_efficiency":
        with pytest.raises(CollsimError, match=r"must be > 0 and <= 1 \(share"):
            check(key, low)
    else:
        assert check(key, low) == low
    with pytest.raises(CollsimError, match=why.split(":")[0]):
        check(key, high * 2 + 1)


def test_every_bounded_description_keeps_times_finite():
    from collsim.predict import predict_nccl
    slow = Cluster("H100", 8, 2, nvlink_GBps=0.1, nics_per_node=8, nic_Gbps=0.1, call_us=1e6)
    rows = predict_nccl(slow, [8, 1 << 30], algo="Ring")["rows"]
    assert all(0 < r["time_us"] < 1e13 for r in rows)


def test_yaml_exponents_without_a_dot_are_numbers_and_bounded(tmp_path):
    from collsim.machine import load_cluster
    f = tmp_path / "c.yaml"
    f.write_text("gpu: H100\ngpus_per_node: 8\ncall_us: 1e308\n")            # YAML 1.1 reads this as text
    with pytest.raises(CollsimError, match=r"call_us must be >= 0 and <= 1e\+06 \(fixed cost") as e:
        load_cluster(f)
    assert "\n" not in str(e.value)
    f.write_text("gpu: H100\ngpus_per_node: 8\ncall_us: 2e1\n")
    assert load_cluster(f).call_us == 20.0
