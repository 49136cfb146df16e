"""collsim.machine.gpus: every GPU part with cited numbers, and device names as nvidia-smi and nccl-tests print them."""
import pytest

from collsim.machine.gpus import GPUS, REFERENCE_MHZ, gpu_name

ISSUE_25 = ("A100", "A100-PCIE", "A800", "H100", "H100-PCIE", "H100-NVL", "H800", "H20", "H200", "B200", "GB200",
            "GH200", "L40S", "L4", "A10", "RTX3080", "RTX3090", "RTX4080", "RTX4090")


def test_every_part_users_run_is_in_the_table_with_its_source():
    assert set(ISSUE_25) <= set(GPUS)
    for name, g in GPUS.items():
        assert g.name == name and len(g.source) > 80, name
        assert g.compcap in (70, 75, 80, 86, 89, 90, 100, 120, 121) and g.pcie_gen in (3, 4, 5)
        assert g.form in ("sxm", "pcie", "superchip")
        assert (g.nvlinks == 0) == (g.link_GBps == 0) and (g.ring_efficiency > 0) == (g.nvlinks > 0)
        assert 0 < g.latency_scale <= REFERENCE_MHZ / 1380 and g.sms > 0 and g.l2_bytes >= 4 << 20


SINCE_VOLTA = ("V100", "V100-PCIE", "V100S", "T4", "RTX2080TI", "RTX8000", "A30", "A40", "A6000", "A10G", "L40",
               "RTX5090", "GB10")


@pytest.mark.parametrize("name, cc, sms, gen, nvlink", [
    ("V100", 70, 80, 3, 150), ("V100-PCIE", 70, 80, 3, 0), ("T4", 75, 40, 3, 0),   # V100: 'NVLink 300 GB/s'
    ("RTX2080TI", 75, 68, 3, 50), ("A30", 80, 56, 4, 100), ("A40", 86, 84, 4, 56.25),
    ("A6000", 86, 84, 4, 56.25), ("L40", 89, 142, 4, 0), ("RTX5090", 120, 170, 5, 0), ("GB10", 121, 48, 5, 0),
])
def test_every_generation_since_volta_with_its_datasheet_figures(name, cc, sms, gen, nvlink):
    g = GPUS[name]
    assert (g.compcap, g.sms, g.pcie_gen, g.nvlink_GBps) == (cc, sms, gen, pytest.approx(nvlink))
    assert set(SINCE_VOLTA) <= set(GPUS)


@pytest.mark.parametrize("name, nvlink, links, nvls, p2p", [
    ("A100", 300, 12, False, True), ("A800", 200, 8, False, True),          # A800: NVLink 400 GB/s bidirectional
    ("H100", 450, 18, True, True), ("H800", 200, 8, True, True),            # H800: NVLink 400 GB/s bidirectional
    ("H20", 450, 18, True, True), ("B200", 900, 18, True, True), ("GB200", 900, 18, True, True),
    ("A100-PCIE", 300, 12, False, True), ("H100-NVL", 300, 12, False, True),  # NVLink bridge 600 GB/s to one peer
    ("RTX3090", 56.25, 4, False, False),                                    # 112.5 GB/s total bidirectional
    ("L40S", 0, 0, False, True), ("L4", 0, 0, False, True), ("RTX4090", 0, 0, False, False),
])
def test_nvlink_and_peer_access_per_part(name, nvlink, links, nvls, p2p):
    g = GPUS[name]
    assert (g.nvlink_GBps, g.nvlinks, g.nvls, g.p2p) == (pytest.approx(nvlink), links, nvls, p2p)


def test_only_superchips_reach_other_hosts_over_nvlink():
    assert {n for n, g in GPUS.items() if g.mnnvl} == {"GB200", "GH200"}


@pytest.mark.parametrize("text, name", [
    ("NVIDIA A100-SXM4-80GB", "A100"), ("NVIDIA A100-PCIE-40GB", "A100-PCIE"), ("NVIDIA A100 80GB PCIe", "A100-PCIE"),
    ("NVIDIA A800-SXM4-80GB", "A800"), ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100-PCIE"),
    ("NVIDIA H100 NVL", "H100-NVL"), ("NVIDIA H800", "H800"), ("NVIDIA H20", "H20"), ("NVIDIA H200", "H200"),
    ("NVIDIA GH200 480GB", "GH200"), ("NVIDIA GB200", "GB200"), ("NVIDIA B200", "B200"), ("NVIDIA L40S", "L40S"),
    ("NVIDIA L4", "L4"), ("NVIDIA A10", "A10"), ("NVIDIA GeForce RTX 4090", "RTX4090"), ("rtx 3090", "RTX3090"),
    ("RTX-4080", "RTX4080"), ("h100-pcie", "H100-PCIE"), ("Tesla V100-SXM2-32GB", "V100"),
    ("Tesla V100-PCIE-16GB", "V100-PCIE"), ("Tesla V100S-PCIE-32GB", "V100S"), ("Tesla T4", "T4"),
    ("NVIDIA GeForce RTX 2080 Ti", "RTX2080TI"), ("Quadro RTX 8000", "RTX8000"), ("NVIDIA RTX A6000", "A6000"),
    ("NVIDIA A40", "A40"), ("NVIDIA A10G", "A10G"), ("NVIDIA L40", "L40"), ("NVIDIA GB10", "GB10"),
    ("NVIDIA GeForce RTX 5090", "RTX5090"),
])
def test_device_names_mean_one_part(text, name):
    assert gpu_name(text) == name


@pytest.mark.parametrize("text", ["H100 or H200", "A100 and L40S", "GB300", "P100"])
def test_two_names_or_an_unknown_one_are_not_guessed(text):
    assert gpu_name(text) not in GPUS
