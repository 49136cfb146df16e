"""Why AllReduce is slower (or faster) than the hardware allows: one record per cause, in one table.

A ``Cause`` holds the evidence patterns matched on every line of every file (a weight each; counter
patterns say the opposite), the checks computed from parsed facts (``checks``, by label in
``collsim.diagnose.checks``), where it applies, what it does to large-message busbw (``effect``: the
range of measured / expected it produces), the fix to try, the file that would settle it, and a
citation: NCCL's documentation or a maintainer's public answer. ``prior`` orders causes that no line
speaks for: a judgment (how broadly a cause can produce a shortfall), not fitted to any case.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

DOCS = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
SET = r"(?: set by environment to |=)"   # "NCCL_X set by environment to V" (NCCL INFO) or NCCL_X=V


@dataclass(frozen=True)
class Pattern:
    regex: str
    weight: float
    says: str


@dataclass(frozen=True)
class Cause:
    label: str
    title: str
    patterns: tuple
    counter: tuple
    applies: str            # "multinode", "intranode", "nvls", "two_nodes", "any"
    # (lo, hi) of measured / expected large-message busbw; None: not a shortfall
    effect: tuple | None
    prior: float
    fix: str
    settle: tuple           # (kind of file that would settle it, what to run)
    source: str


P = Pattern
CAUSES = (
    Cause("sockets_instead_of_ib", "inter-node traffic over TCP sockets instead of InfiniBand/RoCE "
                                   "verbs",
          (P(r"via NET/Socket", 2.0, "a channel goes through NET/Socket"),
           P(r"Using network Socket", 1.5, "NCCL chose its socket transport"),
           P(r"NET/Socket : Using \[", 1.0, "NCCL's socket transport lists its interfaces"),
           P(r"NET/IB : No device found", 1.5, "NCCL found no IB/RoCE device"),
           P(r"NCCL_IB_DISABLE" + SET + r"1\b", 2.0, "IB turned off by NCCL_IB_DISABLE=1"),
           P(r"Failed to open libibverbs", 1.0, "libibverbs (rdma-core) could not be loaded")),
          counter=(P(r"via NET/IB|Using network IB|NET/IB : Using \[", -1.5, "NCCL uses IB verbs"),
                   ),
          applies="multinode", effect=(0.0, 0.4), prior=0.5,
          fix="unset NCCL_IB_DISABLE; install rdma-core/libibverbs and expose /dev/infiniband to "
              "the container (docker --device=/dev/infiniband, --cap-add=IPC_LOCK); check "
              "`ibstatus` shows ports ACTIVE",
          settle=("nccl-log", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET: 'NET/IB : Using' or "
                              "'NET/Socket' lines"),
          source=DOCS + "env.html#nccl-ib-disable"),
    Cause("gdr_disabled", "GPUDirect RDMA off: NIC traffic staged through host memory",
          (P(r"GPU Direct RDMA Disabled", 2.0, "NCCL says GPU Direct RDMA is disabled for an HCA"),
           P(r"use ring PXN \d GDR 0", 1.5, "rings connected without GPU Direct RDMA (GDR 0)"),
           P(r"NCCL_NET_GDR_LEVEL" + SET + r"(?:LOC|0)\b", 1.5, "NCCL_NET_GDR_LEVEL forbids GDR"),
           P(r"NCCL_IB_CUDA_SUPPORT" + SET + r"0\b", 1.5, "NCCL_IB_CUDA_SUPPORT=0 forbids GDR"),
           P(r"nvidia[-_]peermem.*(?:not found|not loaded|failed)|nv_peer_mem.*(?:not|fail)", 1.5,
             "the peer-memory kernel module is missing"),
           P(r"(?i)(?:haven'?t|have not|did "
             r"not|didn'?t|not)\s+(?:yet\s+)?(?:enabled?|installed?|loaded?|using)\s+"
             r"(?:the\s+)?(?:GPU ?Direct(?: RDMA)?|GDR(?:DMA)?|nvidia[-_]peermem|nv_peer_mem)", 1.5,
             "the user says GPUDirect RDMA is not enabled")),
          counter=(P(r"use ring PXN \d GDR 1|/GDRDMA|GPU Direct RDMA Enabled", -1.5,
                     "GDR is in use"),),
          applies="multinode", effect=(0.3, 0.85), prior=0.5,
          fix="load the peer-memory module (`sudo modprobe nvidia-peermem`, or DMA-BUF with a "
              "recent driver and kernel), then check the log says 'GDR 1' and '/GDRDMA'",
          settle=("nccl-log", "NCCL_DEBUG=INFO: 'use ring PXN . GDR .' and 'via NET/IB/./GDRDMA' "
                              "lines"),
          source="https://github.com/NVIDIA/nccl/issues/412 (sjeaugey: NIC on a GPU's PCI switch "
                 "and nvidia-peermem loaded; 'If the NIC is attached to the CPU getting 16 GB/s is "
                 "normal')"),
    Cause("acs_enabled", "PCI Access Control Services on: peer-to-peer PCI traffic detoured "
                         "through the CPU",
          (P(r"ACSCtl:.*SrcValid\+", 2.0, "a PCI bridge has ACS source validation on"),
           P(r"(?i)\bACS (?:is |was )?(?:enabled|on)\b", 1.0, "the user says ACS is enabled")),
          counter=(P(r"ACSCtl:\s*SrcValid-", -0.5, "a PCI bridge has ACS off"),),
          applies="pcie", effect=(0.1, 0.75), prior=0.45,
          fix="disable ACS in the BIOS (or `setpci -s BDF ECAP_ACS+6.w=0000` on each PCI switch, "
              "not persistent); inside VMs enable ATS instead",
          settle=("lspci", "sudo lspci -vvv | grep ACSCtl (SrcValid+ means ACS is on)"),
          source=DOCS + "troubleshooting.html#pci-access-control-services-acs"),
    Cause("nic_on_cpu_or_wrong_numa", "NIC far from the GPUs (through the CPU or the other socket)",
          (P(r"type \w+/(?:SYS|PHB)\b", 1.0, "NCCL's graph search reaches the NIC through the CPU"),
           ),
          counter=(), applies="multinode", effect=(0.3, 0.85), prior=0.45,
          fix="use the GPUs on the NIC's PCI switch (nvidia-smi topo -m: PIX/PXB), add a NIC per "
              "PCI switch, or bind processes to the NIC's NUMA node (mpirun --bind-to numa)",
          settle=("topology", "nvidia-smi topo -m (GPU-NIC cells PIX/PXB good, NODE/SYS/PHB "
                              "through the CPU)"),
          source="https://github.com/NVIDIA/nccl-tests/issues/128 (sjeaugey: 'only one NIC is "
                 "available (mlx5_0) ... You need GPUs 0 and/or GPU 1 to be able to use that NIC "
                 "with GDR')"),
    Cause("nic_link_rate", "a link negotiated below its rate (cable, port or PCIe width/speed)",
          (P(r"\(downgraded\)", 1.5, "a PCIe link runs below its capability"),
           P(r"state:\s*\d?:?\s*(?:DOWN|POLLING|INIT)\b|State: (?:Down|Polling|Initializing)", 0.5,
             "an IB port is not active")),
          counter=(), applies="multinode", effect=(0.2, 0.9), prior=0.4,
          fix="check `ibstatus`/`ibstat` rates on every node, reseat or replace cables negotiating "
              "below the NIC's rate, check `lspci -vv` LnkSta speed and width of NICs and GPUs",
          settle=("ib-status", "ibstatus (or ibstat, ibv_devinfo) on every node: 'rate:' of each "
                               "port"),
          source="https://github.com/NVIDIA/nccl/issues/307 (sjeaugey: 'The ibstat you provided "
                 "did show that both cables negociated 100G. The best performance you can get is "
                 "indeed 24 GB/s')"),
    Cause("too_few_channels", "fewer channels (SMs) than the links need",
          (P(r"NCCL_MAX_(?:NCHANNELS|CTAS)" + SET + r"[1-8]\b", 1.0, "channels capped by "
                                                                     "NCCL_MAX_NCHANNELS"),),
          counter=(), applies="any", effect=(0.1, 0.8), prior=0.3,
          fix="unset NCCL_MAX_NCHANNELS / NCCL_MAX_CTAS (or raise NCCL_MIN_NCHANNELS), then check "
              "'N coll channels'",
          settle=("nccl-log", "NCCL_DEBUG=INFO: the 'N coll channels, ... nvls channels' line"),
          source="https://github.com/NVIDIA/nccl/issues/652 (sjeaugey: 'Make sure to use enough "
                 "channels (set NCCL_MIN_NCHANNELS to 8 or 16)')"),
    Cause("nvls_disabled_or_unavailable", "NVLink SHARP (NVLS) not used on an NVSwitch system that "
                                          "has it",
          (P(r"NVLS multicast support is not available", 2.0, "NCCL found no NVLS multicast"),
           P(r"NCCL_NVLS_ENABLE" + SET + r"0\b", 2.0, "NVLS turned off by NCCL_NVLS_ENABLE=0"),
           P(r"NCCL_ALGO" + SET + r"\^?[Rr][Ii][Nn][Gg]\b", 0.5,
             "NCCL_ALGO limits the algorithms")),
          counter=(), applies="nvls", effect=(0.6, 0.9), prior=0.3,
          fix="run nvidia-fabricmanager (and IMEX where needed), a driver and NCCL (2.17+) with "
              "NVLS, unset NCCL_NVLS_ENABLE=0; on 8 H100 expect ~480 GB/s busbw with NVLS, ~370 "
              "GB/s without",
          settle=("nccl-log", "NCCL_DEBUG=INFO: the 'nvls channels' count and NVLS lines"),
          source="https://github.com/NVIDIA/nccl-tests/issues/212 (sjeaugey: 'allreduce uses "
                 "NVLink SHARP by default ... On 8 GPUs, you should reach a peak busBw of "
                 "~480GB/s')"),
    Cause("two_node_tree_anomaly", "busbw above the network bound on two nodes: Tree/NVLSTree, not "
                                   "an error",
          (), counter=(), applies="two_nodes", effect=None, prior=0.2,
          fix="nothing is wrong: on 2 nodes Tree (NVLSTree) sends half the traffic over the "
              "network; to measure the network run with NCCL_ALGO=Ring, or on 4 nodes or more",
          settle=("ib-status", "the NIC count and rate (ibstatus), to compare busbw with the "
                               "network bound"),
          source="https://github.com/NVIDIA/nccl-tests/issues/196 (sjeaugey: 'On two nodes, NCCL "
                 "uses the tree (or nvlstree) algorithm which can indeed go beyond the network "
                 "bottleneck')"),
    Cause("p2p_disabled_or_shm", "GPU peer-to-peer off: traffic through host shared memory (SHM)",
          (P(r"via SHM|via direct shared memory", 1.5, "a channel goes through shared host memory"),
           P(r"NCCL_P2P_DISABLE" + SET + r"1\b", 2.0, "P2P turned off by NCCL_P2P_DISABLE=1"),
           P(r"NCCL_P2P_LEVEL" + SET + r"(?:LOC|0)\b", 2.0, "NCCL_P2P_LEVEL=LOC forbids P2P"),
           P(r"CANNOT Access Peer|peer access is not supported", 1.0,
             "CUDA reports no peer access")),
          counter=(P(r"via P2P/", -1.0, "channels use P2P"),),
          applies="intranode", effect=(0.02, 0.6), prior=0.35,
          fix="unset NCCL_P2P_DISABLE / NCCL_P2P_LEVEL; if P2P hangs without them, fix ACS/IOMMU "
              "instead",
          settle=("nccl-log",
                  "NCCL_DEBUG=INFO: 'via P2P/...' or 'via SHM/...' on the Channel lines"),
          source="https://github.com/NVIDIA/nccl-tests/issues/228 (kiskra-nvidia: 'NCCL_P2P_LEVEL "
                 "set by environment to LOC ... This forces P2P off. Please unset this variable')"),
    Cause("wrong_interface", "the wrong network interface or HCA (docker/loopback bridge, HCAs "
                             "left out)",
          (P(r"NET/Socket : Using "
             r".*\](?:docker\d*|lo|virbr\d*|br-[0-9a-f]+|veth\w*|tunl\d*|cni\d*):", 1.5,
             "sockets on a virtual or loopback interface"),
           P(r"No usable listening interface|no socket interface found|Socket creation failed", 1.5,
             "NCCL found no usable interface"),
           P(r"NCCL_IB_HCA" + SET, 0.3, "HCAs chosen by hand with NCCL_IB_HCA")),
          counter=(), applies="multinode", effect=(0.05, 0.8), prior=0.35,
          fix="set NCCL_SOCKET_IFNAME to the real interface (default ^lo,docker) and NCCL_IB_HCA "
              "to every HCA that carries traffic, or unset them",
          settle=("nccl-log", "NCCL_DEBUG=INFO: 'NET/IB : Using [0]...' lists the HCAs, "
                              "'NET/Socket : Using' the interfaces"),
          source=DOCS + "env.html#nccl-socket-ifname"),
    Cause("slow_or_bad_node", "one slow node (or its links) holds the whole ring back",
          (P(r"Got completion .*with error|NCCL WARN NET/IB.*(?:error|timeout)", 1.0,
             "IB errors on a node"),),
          counter=(), applies="multinode", effect=(0.2, 0.95), prior=0.35,
          fix="test nodes pair by pair (or halves of the node list) and leave out the node common "
              "to slow runs; check its ibstatus, GPU clocks and PCIe links",
          settle=("nccl-tests", "nccl-tests runs on node pairs (one file per pair, or a 'host,host "
                                "busbw' table)"),
          source="https://github.com/NVIDIA/nccl-tests/issues/106 (sjeaugey: 'From what you tried, "
                 "I'd say that node 644 has a problem and is slow')"),
    Cause("iommu", "IOMMU translating GPU peer-to-peer and NIC DMA",
          (P(r"\b(?:intel_iommu|amd_iommu)=on\b", 1.5, "the kernel runs with the IOMMU on"),
           P(r"IO_PAGE_FAULT|DMAR: \[DMA|AMD-Vi: Event logged", 2.0, "IOMMU faults in the kernel "
                                                                     "log"),
           P(r"DMAR: IOMMU enabled|Default domain type: Translated", 1.5,
             "the IOMMU translates DMA")),
          counter=(P(r"\biommu=pt\b|(?:intel|amd)_iommu=off", -1.0, "IOMMU in pass-through or off"),
                   ),
          applies="any", effect=(0.05, 0.8), prior=0.3,
          fix="boot with iommu=pt (or intel_iommu=off / amd_iommu=off), or disable IOMMU/VT-d in "
              "the BIOS",
          settle=("kernel", "cat /proc/cmdline; dmesg | grep -i -e DMAR -e IOMMU -e AMD-Vi"),
          source="https://github.com/NVIDIA/nccl-tests/issues/115 (sjeaugey: 'You may want to "
                 "disable iommu by adding \"iommu=pt\" to the kernel launch arguments')"),
    Cause("cpu_binding", "processes bound to the wrong cores or NUMA node (network progress "
                         "starved)",
          (P(r"NCCL_IGNORE_CPU_AFFINITY" + SET + r"1\b", 1.0, "NCCL told to ignore the GPUs' CPU "
                                                              "affinity"),
           P(r"--?bind-to[\s=]+core\b|--cpu-bind[=\s]+(?:cores|threads)", 1.0, "each rank bound to "
                                                                               "one core")),
          counter=(P(r"--?bind-to[\s=]+numa\b", -1.0, "ranks bound to NUMA nodes"),),
          applies="multinode", effect=(0.6, 0.98), prior=0.3,
          fix="bind each rank to its GPU's NUMA node (mpirun --bind-to numa; srun --cpu-bind=... "
              "with the GPU's cores), do not set NCCL_IGNORE_CPU_AFFINITY",
          settle=("environment", "the launcher command line (mpirun/srun flags)"),
          source="https://github.com/NVIDIA/nccl-tests/issues/297 (sjeaugey: 'running with mpirun "
                 "--bind-to numa is advised ... your processes may be bound to a single core')"),
    Cause("nccl_version_regression", "a different NCCL version runs slower on this machine",
          (), counter=(), applies="any", effect=(0.05, 0.95), prior=0.2,
          fix="run the same test with both NCCL versions (LD_LIBRARY_PATH or the wheel), compare "
              "their NCCL_DEBUG INFO logs (channels, algorithms, topology), and report the "
              "regression with both logs",
          settle=("nccl-tests", "the same nccl-tests run with the other NCCL version"),
          source="https://github.com/NVIDIA/nccl/issues/1298 (sjeaugey, 2.18 against 2.20: 'it "
                 "could just be small differences in code efficiency between the two'; on g5 a "
                 "topology file helped)"),
    Cause("measurement_error", "the measurement does not measure what was meant",
          (P(r"Out of bounds values\s*:\s*[1-9]", 1.5, "nccl-tests found wrong results"),),
          counter=(), applies="any", effect=None, prior=0.2,
          fix="build nccl-tests with MPI=1 (make clean first) and launch one run across the nodes; "
              "time large sizes (-e 8G), read busbw at the largest sizes, not '# Avg bus "
              "bandwidth'; no COLL/TUNING logging",
          settle=("nccl-tests", "one nccl-tests run over all nodes, with its '# Rank' lines"),
          source="https://github.com/NVIDIA/nccl-tests/issues/27 (kwen2501: 'You would probably "
                 "need to clean the previous build first via make clean before building again with "
                 "MPI')"),
    Cause("expected_performance", "the measurement is within what this hardware should give",
          (), counter=(), applies="any", effect=None, prior=0.0,
          fix="nothing to fix; compare busbw at the largest sizes with the expected range above",
          settle=("nccl-tests", "nccl-tests output up to -e 8G"),
          source="https://github.com/NVIDIA/nccl-tests/issues/290 (AddyLaddy: '476GB/s looks to be "
                 "in the expected range for H100 ... For NDR @ 400Gbps you should see 46-48GB/s "
                 "per NIC')"),
)

BY_LABEL = {c.label: c for c in CAUSES}
LABELS = tuple(BY_LABEL)
COMPILED = {c.label: ([(re.compile(p.regex), p) for p in c.patterns],
                      [(re.compile(p.regex), p) for p in c.counter]) for c in CAUSES}
