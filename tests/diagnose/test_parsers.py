"""collsim.diagnose.parsers: nvidia-smi topo -m, ibstatus/ibstat/ibv_devinfo, NCCL_* settings, command lines,
host-pair tables, each with its line numbers."""
from collsim.diagnose import parsers

TOPO = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV18\tPIX\t0-47\t0
GPU1\tNV18\t X \tSYS\t48-95\t1
NIC0\tPIX\tSYS\t X
NIC Legend:
  NIC0: mlx5_0
""".splitlines()


def test_topology_matrix_cells_rows_and_nic_names():
    t = parsers.topo_matrix(TOPO)
    assert t["gpus"] == ["GPU0", "GPU1"] and t["nics"] == ["NIC0"]
    assert t["cells"][("GPU1", "NIC0")] == "SYS" and t["cells"][("GPU0", "GPU1")] == "NV18"
    assert t["rows"] == {"GPU0": 2, "GPU1": 3, "NIC0": 4} and t["names"] == {"NIC0": "mlx5_0"}
    assert t["numa"] == {"GPU0": "0", "GPU1": "1"}
    assert parsers.topo_matrix(["GPU0 is fine", "nothing here"]) is None


def test_ib_ports_from_ibstatus_ibstat_and_ibv_devinfo():
    ibstatus = ["Infiniband device 'mlx5_3' port 1 status:", "\tstate:\t\t 4: ACTIVE", "\trate:\t\t 40 Gb/sec (4X)",
                "\tlink_layer:\t InfiniBand", "Infiniband device 'mlx5_4' port 1 status:", "\tstate:\t 1: DOWN"]
    ports = parsers.ib_ports(ibstatus)
    assert [(p["device"], p["state"], p["rate_Gbps"], p["line"]) for p in ports] == [
        ("mlx5_3", "ACTIVE", 40.0, 1), ("mlx5_4", "DOWN", None, 5)]
    assert ports[0]["rate_line"] == 3 and "rate_line" not in ports[1]
    ibstat = ["CA 'mlx5_5'", "\tCA type: MT4129", "\tPort 1:", "\t\tState: Active", "\t\tRate: 400",
              "\t\tLink layer: InfiniBand"]
    assert [(p["device"], p["state"], p["rate_Gbps"]) for p in parsers.ib_ports(ibstat)] == [("mlx5_5", "ACTIVE", 400)]
    devinfo = ["hca_id:\tmlx5_0", "\t\tport:\t1", "\t\t\tstate:\t\t\tPORT_ACTIVE (4)", "\t\t\tactive_width:\t\t4X (2)",
               "\t\t\tactive_speed:\t\t25.0 Gbps (32)", "\t\t\tlink_layer:\t\tEthernet"]
    (p,) = parsers.ib_ports(devinfo)
    assert (p["state"], p["rate_Gbps"], p["link_layer"]) == ("ACTIVE", 100.0, "Ethernet")
    assert parsers.ib_ports(["rate: 100 Gb/sec with no device"]) == []


def test_nccl_env_from_logs_launchers_and_shells():
    env = parsers.nccl_env([
        "host:1:2 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC",
        "mpirun -x NCCL_IB_HCA=mlx5_0,mlx5_1 -x NCCL_ALGO='Ring' ./all_reduce_perf",
        "export NCCL_IB_DISABLE=1", "NCCL_DEBUG=INFO ./build/all_reduce_perf -g 8", "NCCL_IB_HCA set to mlx5_0"])
    assert env == {"NCCL_P2P_LEVEL": ("LOC", 1), "NCCL_IB_HCA": ("mlx5_0", 5), "NCCL_ALGO": ("Ring", 2),
                   "NCCL_IB_DISABLE": ("1", 3), "NCCL_DEBUG": ("INFO", 4)}


def test_command_lines_and_their_flags():
    (c,) = parsers.commands(["mpirun -np 16 -H a:8,b:8 --bind-to core ./build/all_reduce_perf -b 8 -e 8G -g 1"])
    assert (c["launcher"], c["np"], c["hosts"], c["bind_to"], c["gpus_per_process"]) == ("mpirun", 16, ["a", "b"],
                                                                                         "core", 1)
    (s,) = parsers.commands(["srun --ntasks-per-node=8 --cpu-bind=cores all_reduce_perf_mpi -b 1G"])
    assert (s["launcher"], s["per_node"], s["bind_to"]) == ("srun", 8, "cores")
    assert parsers.commands(["node:1:1 [0] NCCL INFO mpirun is mentioned"]) == []


def test_host_pair_tables_need_three_rows():
    rows = parsers.host_pairs(["gn644,gn699  49.36", "gn632,gn641 88.36  # comment", "gn641,gn644  49.30"])
    assert [(r["hosts"], r["busbw_GBps"], r["line"]) for r in rows] == [
        (["gn644", "gn699"], 49.36, 1), (["gn632", "gn641"], 88.36, 2), (["gn641", "gn644"], 49.3, 3)]
    assert parsers.host_pairs(["gn644,gn699  49.36", "gn632,gn641 88.36"]) == []
    assert parsers.host_pairs(["size count  8", "float sum 1", "alpha beta 2"]) == []   # hosts need a digit
