"""runners/allreduce_bench.py under torchrun with the gloo backend on CPU (2 and 4 processes).

Each torchrun start costs seconds, so each launch checks several things at once.
"""
import os
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collsim.measure import load

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "runners" / "allreduce_bench.py"
sys.path.insert(0, str(REPO / "runners"))
import common as bench_support  # noqa: E402

pytestmark = pytest.mark.slow


def torchrun(nproc, *args, fault=None, timeout=90, file_limit=None):
    """Run the bench under torchrun; ``file_limit``: the largest file (bytes) it may write, as
    a full disk would stop it (RLIMIT_FSIZE, with SIGXFSZ ignored so writes fail with EFBIG).
    Returns (the finished process, seconds from start to exit, seconds from the fault's
    message to exit or None)."""
    env = {k: v for k, v in os.environ.items() if k != "COLLSIM_TEST_FAULT"}
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    if fault:
        env["COLLSIM_TEST_FAULT"] = fault
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           str(BENCH), "--backend", "gloo", *args]

    def limit():
        if file_limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=limit)
    streams, fault_at = {p.stdout: b"", p.stderr: b""}, None
    while p.poll() is None or any(not s.closed for s in streams):
        if time.monotonic() - t0 > timeout:
            p.kill()
            raise subprocess.TimeoutExpired(cmd, timeout)
        ready, _, _ = select.select([s for s in streams if not s.closed], [], [], 0.1)
        for s in ready:
            chunk = os.read(s.fileno(), 65536)
            if not chunk:
                s.close()
            streams[s] += chunk
        if fault_at is None and b"test fault" in streams[p.stderr]:
            fault_at = time.monotonic()
    end = time.monotonic()
    p.wait()
    p.stdout, p.stderr = (streams[s].decode(errors="replace") for s in list(streams))
    return p, end - t0, None if fault_at is None else end - fault_at


