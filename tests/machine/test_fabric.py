"""collsim.machine.fabric: the fabric above the NICs in cluster descriptions (keys, errors, presets) and the
simulator's tiers made of it."""
import pytest

from collsim.errors import CollsimError
from collsim.machine import Cluster, load_cluster, to_topology
from collsim.machine.fabric import SUPERPOD_SOURCE, Fabric, Tier
from collsim.machine.presets import CLUSTERS
from collsim.machine.topology import Topology

SPEC = {"gpu": "H100", "gpus_per_node": 8, "nodes": 64, "nics_per_node": 8, "nic_Gbps": 400}


def test_keys_defaults_and_round_trip(tmp_path):
    import yaml
    c = Cluster.from_dict({**SPEC, "fabric": {"nodes_per_leaf": 32, "oversubscription": 2}})
    assert c.fabric == Fabric(32, True, 2.0) and c.fabric.nodes_per_pod is None
    assert "fabric: rail-optimised leaves of 32 nodes 2:1" in c.describe()
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(c.to_dict()))
    assert load_cluster(f).fabric == c.fabric
    assert "non-blocking fabric" in Cluster.from_dict(SPEC).describe() and Cluster.from_dict(SPEC).fabric is None
    three = Fabric.from_dict({"nodes_per_leaf": 16, "rail_optimized": False, "oversubscription": 1,
                              "nodes_per_pod": 256, "pod_oversubscription": 3})
    assert three.describe() == "leaves of 16 nodes 1:1, pods of 256 nodes 3:1" and Fabric.from_dict(three) is three


@pytest.mark.parametrize("fabric, message", [
    ({"oversubscription": 2}, "needs nodes_per_leaf"),
    ({"nodes_per_leaf": 0}, "nodes_per_leaf must be >= 1"),
    ({"nodes_per_leaf": 32, "oversubscription": 0.5}, "oversubscription must be >= 1"),
    ({"nodes_per_leaf": 32, "oversubscription": 100}, "oversubscription must be <= 64"),
    ({"nodes_per_leaf": 32, "rail_optimized": "yes"}, "rail_optimized must be true or false"),
    ({"nodes_per_leaf": 32, "nodes_per_pod": 48}, "nodes_per_pod .48. must be a multiple of nodes_per_leaf"),
    ({"nodes_per_leaf": 32, "pod_oversubscription": 2}, "pod_oversubscription needs nodes_per_pod"),
    ({"nodes_per_leef": 32}, "unknown key 'nodes_per_leef' .did you mean 'nodes_per_leaf'"),
    ({"nodes_per_leaf": 32, "rails": 4}, "unknown key 'rails'"),
    ([32, 2], "fabric must be a mapping"),
])
def test_bad_fabrics_are_one_line_errors(fabric, message):
    with pytest.raises(CollsimError, match=message) as e:
        Cluster.from_dict({**SPEC, "fabric": fabric}, where="c.yaml")
    assert "\n" not in str(e.value) and str(e.value).startswith("c.yaml: cluster fabric")


def test_tiers_are_what_oversubscribes():
    """Rails per NIC when rail-optimised, one plane otherwise; a tier 1:1 up to it adds no port; a pod tier joins
    the rails and oversubscribes by the product of the tiers below and its own."""
    assert Fabric(32, True, 2.0).tiers(8) == (Tier(32, 8, 2.0, "leaf"),)
    assert Fabric(4, False, 4.0).tiers(8) == (Tier(4, 1, 4.0, "leaf"),)
    assert Fabric(32).tiers(8) == ()                                  # non-blocking: only the NICs limit
    assert Fabric(32, True, 1.0, 256, 2.0).tiers(8) == (Tier(256, 1, 2.0, "pod"),)
    assert Fabric(32, True, 2.0, 256, 3.0).tiers(8) == (Tier(32, 8, 2.0, "leaf"), Tier(256, 1, 6.0, "pod"))
    t = to_topology(Cluster.from_dict({**SPEC, "fabric": {"nodes_per_leaf": 32, "oversubscription": 2}}))
    assert t.fabric == (Tier(32, 8, 2.0, "leaf"),) and "leaf groups of 32 nodes x 8 rails 2:1" in t.describe()
    assert t.fabric[0].uplink_ratio(8) == 2.0 / 32            # an uplink moves 32 NICs' rate / 2: 1/16 of the time
    assert Topology.from_dict(t.to_dict()).fabric == t.fabric


def test_an_nvlink_domain_counts_its_hosts_and_rails():
    rack = {"gpu": "GB200", "gpus_per_node": 4, "nodes": 72, "nvlink_domain": 72, "nics_per_node": 4, "nic_Gbps": 400}
    t = to_topology(Cluster.from_dict({**rack, "fabric": {"nodes_per_leaf": 36, "oversubscription": 2}}))
    assert (t.nodes, t.nics_per_node, t.fabric) == (4, 72, (Tier(2, 4, 2.0, "leaf"),))   # 18 hosts a node, 4 rails
    with pytest.raises(CollsimError, match=r"nodes_per_leaf \(16\) must be a multiple of the hosts of one NVLink"):
        Cluster.from_dict({**rack, "fabric": {"nodes_per_leaf": 16}})


def test_topology_files_check_their_tiers():
    base = {"nodes": 4, "gpus_per_node": 2, "nics_per_node": 2, "intra": {"bandwidth_GBps": 100, "latency_us": 1},
            "inter": {"bandwidth_GBps": 10, "latency_us": 2}}
    for fabric, message in (([{"nodes": 2, "planes": 3}], "3 planes, which do not divide the 2 NICs"),
                            ([{"nodes": 2}, {"nodes": 3, "name": "pod"}], "tier 1 must join whole groups of tier 0"),
                            ([{"nodes": 2}, {"nodes": 4}], "tiers need names of their own"),
                            ([{"nodes": 2, "name": "leaf1"}], "letters only"),
                            ({"nodes": 2}, "must be a list of tiers")):
        with pytest.raises(CollsimError, match=message):
            Topology.from_dict({**base, "fabric": fabric})


def test_presets_say_what_fabric_they_assume():
    for name, c in CLUSTERS.items():
        rail = "rail-optimised leaves" in c.source
        assert (c.fabric is not None) == rail, name
        assert ("Fabric: " in to_topology(c).source) == (c.nics_per_node > 0), name
    assert CLUSTERS["dgx-h100"].fabric == Fabric(32) and CLUSTERS["dgx-a100"].fabric == Fabric(20)
    assert CLUSTERS["ib-400g"].fabric == Fabric(32) and CLUSTERS["p5"].fabric is None
    assert "SuperPOD" in SUPERPOD_SOURCE and "non-blocking" in to_topology(CLUSTERS["p5"]).source
