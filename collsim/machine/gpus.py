"""What each GPU brings, with the source of every number (``GPUS``, ``gpu_name``).

One ``GPU`` record per part users run, every NVIDIA datacenter and workstation generation since
Volta: the SXM boards (V100, A100, A800, H100, H800, H20, H200, B200), the PCIe cards (V100-PCIE,
V100S, T4, A100-PCIE, A30, A40, A10, A10G, H100-PCIE, H100-NVL, L40, L40S, L4), workstation and
consumer cards (RTX8000, A6000, RTX2080TI, RTX3080, RTX3090, RTX4080, RTX4090, RTX5090), and the
superchips (GH200, GB200, GB10). Units: GB/s = 1e9 bytes/s per direction (half
of NVIDIA's "bidirectional" figure), MHz, bytes. Where NVIDIA publishes no figure the entry says
"assumed" and what it takes instead. NCCL's own per-link NVLink figure is not here: NCCL derives it
from the compute capability (``collsim.nccl.graphs.nccl_nvlink_GBps``, topo.h:16-21@v2.28.9).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

NCCL_TUNING_CC = "NVIDIA/nccl src/graph/tuning.cc:134-139 (v2.28.9-1)"
# SM clock of the 2 x H200 runs collsim's model was fitted on (data/h200x2/run5/dmon.txt)
REFERENCE_MHZ = 1980.0


@dataclass(frozen=True)
class GPU:
    """One GPU part.

    compcap: CUDA compute capability x 10; sms: streaming multiprocessors; l2_bytes: L2 cache;
    boost_MHz: boost clock (GPU-side latencies scale by ``REFERENCE_MHZ / boost_MHz``); nvlinks x
    link_GBps: NVLink per GPU per direction (0 links: none; on PCIe cards the bridge to one peer);
    pcie_gen: PCIe generation of its x16 link (``collsim.machine.hardware.PCIE``); p2p: whether the
    driver allows peer-to-peer over PCIe (GeForce cards: no, NCCL then goes through host memory, its
    SHM transport); nvls: its NVSwitch generation can reduce and multicast (NVLink SHARP);
    nvls_efficiency: NCCL's nvlsEfficiency for the architecture; ring_efficiency: ring AllReduce
    busbw plateau / NVLink bandwidth on an NVLink board; mnnvl: NVLink reaches GPUs of other hosts
    (an NVLink domain larger than a host, ``Cluster.nvlink_domain``); form: sxm | pcie | superchip;
    source: where each number is from.
    """

    name: str
    compcap: int
    sms: int
    l2_bytes: int
    boost_MHz: float
    nvlinks: int
    link_GBps: float
    pcie_gen: int
    p2p: bool
    nvls: bool
    nvls_efficiency: float
    ring_efficiency: float
    mnnvl: bool
    form: str
    source: str

    @property
    def nvlink_GBps(self) -> float:
        """NVLink bandwidth per GPU per direction, GB/s (links x per-link rate; 0 without
        NVLink)."""
        return self.nvlinks * self.link_GBps

    @property
    def latency_scale(self) -> float:
        """GPU-side latencies relative to the fitted 2 x H200: the SM clock ratio."""
        return REFERENCE_MHZ / self.boost_MHz


MIB = 2**20
# L01's Ring busbw at 8 GiB, 368.09 GB/s, over 18 x 25 GB/s = 450 GB/s; sjeaugey on nccl-tests#212:
# "450GB/s is the line rate ... protocol overhead (~20%)", ring ~370 GB/s.
HOPPER_RING = 368.09 / 450.0
# ~230 GB/s ring busbw on 8 x A100 SXM (sjeaugey, NVIDIA/nccl-tests#149) over 12 x 25 GB/s.
AMPERE_RING = 230.0 / 300.0
_A100 = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 108 SMs, 40 MB L2, boost "
         "1410 MHz (table 1), third-generation NVLink 12 links x 25 GB/s per direction (600 GB/s "
         "total), PCIe Gen4")
_HOPPER = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022) / 'NVIDIA Hopper "
           "architecture in depth': 132 SMs and 50 MB L2 on H100 SXM5, boost 1980 MHz; Hopper "
           "tuning guide 1.4.3 (18 NVLinks x 50 GB/s bidirectional = 900 GB/s), PCIe Gen5")
_VOLTA = ("NVIDIA Tesla V100 GPU Architecture whitepaper (2017): GV100 with 80 SMs, 6 MB L2, "
          "compute capability 7.0")
_TURING = "NVIDIA Turing GPU Architecture whitepaper (2018, TU102/TU104 configurations)"
_ADA = "NVIDIA Ada Lovelace architecture whitepaper (2022, AD102/AD103 configurations)"
_GA102 = "NVIDIA Ampere GA102 GPU architecture whitepaper (2020)"
_GEFORCE_P2P = ("GeForce drivers refuse peer-to-peer over PCIe (cudaDeviceCanAccessPeer 0; "
                "tinygrad/open-gpu-kernel-modules README: P2P for 4090 only with a patched kernel "
                "module), so NCCL uses SHM through host memory")
_NVLS = f"NVLink SHARP in third-generation NVSwitch, nvlsEfficiency 0.85 ({NCCL_TUNING_CC})"


def _g(name: str, compcap: int, sms: int, l2_mib: float, mhz: float, *, links: int = 0,
       link: float = 0.0, gen: int = 4, p2p: bool = True, nvls: bool = False, nvls_eff: float = 0.0,
       ring: float = 0.0, mnnvl: bool = False, form: str = "pcie", source: str) -> GPU:
    """One row: L2 in MiB, boost clock in MHz, ``links`` NVLinks of ``link`` GB/s per direction."""
    return GPU(name=name, compcap=compcap, sms=sms, l2_bytes=int(l2_mib * MIB),
               boost_MHz=float(mhz), nvlinks=links, link_GBps=float(link), pcie_gen=gen, p2p=p2p,
               nvls=nvls, nvls_efficiency=nvls_eff, ring_efficiency=ring, mnnvl=mnnvl, form=form,
               source=source)


GPUS: dict[str, GPU] = {g.name: g for g in (
    _g("A100", 80, 108, 40, 1410, links=12, link=25.0, gen=4, ring=AMPERE_RING, form="sxm", source=
       _A100 + "; no NVLink SHARP (nvlsEfficiency 0 for Ampere, " + NCCL_TUNING_CC
       + "); ring plateau ~230 GB/s "
       "busbw on 8 x A100 (sjeaugey, NVIDIA/nccl-tests#149)"),
    _g("A100-PCIE", 80, 108, 40, 1410, links=12, link=25.0, gen=4, ring=AMPERE_RING, source=
       _A100
       + "; NVIDIA A100 datasheet (PCIe card: 'NVLink Bridge for 2 GPUs: 600 GB/s', 'PCIe Gen4: 64 "
         "GB/s'); ring efficiency assumed the SXM board's"),
    _g("A800", 80, 108, 40, 1410, links=8, link=25.0, gen=4, ring=AMPERE_RING, form="sxm", source=
       _A100
       + "; NVIDIA A800 datasheet: NVLink 400 GB/s (8 links x 25 GB/s per direction, the export "
         "variant of A100); ring efficiency assumed A100's"),
    _g("H100", 90, 132, 50, 1980, links=18, link=25.0, gen=5, nvls=True, nvls_eff=0.85,
       ring=HOPPER_RING, form="sxm", source=
       _HOPPER + "; " + _NVLS + "; ring plateau 368.09 GB/s busbw at 8 GiB (calibration log L01)"),
    _g("H100-PCIE", 90, 114, 50, 1755, links=12, link=25.0, gen=5, nvls_eff=0.85,
       ring=HOPPER_RING, source=
       _HOPPER
       + "; NVIDIA H100 PCIe datasheet: 114 SMs, boost 1755 MHz, NVLink bridge 600 GB/s to one "
         "peer (12 links assumed), PCIe Gen5 128 GB/s; no NVSwitch; ring efficiency assumed the "
         "SXM board's"),
    _g("H100-NVL", 90, 132, 50, 1785, links=12, link=25.0, gen=5, nvls_eff=0.85,
       ring=HOPPER_RING, source=
       _HOPPER
       + "; NVIDIA H100 NVL datasheet: NVLink bridge 600 GB/s to one peer (12 links assumed), "
         "boost 1785 MHz, PCIe Gen5 128 GB/s; ring efficiency assumed the SXM board's"),
    _g("H800", 90, 132, 50, 1980, links=8, link=25.0, gen=5, nvls=True, nvls_eff=0.85,
       ring=HOPPER_RING, form="sxm", source=
       _HOPPER
       + "; NVIDIA H800 datasheet: NVLink 400 GB/s (8 links x 25 GB/s per direction, the export "
         "variant of H100 SXM); NVSwitch with NVLink SHARP and the ring efficiency assumed H100's"),
    _g("H20", 90, 78, 60, 1980, links=18, link=25.0, gen=5, nvls=True, nvls_eff=0.85,
       ring=HOPPER_RING, form="sxm", source=
       "NVIDIA HGX H20 (export variant of the GH100 board): NVLink 900 GB/s (18 x 25 GB/s per "
       "direction), PCIe Gen5; 78 SMs and 60 MB L2 as reported by system vendors (no NVIDIA "
       "datasheet gives them); clock, NVLink SHARP and ring efficiency assumed H100's"),
    _g("H200", 90, 132, 50, 1980, links=18, link=25.0, gen=5, nvls=True, nvls_eff=0.85,
       ring=HOPPER_RING, form="sxm", source=
       "NVIDIA H200 page ('18x 4th Gen NVLink, 900GB/s'; the GH100 die of H100, so SMs, L2 and the "
       "ring efficiency are H100's; l2CacheSize 52428800 B "
       "read on our 2 x H200, data/h200x2); " + _NVLS),
    _g("B200", 100, 148, 126, 1980, links=18, link=50.0, gen=5, nvls=True, nvls_eff=0.74,
       ring=HOPPER_RING, form="sxm", source=
       "NVIDIA NVLink page (18 NVLink5 links x 100 GB/s bidirectional = 1.8 TB/s); 148 SMs and 126 "
       "MB L2 (Blackwell tuning guide 1.4.2; deviceQuery in pytorch/ao#4002); NVLink SHARP, "
       "nvlsEfficiency 0.74 (" + NCCL_TUNING_CC + "); PCIe Gen5 (HGX B200); ring efficiency and "
                                                  "clock assumed Hopper's (no published 8 x B200 "
                                                  "ring plateau from NVIDIA)"),
    _g("GB200", 100, 148, 126, 1980, links=18, link=50.0, gen=5, nvls=True, nvls_eff=0.74,
       ring=HOPPER_RING, mnnvl=True, form="superchip", source=
       "NVIDIA GB200 NVL72 page: 72 Blackwell GPUs in one NVLink domain, 18 NVLink5 links x 100 "
       "GB/s bidirectional per GPU through NVLink Switch trays, 4 GPUs (2 superchips) per compute "
       "tray, NVLink-C2C 900 GB/s to Grace; SMs, L2, clock, PCIe generation and ring efficiency "
       "assumed B200's; nvlsEfficiency 0.74 (" + NCCL_TUNING_CC + ")"),
    _g("GH200", 90, 132, 50, 1980, links=18, link=25.0, gen=5, nvls=True, nvls_eff=0.85,
       ring=HOPPER_RING, mnnvl=True, form="superchip", source=
       "NVIDIA GH200 Grace Hopper Superchip datasheet: an H100 (132 SMs, 50 MB L2) joined to Grace "
       "by NVLink-C2C 900 GB/s, 18 NVLink4 ports for the GH200 NVL32 NVLink domain; NICs on "
       "Grace's PCIe Gen5; clock and ring efficiency assumed H100 SXM's"),
    _g("L40S", 89, 142, 96, 2520, gen=4, source=
       "NVIDIA L40S datasheet: PCIe Gen4 x16 64 GB/s bidirectional, no NVLink, 142 RT cores = 142 "
       "SMs, boost 2520 MHz; L2 assumed "
       "the full AD102's 96 MB (" + _ADA + "; not published for L40S)"),
    _g("L4", 89, 58, 48, 2040, gen=4, source=
       "NVIDIA L4 datasheet: PCIe Gen4 x16 64 GB/s bidirectional, no NVLink; 58 SMs, 48 MB L2 and "
       "boost 2040 MHz of AD104 in the L4 configuration (" + _ADA + ")"),
    _g("A10", 86, 72, 6, 1695, gen=4, source=
       "NVIDIA A10 datasheet: PCIe Gen4 64 GB/s, no NVLink; 72 SMs, 6 MB L2, boost 1695 MHz ("
       + _GA102 + ")"),
    _g("RTX3080", 86, 68, 5, 1710, gen=4, p2p=False, source=
       _GA102 + ": GeForce RTX 3080 68 SMs, 5 MB L2, boost 1710 MHz, PCIe Gen4 x16, no NVLink; "
       + _GEFORCE_P2P),
    _g("RTX3090", 86, 82, 6, 1695, links=4, link=14.0625, gen=4, p2p=False,
       ring=AMPERE_RING, source=
       _GA102
       + ": GeForce RTX 3090 82 SMs, 6 MB L2, boost 1695 MHz, PCIe Gen4 x16, NVLink bridge to one "
         "peer '4 x2 links, 112.5 GB/s total "
         "bidirectional' (4 x 14.06 GB/s per direction); " + _GEFORCE_P2P + "; ring "
       "efficiency over the bridge assumed A100's"),
    _g("RTX4080", 89, 76, 64, 2505, gen=4, p2p=False, source=
       _ADA + ": GeForce RTX 4080 76 SMs, 64 MB L2, boost 2505 MHz, PCIe Gen4 x16, no NVLink; "
       + _GEFORCE_P2P),
    _g("RTX4090", 89, 128, 72, 2520, gen=4, p2p=False, source=
       _ADA + ": GeForce RTX 4090 128 SMs, 72 MB L2, boost 2520 MHz, PCIe Gen4 x16, no NVLink; "
       + _GEFORCE_P2P),
    _g("V100", 70, 80, 6, 1530, links=6, link=25.0, gen=3, ring=AMPERE_RING, form="sxm", source=
       _VOLTA + "; SXM2 board: boost 1530 MHz, six NVLink2 links x 25 GB/s per direction ('NVLink "
                "300 GB/s'); on NVSwitch in DGX-2 / HGX-2 (16 GPUs), the DGX-1 hybrid cube-mesh of "
                "8 is not modelled (each GPU links 6 of 7 peers: intra nvlink takes at most 7 "
                "GPUs); ring efficiency assumed A100's"),
    _g("V100-PCIE", 70, 80, 6, 1380, gen=3, source=
       _VOLTA + "; NVIDIA V100 PCIe datasheet: boost 1380 MHz, PCIe Gen3 32 GB/s bidirectional, no "
                "NVLink"),
    _g("V100S", 70, 80, 6, 1597, gen=3, source=
       _VOLTA + "; NVIDIA V100S PCIe datasheet: boost 1597 MHz, PCIe Gen3 32 GB/s bidirectional, "
                "no NVLink"),
    _g("T4", 75, 40, 4, 1590, gen=3, source=
       _TURING + ": Tesla T4 40 SMs, 4 MB L2, boost 1590 MHz; NVIDIA T4 datasheet: PCIe Gen3 x16, "
                 "no NVLink"),
    _g("RTX2080TI", 75, 68, 5.5, 1545, links=2, link=25.0, gen=3, p2p=False, ring=AMPERE_RING,
       source=_TURING + ": GeForce RTX 2080 Ti 68 SMs, 5.5 MB L2, boost 1545 MHz, PCIe Gen3 x16; "
                        "NVLink bridge to one peer, two x8 links of 25 GB/s per direction (100 "
                        "GB/s total bidirectional); " + _GEFORCE_P2P
                        + "; ring efficiency over the bridge assumed A100's"),
    _g("RTX8000", 75, 72, 6, 1770, links=2, link=25.0, gen=3, ring=AMPERE_RING, source=
       _TURING + ": Quadro RTX 8000 (full TU102) 72 SMs, 6 MB L2, boost 1770 MHz, PCIe Gen3 x16; "
                 "Quadro RTX 8000 datasheet: NVLink bridge 100 GB/s bidirectional to one peer; "
                 "ring efficiency assumed A100's"),
    _g("A30", 80, 56, 24, 1440, links=4, link=25.0, gen=4, ring=AMPERE_RING, source=
       "NVIDIA A30 datasheet: 56 SMs (3584 FP32 cores / 64), 24 MB L2, boost 1440 MHz, PCIe Gen4 "
       "64 GB/s, third-generation NVLink bridge 200 GB/s to one peer (4 links x 25 GB/s per "
       "direction); ring efficiency assumed the SXM A100's"),
    _g("A40", 86, 84, 6, 1740, links=4, link=14.0625, gen=4, ring=AMPERE_RING, source=
       _GA102 + ": A40 84 SMs, 6 MB L2, boost 1740 MHz; NVIDIA A40 datasheet: PCIe Gen4 64 GB/s, "
                "NVLink bridge to one peer 112.5 GB/s bidirectional (4 x 14.06 GB/s per "
                "direction); ring efficiency assumed A100's"),
    _g("A6000", 86, 84, 6, 1800, links=4, link=14.0625, gen=4, ring=AMPERE_RING, source=
       _GA102 + ": RTX A6000 84 SMs, 6 MB L2, boost 1800 MHz; NVIDIA RTX A6000 datasheet: PCIe "
                "Gen4 x16, NVLink bridge to one peer 112.5 GB/s bidirectional; ring efficiency "
                "assumed A100's"),
    _g("A10G", 86, 80, 6, 1710, gen=4, source=
       "AWS G5 instances' A10G (a GA102 part without an NVIDIA datasheet): 80 SMs, 6 MB L2 and "
       "boost 1710 MHz as deviceQuery reports them, PCIe Gen4, no NVLink (" + _GA102 +
       ")"),
    _g("L40", 89, 142, 96, 2490, gen=4, source=
       "NVIDIA L40 datasheet: PCIe Gen4 x16 64 GB/s bidirectional, no NVLink, 142 RT cores = 142 "
       "SMs, boost 2490 MHz; L2 assumed the full AD102's 96 MB (" + _ADA + ")"),
    _g("RTX5090", 120, 170, 96, 2407, gen=5, p2p=False, source=
       "NVIDIA RTX Blackwell GPU architecture whitepaper (2025): GeForce RTX 5090 170 SMs, 96 MB "
       "L2, boost 2407 MHz, PCIe Gen5 x16, no NVLink; " + _GEFORCE_P2P),
    _g("GB10", 121, 48, 24, 2407, gen=5, form="superchip", source=
       "NVIDIA DGX Spark page: the GB10 Grace Blackwell superchip, a Blackwell GPU (6144 CUDA "
       "cores = 48 SMs) joined to a 20-core Grace CPU by NVLink-C2C over 128 GB of LPDDR5x (273 "
       "GB/s), ConnectX-7 200 Gb/s between systems (two PCIe Gen5 x4 endpoints per port, "
       "NVIDIA/dgx-spark-playbooks#102); one GPU a host, no NVLink to another GPU; L2 24 MB and "
       "clock (GB202's 2407 MHz) assumed (not published)"),
)}

# Words of a device name that pick the PCIe or NVL part of a base name ("NVIDIA H100 PCIe" ->
# H100-PCIE).
_VARIANTS = ("PCIE", "NVL")


def gpu_name(text: str) -> str:
    """The table's name for ``text``: any case, or a device name holding exactly one known part
    ("NVIDIA H100 80GB HBM3" -> H100, "NVIDIA A100-PCIE-40GB" -> A100-PCIE, "NVIDIA GeForce RTX
    4090" -> RTX4090, "NVIDIA H100 NVL" -> H100-NVL; "GH200" is not H200); else ``text`` in capitals
    (and the cluster refuses it by name)."""
    upper = re.sub(r"RTX[\s_-]*(\d{4})(?:[\s_-]*(TI)\b)?", r"RTX\1\2", str(text).upper())
    if upper in GPUS:
        return upper
    words = [w for w in re.split(r"[^A-Z0-9]+", upper) if w]
    bases = {w for w in words if w in GPUS}
    if len(bases) != 1:
        return upper
    base = bases.pop()
    variants = [f"{base}-{v}" for v in _VARIANTS if v in words and f"{base}-{v}" in GPUS]
    return variants[0] if len(variants) == 1 else base
