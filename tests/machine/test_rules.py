"""collsim.machine.rules: which layouts a GPU part can have, NVLink domains, NICs per node and SHARP."""
import pytest

from collsim.errors import CollsimError
from collsim.machine.cluster import Cluster


@pytest.mark.parametrize("spec, message", [
    ({"gpu": "L40S", "gpus_per_node": 8, "intra": "nvswitch"}, "L40S has no NVLink"),
    ({"gpu": "A100-PCIE", "gpus_per_node": 8, "intra": "nvswitch"}, "is a PCIe card, on no NVSwitch"),
    ({"gpu": "H100-NVL", "gpus_per_node": 4, "intra": "nvlink"}, "NVLink bridge joins 2 GPUs, not 4"),
    ({"gpu": "H100", "gpus_per_node": 8, "p2p": False}, "p2p: false describes PCIe GPUs"),
    ({"gpu": "L40S", "gpus_per_node": 8, "nvlink_GBps": 100}, "L40S has no NVLink"),
    ({"gpu": "H100", "gpus_per_node": 8, "nvlink_domain": 16}, "NVLink across hosts needs NVLink Switch trays"),
    ({"gpu": "GB200", "gpus_per_node": 4, "nvlink_domain": 70}, "must be a multiple of gpus_per_node"),
    ({"gpu": "GB200", "gpus_per_node": 4, "nodes": 20, "nics_per_node": 4, "nic_Gbps": 400, "nvlink_domain": 72},
     "fill whole domains"),
    ({"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 16, "nic_Gbps": 400},
     r"nics_per_node \(16\) exceeds gpus_per_node \(8\): only a plugin that groups NICs"),
    ({"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 12, "nic_Gbps": 100, "net": "efa"},
     "must be a multiple of gpus_per_node"),
    ({"gpu": "H100", "gpus_per_node": 8, "nodes": 2, "nics_per_node": 8, "nic_Gbps": 400, "net": "roce",
      "sharp": True}, "sharp: true needs InfiniBand switches"),
    ({"gpu": "H100", "gpus_per_node": 8, "sharp": "yes"}, "sharp must be true or false"),
    ({"gpu": "GH200", "gpus_per_node": 1, "nvls": True}, "one GPU per NVLink domain"),
])
def test_layouts_no_machine_has_are_refused_in_one_line(spec, message):
    with pytest.raises(CollsimError, match=message) as e:
        Cluster.from_dict(spec, where="c.yaml")
    assert "\n" not in str(e.value)


def test_defaults_follow_the_part():
    assert Cluster("L40S", 8).intra == "pcie" and Cluster("L40S", 8).p2p is True
    assert Cluster("RTX4090", 8).p2p is False and Cluster("RTX4090", 8, p2p=True).p2p is True   # patched driver
    assert Cluster("RTX3090", 2, intra="nvlink").p2p is True          # NVLink bridge: peer-to-peer over NVLink
    assert Cluster("H100-PCIE", 4).pcie_GBps == 64 and Cluster("L4", 2, pcie_gen=3).pcie_GBps == 16
    assert Cluster("H100", 8).nvls and not Cluster("H100", 1).nvls and not Cluster("H100-NVL", 2, intra="nvlink").nvls
    gb = Cluster("GB200", 4, 18, nics_per_node=4, nic_Gbps=400, nvlink_domain=72)
    assert gb.nvls and gb.nvlink_domain == 72 and Cluster("GB200", 4, 9, nics_per_node=4, nic_Gbps=400,
                                                            nvlink_domain=72).ranks == 36   # half a rack
    p5 = Cluster("H100", 8, 2, nics_per_node=32, nic_Gbps=100, net="efa")
    assert p5.nics_per_node == 32 and p5.nic_of_local(1) == 4