def test_two_ranks_in_place(tmp_path):
    out = tmp_path / "g2.jsonl"
    p, _, _ = torchrun(2, "-b", "8", "-e", "256K", "-f", "4", "-w", "1", "-n", "3", "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    m = load(out)
    assert m.size.tolist() == [8 * 4**i for i in range(8)] and m.count.tolist() == [2 * 4**i for i in range(8)]
    assert m.wrong.tolist() == [0] * 8 and (m.time_us > 0).all()
    assert m.busbw_GBps.tolist() == pytest.approx(m.algbw_GBps.tolist())  # 2(n-1)/n = 1 for n = 2
    assert (m["time_us_min"] <= m.time_us).all()
    meta = m.meta
    assert meta["world_size"] == 2 and meta["nodes"] == 1 and meta["backend"] == "gloo"
    assert meta["timing"] == "host" and meta["inplace"] is True and len(meta["ranks"]) == 2
    assert meta["rotate"] is False
    assert meta["env"]["NCCL_NVLS_ENABLE"] == "0" and "allreduce_bench.py" in meta["command"]
    assert meta["time_combine"].startswith("time_us: max over ranks")
    assert (m["time_us_min"] <= m["time_us_mean"]).all() and (m["time_us_mean"] <= m.time_us).all()


def test_four_ranks_out_of_place_bf16_and_the_check_catches_corruption(tmp_path):
    out = tmp_path / "g4.jsonl"
    p, _, _ = torchrun(4, "--sizes", "8,4K,64K,1M", "--dtype", "bfloat16", "--out-of-place", "--rotate", "-w", "1",
                    "-n", "2", "--out", str(out), fault="corrupt@rank2:size=4096")
    assert p.returncode == 0, p.stderr[-2000:]
    m = load(out)
    assert m.size.tolist() == [8, 4096, 65536, 1 << 20] and set(m.dtype) == {"bfloat16"}
    assert m.wrong.tolist() == [0, 1, 0, 0]  # the injected error is seen, nothing else
    assert m.busbw_GBps.tolist() == pytest.approx([a * 1.5 for a in m.algbw_GBps])
    assert m.meta["world_size"] == 4 and m.meta["inplace"] is False and set(m.inplace) == {False}
    assert m.meta["rotate"] is True


@pytest.mark.parametrize("kind, rank", [("die", 0), ("term", 1), ("stop", 1)])
def test_dead_or_hung_rank_ends_the_run_and_keeps_records(tmp_path, kind, rank):
    """A rank that dies (the writer, as kill -9 would end it) or gets SIGTERM ends the run at
    once; one that is stopped (SIGSTOP: the hardest hang, it cannot even take torchrun's SIGTERM)
    after --timeout plus a few seconds, not torchrun's 30 s wait; one clear line says which rank
    saw what, and every completed size is kept."""
    out = tmp_path / f"{kind}.jsonl"
    p, elapsed, after_fault = torchrun(2, "-b", "8", "-e", "4K", "-f", "2", "-w", "1", "-n", "2", "--timeout", "4",
                                       "--out", str(out), fault=f"{kind}@rank{rank}:size=1024")
    assert p.returncode != 0 and after_fault is not None
    assert after_fault < (4 + 6 if kind == "stop" else 6), (after_fault, p.stderr[-2000:])  # 30 s and more before
    assert f"test fault: rank {rank} {kind}s at size 1024" in p.stderr
    if kind != "die":  # the writer's death: torchrun may end rank 1 before it notices
        assert f"allreduce_bench: error: rank {1 - rank}:" in p.stderr, p.stderr[-2000:]
    m = load(out)  # strict: every line that was written is whole, valid JSON
    assert m.size.tolist() == [8, 16, 32, 64, 128, 256, 512] and m.wrong.tolist() == [0] * 7


def test_a_full_disk_leaves_no_torn_line(tmp_path):
    out = tmp_path / "full.jsonl"
    p, _, _ = torchrun(2, "-b", "8", "-e", "4K", "-w", "1", "-n", "2", "--out", str(out), file_limit=3000)
    assert p.returncode == 1
    line = [ln for ln in p.stderr.splitlines() if "allreduce_bench: error: rank 0:" in ln]
    assert len(line) == 1 and f"cannot write {out}: File too large; it keeps its" in line[0], p.stderr[-2000:]
    text = out.read_bytes()
    kept = int(line[0].split("keeps its ")[1].split()[0])
    assert text.endswith(b"\n") and len(text) <= 3000 and len(text.splitlines()) == kept
    m = load(out)
    assert 1 <= len(m) < 10 and m.size.tolist() == [8 * 2**i for i in range(len(m))]


@pytest.mark.parametrize("args, message", [
    (["-b", "1M", "-e", "8"], "-b 1M is larger than -e 8"),
    (["-e", "12Q"], "bad size '12Q'"),
    (["--dtype", "float7"], "invalid choice: 'float7'"),
    (["--algo", "Spiral"], "unknown NCCL algorithm 'Spiral'"),
    (["--backend", "gloo", "--timing", "graph"], "--timing graph needs --backend nccl"),
    (["--backend", "gloo", "--algo", "Ring"], "--algo and --proto (NCCL_ALGO, NCCL_PROTO) need --backend nccl"),
    (["-n", "0"], "need -w >= 0, -n >= 1"),
    (["--timeout", "nan"], "--timeout must be a number of seconds > 0"),
    (["--timeout", "inf"], "--timeout must be a number of seconds > 0"),
    (["--timeout", "0"], "--timeout must be a number of seconds > 0"),
    (["--timeout", "-5"], "--timeout must be a number of seconds > 0"),
    (["--sizes", ""], "--sizes '' names no size"),
    (["--sizes", " , "], "--sizes ' , ' names no size"),
    (["--sizes", "1,3", "--dtype", "float32"], "no size holds a whole float32 element"),
    (["--quick", "--algo", "Ring"], "--quick runs its own five sizes with NCCL's choice: drop --algo"),
    (["--quick", "-e", "1M"], "drop -e"),
])
def test_bad_arguments_one_line_exit_2(args, message):
    p = subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "RANK": "0", "WORLD_SIZE": "2"})
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("allreduce_bench: error: ")
    assert message in p.stderr


