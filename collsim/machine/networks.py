"""What each network between nodes brings, with the source of every number (``NETS``).

``ib`` and ``roce`` run NCCL's own IB verbs transport (src/transport/net_ib.cc) with GPUDirect RDMA;
``tcp`` NCCL's socket transport through host memory (net_socket.cc); ``efa`` AWS's Elastic Fabric
Adapter through the libfabric net plugin aws-ofi-nccl (GPUDirect RDMA on p4d/p5); ``tcpx`` Google's
GPUDirect-TCPX/TCPXO net plugins (nccl-plugin-gpudirecttcpx: TCP whose payload goes between GPU
memory and the NIC without host copies); ``slingshot`` HPE Slingshot 11 (Cassini NICs) through
libfabric's CXI provider and the same aws-ofi-nccl plugin. ``Net.transport`` says whose code moves
the bytes: NCCL's IB verbs (``verbs``), NCCL's sockets (``socket``) or a net plugin (``plugin``).
``efficiency`` is the share of a NIC's line rate NCCL's ring reaches on a healthy fabric; a fabric
that delivers less is described by ``Cluster.fabric_efficiency``.
"""
from __future__ import annotations

from dataclasses import dataclass

AWS_OFI = "aws/aws-ofi-nccl v1.21.1"


@dataclass(frozen=True)
class Net:
    """One network class between nodes.

    efficiency: ring bandwidth per NIC / the NIC's line rate; rdma: GPU memory goes to the wire
    without the host (GPUDirect RDMA, or TCPX's device-memory TCP); plugin_latency_us: the latency
    the net plugin reports to NCCL (``ncclNetProperties_t.latency``, NCCL's ``graph->latencyInter``,
    search.cc:685@v2.28.9; NCCL's own transports report 0, net_ib.cc:945, net_socket.cc:120);
    groups_nics: the plugin presents the NICs nearest a GPU as one device of their summed speed (so
    a node may have more NICs than GPUs); hop_us: the time one small message takes to cross the
    network from GPU to GPU on this transport (None: NCCL's own NET latency per hop for RDMA, the
    socket step measured on our emulated nodes for sockets); transport: "verbs" (NCCL's net_ib.cc:
    NCCL_IB_DISABLE turns it into sockets), "socket" (net_socket.cc) or "plugin" (a net plugin NCCL
    loads); tcp: every network step is a TCP exchange (sockets, and TCPX's device-memory TCP);
    source: where each number comes from.
    """

    name: str
    efficiency: float
    rdma: bool
    plugin_latency_us: float
    groups_nics: bool
    source: str
    hop_us: float | None = None
    transport: str = "verbs"
    tcp: bool = False


# L15: 392.69 GB/s ring busbw at 8 GiB across 8 x 400 Gb/s NICs = 49.1 GB/s per 50 GB/s NIC;
# AddyLaddy (NVIDIA/nccl-tests#319): "up to ~396GB/s with the RING protocol" on 8 x CX-7 400G.
IB_EFFICIENCY = 392.69 / 400.0
EFA_EFFICIENCY = round(0.85 * 0.722, 3)

