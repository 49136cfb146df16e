"""collsim.machine.hardware: PCIe generations as NVIDIA's datasheets and NCCL's topology count them, and the
re-exported tables."""
import pytest

from collsim.machine import hardware
from collsim.machine.hardware import PCIE


@pytest.mark.parametrize("gen, per_direction, nccl", [(3, 16, 12), (4, 32, 24), (5, 64, 48), (6, 128, 96)])
def test_pcie_generations_as_nvidia_and_nccl_count_them(gen, per_direction, nccl):
    # NCCL: x16 lanes x the kernel's per-lane speed in 100 Mb/s (60, 120, 240, 480) / 80 (topo.cc:423-426,489-491)
    p = PCIE[gen]
    assert (p.GBps, p.nccl_GBps) == (per_direction, 16 * {3: 60, 4: 120, 5: 240, 6: 480}[gen] / 80) == \
        (per_direction, nccl)
    assert "topo.cc" in p.source


def test_the_tables_are_one_import_away():
    assert {"GPUS", "NETS", "PCIE", "gpu_name"} <= set(hardware.__all__)
    assert 0 < hardware.SHM_RING_EFFICIENCY < hardware.PCIE_RING_EFFICIENCY < 1