def test_bad_arguments_print_on_every_rank(monkeypatch, capsys):
    """Every torchrun rank parses the same bad line and prints its own one line (torchrun may stop
    rank 0 when rank 1 exits first: a message from rank 0 alone can vanish, issue 29)."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    for rank in ("0", "1"):
        monkeypatch.setenv("RANK", rank)
        with pytest.raises(SystemExit) as e:
            bench_support.parse_args(["-e", "12Q"])
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"allreduce_bench: error: rank {rank}: ") and "bad size '12Q'" in err, err


def test_emulated_nodes_env_and_sweep():
    args = bench_support.build_parser().parse_args(["--emulate-nodes", "2", "--algo", "Ring", "--proto", "LL"])
    envs = [bench_support.rank_env(args, r, 4, {}) for r in range(4)]
    assert [e["NCCL_HOSTID"] for e in envs] == ["collsim-node0"] * 2 + ["collsim-node1"] * 2
    assert all(e["NCCL_SOCKET_IFNAME"] == "lo" and e["NCCL_ALGO"] == "Ring" and e["NCCL_PROTO"] == "LL"
               and e["NCCL_NVLS_ENABLE"] == "0" and e["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
               and e["NVSHMEM_DISABLE_NVLS"] == "1" for e in envs)
    assert "NCCL_SOCKET_IFNAME" not in bench_support.rank_env(args, 0, 4, {"NCCL_SOCKET_IFNAME": "eth0"})
    args = bench_support.build_parser().parse_args(["-b", "6", "-e", "100", "-f", "3", "--dtype", "float64"])
    assert bench_support.sweep(args) == [16, 48]  # 6, 18, 54 floored to whole 8-byte elements; 6 holds none


def test_node_count_check():
    sys.modules.setdefault("common", bench_support)
    import nccl_probe
    nccl_probe.check_node_count(2, 2, "/tmp/x")
    for reported in (1, None):
        with pytest.raises(bench_support.BenchError, match=f"--emulate-nodes 2: NCCL reports nNodes {reported}"):
            nccl_probe.check_node_count(2, reported, "/tmp/x")


def test_launch_probe_reruns_the_bench_with_nccl_info_logging(monkeypatch, tmp_path):
    sys.modules.setdefault("common", bench_support)
    import nccl_probe
    monkeypatch.setattr(sys, "argv", [str(BENCH), "-b", "8", "-e", "1K"])
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    seen = {}
    monkeypatch.setattr(nccl_probe.subprocess, "Popen", lambda cmd, env, **kw: seen.update(cmd=cmd, env=env))
    nccl_probe.launch_probe(None, 1, 2, "127.0.0.1", 1234, str(tmp_path))
    assert seen["cmd"] == [sys.executable, str(BENCH), "-b", "8", "-e", "1K"]
    env = seen["env"]
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,GRAPH,TUNING"
    assert env["NCCL_DEBUG_FILE"] == str(tmp_path / "probe.1.log") and env["COLLSIM_PROBE"] == "127.0.0.1:1234"
    assert env["RANK"] == "1" and env["WORLD_SIZE"] == "2" and "TORCHELASTIC_RUN_ID" not in env


def test_graph_timing_turns_off_nccl_graph_mixing_unless_set():
    graph = bench_support.build_parser().parse_args(["--timing", "graph"])
    eager = bench_support.build_parser().parse_args(["--timing", "eager"])
    assert bench_support.rank_env(graph, 0, 2, {})["NCCL_GRAPH_MIXING_SUPPORT"] == "0"
    assert "NCCL_GRAPH_MIXING_SUPPORT" not in bench_support.rank_env(eager, 0, 2, {})
    assert "NCCL_GRAPH_MIXING_SUPPORT" not in bench_support.rank_env(graph, 0, 2, {"NCCL_GRAPH_MIXING_SUPPORT": "1"})


def test_quick_measures_the_five_sizes_collsim_fit_calibrates_on(monkeypatch):
    from collsim.inputs import QUICK_SIZES
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = bench_support.parse_args(["--quick"])
    assert tuple(args.size_list) == QUICK_SIZES == (8, 64 << 10, 8 << 20, 256 << 20, 1 << 30)
    assert args.algo is None and args.proto is None