NETS: dict[str, Net] = {
    "ib": Net("ib", IB_EFFICIENCY, True, 0.0, False,
              "InfiniBand with GPUDirect RDMA: 392.69 GB/s ring busbw on 8 x 400 Gb/s NICs "
              "(calibration log L15), 0.98 of line rate; AddyLaddy on NVIDIA/nccl-tests#319: ~396 "
              "GB/s"),
    # RoCE runs the same NCCL IB transport (verbs) over Ethernet; no maintainer figure per NIC
    # (user reports 320-430 GB/s busbw on 8 x 400G RoCE, NVIDIA/nccl#1221): taken as InfiniBand.
    "roce": Net("roce", IB_EFFICIENCY, True, 0.0, False,
                "RoCE v2 uses NCCL's IB (verbs) transport; no maintainer figure per NIC, user "
                "reports of 320-430 GB/s busbw on 8 x 400G RoCE (NVIDIA/nccl#1221): InfiniBand's "
                "efficiency assumed"),
    # Slingshot 11: 200 Gb/s Cassini NICs, libfabric's CXI provider under aws-ofi-nccl, GPU
    # memory registered with FI_HMEM (GPUDirect RDMA). Off AWS the plugin reports
    # OFI_NCCL_NET_LATENCY, default 0 (nccl_ofi_param.h:221, nccl_ofi_net.cpp:481 at
    # aws/aws-ofi-nccl 2daf7d3). Raw fi_write ceiling ~24.3 GB/s per 25 GB/s NIC
    # (uccl-project/uccl#956); NCCL's ring assumed to reach it.
    "slingshot": Net("slingshot", round(24.3 / 25.0, 3), True, 0.0, False,
                     "HPE Slingshot 11 through libfabric's CXI provider and the aws-ofi-nccl net "
                     "plugin (GPUDirect RDMA through FI_HMEM); plugin latency 0, the "
                     "OFI_NCCL_NET_LATENCY default off AWS (aws-ofi-nccl nccl_ofi_param.h:221, "
                     "nccl_ofi_net.cpp:481); efficiency 0.972, the raw fi_write ceiling of ~24.3 "
                     "GB/s per 200 Gb/s NIC (uccl-project/uccl#956), NCCL's ring assumed to reach "
                     "it; per-message latency NCCL's own NET figures (no public NCCL log on "
                     "Slingshot found)", transport="plugin"),
    # NCCL's socket transport copies through host memory with NCCL_SOCKET_NTHREADS x
    # NCCL_NSOCKS_PERTHREAD connections; no published per-NIC figure: an assumed half of line rate.
    "tcp": Net("tcp", 0.5, False, 0.0, False,
               "NCCL socket transport (TCP through host memory): no published per-NIC figure; half "
               "the line rate assumed", transport="socket", tcp=True),
    # aws-ofi-nccl: platform-aws.cpp:83-160 (p4d, p5/p5e: latency 75 us, GPUDirect RDMA required;
    # p5en and p6-b200: 35 us); on p5 the RDMA protocol groups the 4 EFA NICs nearest each GPU into
    # one NCCL device (nccl_ofi_topo.cpp:1092-1143) and reports 4 x their speed
    # (nccl_ofi_rdma.cpp:410-413). P03 (2 x p4d, NCCL 2.9.9, 1 GiB: 35215 us): a fit of its 1 GiB
    # row gave 0.722 of the 0.85 first assumed, so 0.614 (data/public/README.md; checked on P04-P06,
    # not fitted on them).
    "efa": Net("efa", EFA_EFFICIENCY, True, 75.0, True,
               f"AWS EFA through libfabric and the aws-ofi-nccl net plugin ({AWS_OFI}): GPUDirect "
               "RDMA on p4d/p5, the plugin reports 75 us latency on p4d and p5 "
               "(platform-aws.cpp:83-140; 35 us on p5en/p6, set OFI_NCCL_NET_LATENCY) and on p5 "
               "groups the 4 NICs nearest each GPU into one device of 4 x their speed "
               "(nccl_ofi_topo.cpp:1092-1143, nccl_ofi_rdma.cpp:410-413); efficiency 0.614 of line "
               "rate calibrated on the public 2 x p4d log P03 (NVIDIA/nccl#527, NCCL 2.9.9; "
               "data/public/README.md); a network hop of a small message 30 us, calibrated on the "
               "public 4 x p4d log P05's 64 B-16 KiB rows (NVIDIA/nccl#527: 164 us at 64 "
               "B)", hop_us=30.0, transport="plugin"),
    "tcpx": Net("tcpx", 0.85, True, 0.0, False,
                "GPUDirect-TCPX / TCPXO net plugins (Google Cloud A3 / A3 Mega: 4 or 8 x 200 Gb/s "
                "per node, payload between GPU memory and the NIC without host copies): efficiency "
                "0.85 of line rate and no plugin latency assumed (no published per-NIC figure; see "
                "data/public/README.md); a network hop of a small message 55 us, calibrated on the "
                "public 2 x 8 H100 A3 Mega log P01's "
                "8 B-4 KiB rows (123 us at 8 B-512 B)", hop_us=55.0, transport="plugin", tcp=True),
}

# SHARP (``sharp: true``: InfiniBand switches that reduce, NCCL's CollNet): the latency the switches
# add to a reduction (``Topology.sharp_us``). Graham et al., "Scalable Hierarchical Aggregation
# Protocol (SHArP): A Hardware Architecture for Efficient Data Reduction", COMHPC@SC 2016
# (doi:10.1109/COMHPC.2016.006): an 8-byte MPI_Allreduce on 128 hosts takes 2.83 us through SHArP
# (6.01 us host-based); taken whole as the switches' share (an upper bound: it includes the hosts'
# own NIC crossings, which the simulation charges apart). Bandwidth: SHARP's streaming aggregation
# reduces at about 96% of point-to-point bandwidth on HDR (Graham et al., "SHARP
# Streaming-Aggregation Hardware Design and Evaluation", ISC 2020), so the switches add no limit
# beyond the NICs'.
SHARP_US = 2.83
SHARP_SOURCE = ("SHARP: the switches reduce at line rate and add 2.83 us (an 8-byte MPI_Allreduce "
                "on 128 hosts through SHArP, Graham et al., COMHPC@SC 2016, "
                "doi:10.1109/COMHPC.2016.006; streaming aggregation at ~96% of point-to-point "
                "bandwidth, ISC 2020)")
