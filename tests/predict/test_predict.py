"""collsim predict-nccl: NCCL on a cluster from its description; the calibration logs L01 and L15
(the only public logs collsim is calibrated on: data/public/README.md)."""
import json
from pathlib import Path

import numpy as np
import pytest

from collsim.cli import main
from collsim.fitted.rescale import cluster_params, simulation_params
from collsim.machine import load_cluster
from collsim.predict import predict_nccl

PUBLIC = Path(__file__).resolve().parents[2] / "data" / "public"
SIZES = [8, 4096, 1 << 20, 16 << 20, 256 << 20, 4 << 30]


def test_default_choices_follow_nccls_structure():
    one = predict_nccl(load_cluster("h100-nvlink"), SIZES)["rows"]
    assert [r["algo"] for r in one] == ["Ring", "Ring", "Ring", "NVLS", "NVLS", "NVLS"]
    assert one[0]["time_us"] == pytest.approx(34.9, rel=0.01) and one[0]["kernel_us"] < 20      # -g 8 floor
    assert 470 < one[-1]["busbw_GBps"] < 490                       # NVLS ~480 GB/s class on 8 x H100
    two = predict_nccl(load_cluster("h100-nvlink", nodes=2), SIZES)["rows"]
    assert [r["algo"] for r in two[:2]] == ["Tree", "Tree"] and two[-1]["algo"] == "NVLSTree"
    eight = predict_nccl(load_cluster("h100-nvlink", nodes=8), SIZES)["rows"]
    assert eight[-1]["algo"] == "Ring" and 330 < eight[-1]["busbw_GBps"] < 400


def test_forced_algorithms_and_env():
    c = load_cluster("h100-nvlink")
    ring = predict_nccl(c, SIZES, algo="ring")["rows"]
    assert {r["algo"] for r in ring} == {"Ring"} and 355 < ring[-1]["busbw_GBps"] < 375
    off = predict_nccl(c, SIZES, env={"NCCL_NVLS_ENABLE": "0"})["rows"]
    assert "NVLS" not in {r["algo"] for r in off}
    simple = predict_nccl(c, SIZES, env={"NCCL_ALGO": "Ring", "NCCL_PROTO": "^LL,LL128"})["rows"]
    assert {(r["algo"], r["proto"]) for r in simple} == {("Ring", "Simple")}
    two = load_cluster("h100-nvlink", nodes=2)
    few = predict_nccl(two, [1 << 30], algo="Ring", env={"NCCL_MAX_NCHANNELS": "4"})["rows"][0]
    many = predict_nccl(two, [1 << 30], algo="Ring")["rows"][0]
    assert few["channels"] == 4 and few["time_us"] > 1.5 * many["time_us"]
    sockets = predict_nccl(two, [1 << 30], algo="Ring", env={"NCCL_IB_DISABLE": "1"})["rows"][0]
    assert sockets["time_us"] > 1.5 * many["time_us"]


def test_other_hardware_scales_from_the_tables():
    a100 = predict_nccl(load_cluster("a100-nvlink"), [8 << 30])["rows"][0]
    h100 = predict_nccl(load_cluster("h100-nvlink"), [8 << 30], algo="Ring")["rows"][0]
    b200 = predict_nccl(load_cluster("b200-nvlink"), [8 << 30])["rows"][0]
    assert a100["algo"] == "Ring" and a100["busbw_GBps"] == pytest.approx(230, rel=0.02)   # sjeaugey, ~230
    assert b200["algo"] == "NVLS" and b200["busbw_GBps"] > 1.5 * h100["busbw_GBps"]
    small_a, small_h = (predict_nccl(load_cluster(c), [8], harness="runner", timing="graph")["rows"][0]
                        for c in ("a100-nvlink", "h100-nvlink"))
    assert small_a["time_us"] > 1.2 * small_h["time_us"]          # A100's slower clock


def test_gpus_per_process_follow_the_harness():
    """nccl-tests on one node runs all its GPUs from one process (-g 8) unless told; the runner is
    torchrun, one GPU per process, and several nodes run one GPU per process in both."""
    one, two = load_cluster("h100-nvlink"), load_cluster("h100-nvlink", 2)
    assert predict_nccl(one, [8])["gpus_per_process"] == 8
    assert predict_nccl(one, [8], harness="runner")["gpus_per_process"] == 1
    assert predict_nccl(two, [8])["gpus_per_process"] == 1
    assert predict_nccl(one, [8], gpus_per_process=2)["gpus_per_process"] == 2


def test_packaged_parameters_are_the_committed_fit():
    packaged = Path(__file__).resolve().parents[2] / "collsim" / "fitted" / "hopper_params.json"
    committed = Path(__file__).resolve().parents[2] / "data" / "h200x2" / "params.json"
    assert packaged.read_bytes() == committed.read_bytes()


def test_cluster_params_keep_the_2gpu_fit_on_hopper():
    base, p = simulation_params(), cluster_params(load_cluster("h200-nvlink"))
    for key in (("nvlink", "Ring", "LL"), ("nvlink", "Tree", "Simple")):
        assert p.path(*key)["base_us"] == pytest.approx(base.path(*key)["base_us"])
        assert p.path(*key)["step_us"] == pytest.approx(base.path(*key)["step_us"])


def _log(name):
    lines = [json.loads(x) for x in (PUBLIC / name).read_text().splitlines()]
    return lines[0], np.array([r["size"] for r in lines[1:]]), np.array([r["time_us"] for r in lines[1:]])


@pytest.mark.parametrize("name, cluster, nodes, env, gpp, bounds", [
    ("L01_h100x8_1n_ring_together.jsonl", "h100-nvlink", 1, {}, 8, (0.05, 0.02)),
    ("L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl", "h100-nvlink", 2, {"NCCL_MIN_CTAS": "24"}, 1, (0.05, 0.04)),
])
def test_calibration_logs(name, cluster, nodes, env, gpp, bounds):
    """Median |time error| over all sizes and from 64 MiB up, Ring forced as the logs ran it; the
    issue's targets are 10% and 5%, the bounds the level reached (README) plus a little."""
    _, sizes, meas = _log(name)
    rows = predict_nccl(load_cluster(cluster, nodes), sizes, algo="Ring", env=env, gpus_per_process=gpp)["rows"]
    err = np.abs(np.array([r["time_us"] for r in rows]) / meas - 1)
    assert np.median(err) <= bounds[0] and np.median(err[sizes >= 64 << 20]) <= bounds[1]
    theirs = np.abs(np.array([r["nccl_us"] for r in rows]) / meas - 1)
    assert np.median(err) < np.median(theirs)


def test_cli_text_json_plot_and_errors(tmp_path, capsys):
    assert main(["predict-nccl", "--cluster", "h100-nvlink", "--nodes", "2", "-b", "8", "-e", "1G", "-f", "16",
                 "--plot", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    assert "NCCL chooses" in out and "NVLSTree/Simple" in out and (tmp_path / "p.png").stat().st_size > 1000
    assert main(["predict-nccl", "--cluster", "h100-nvlink", "--bytes", "1M", "4G", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cluster"]["gpu"] == "H100" and [r["bytes"] for r in d["rows"]] == [1 << 20, 4 << 30]
    assert {"bytes", "time_us", "busbw_GBps", "algo", "proto", "channels"} <= set(d["rows"][0])
    spec = tmp_path / "bad.yaml"
    for text, message in (("gpu: P100\ngpus_per_node: 8\n", "not known"), ("gpu: A100\ngpus_per_node: 8\nnvls: true\n",
                          "no NVLink SHARP"), ("gpu: H100\ngpus_per_node: 8\nnodes: 0\n", "nodes must be >= 1"),
                          ("gpu: H100\ngpus_per_node: 4\nnodes: 2\nnics_per_node: 8\nnic_Gbps: 400\n", "exceeds"),
                          ("gpu: H100\ngpus_per_node: 8\nnvlink_GBps: -5\n", "nvlink_GBps must be >= 0.1")):
        spec.write_text(text)
        assert main(["predict-nccl", "--cluster", str(spec), "--bytes", "1M"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    for argv in (["--algo", "CollNet"], ["--env", "NCCL_ALGO=Bogus"], ["--env", "NCCL_MAX_NCHANNELS=0"],
                 ["--env", "FOO"]):
        assert main(["predict-nccl", "--cluster", "h100-nvlink", "--bytes", "1M", *argv]) == 2
        assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("cluster, algo, why", [
    ("a100-nvlink", "NVLS", "NVLS needs NVLink SHARP"),
    ("h100-nvlink", "NVLSTree", "NVLSTree joins nodes"),
])
def test_forced_algorithm_the_cluster_lacks_says_why(capsys, cluster, algo, why):
    assert main(["predict-nccl", "--cluster", cluster, "--algo", algo, "--bytes", "1G"]) == 2
    err = capsys.readouterr().err
    assert f"NCCL_ALGO={algo} is not available on {cluster}" in err and why in err and err.count("\n") == 1


def test_a_description_of_our_2_x_h200_predicts_its_runner_sweeps():
    """README Rung 2's check of the description-only path on our own machine (run 4, not fitted)."""
    from collsim.fit.cluster_compare import compare_cluster
    from collsim.machine.cluster import Cluster
    files = sorted((PUBLIC.parent / "h200x2" / "run4" / "runner").glob("nvlink_*_graph.jsonl"))
    res = compare_cluster(Cluster("H200", 2, intra="nvswitch", nvls=False), files, inplace=True)
    ours, nccl = res["simulated"]["median_abs_rel_error"], res["nccl"]["median_abs_rel_error"]
    assert res["simulated"]["n"] == 210 and ours < 0.05 and nccl > 4 * ours     # README Rung 2: 3.6% vs 29.5%


@pytest.mark.parametrize("name", sorted(__import__("collsim.machine.presets", fromlist=["CLUSTERS"]).CLUSTERS))
def test_every_preset_predicts_without_a_traceback(name):
    c = load_cluster(name)
    if c.ranks < 2:
        return
    rows = predict_nccl(c, [8, 1 << 20, 1 << 30])["rows"]
    assert all(np.isfinite(r["time_us"]) and r["time_us"] > 0 and r["busbw_GBps"] >= 0 for r in rows)
    assert all(r["timed_by"] == ("nccl" if r["simulated_us"] is None else "simulated") for r in rows)


def test_collnet_rows_are_simulated_at_the_maintainers_figure(capsys):
    from collsim.machine.cluster import Cluster
    sharp = Cluster("A100", 8, 4, nics_per_node=8, nic_Gbps=200, sharp=True)
    rows = predict_nccl(sharp, [8, 1 << 17, 1 << 29])["rows"]
    assert [r["algo"] for r in rows] == ["Tree", "CollNetDirect", "CollNetChain"]
    assert all(r["timed_by"] == "simulated" and r["time_us"] == r["simulated_us"] for r in rows)
    # sjeaugey on DGX A100 with 8 NICs and SHARP (NVIDIA/nccl#320): NVLink, which still moves about twice the data
    # inside the node, limits CollNet to ~110 GB/s algbw, ~220 busbw (simulated: 112 and 217)
    assert rows[2]["algbw_GBps"] == pytest.approx(110, rel=0.1) and "gpu" in rows[2]["busiest"]
    forced = predict_nccl(sharp, [1 << 29], algo="CollNet")["rows"][0]
    assert forced["algo"] in ("CollNetDirect", "CollNetChain") and forced["timed_by"] == "simulated"
    assert main(["predict-nccl", "--cluster", "h100-sharp", "--bytes", "8M"]) == 0
    out = capsys.readouterr().out
    assert "SHARP" in out and "NVLS/Simple" in out and "timed by NCCL's own model" not in out
    assert main(["predict-nccl", "--cluster", "dgx-h100", "--bytes", "8M", "--algo", "CollNetDirect"]) == 2
    err = capsys.readouterr().err
    assert "CollNet needs switches that reduce: sharp: true" in err and err.count("\n") == 1


def test_sharp_beats_the_ring_on_4_to_16_h100_nodes():
    # 1 GiB on h100-sharp (8 x H100, 8 x 400G NDR a node): the ring is bound by its NICs, which carry 2 (P-1)/P of
    # the buffer per node; CollNetDirect sends it once each way, is bound by NVLink (2 (G-1)/G of it per GPU) and
    # takes as long on 16 nodes as on 4: the switches reduce, no step per node (simulated 415-425 GB/s busbw
    # against the ring's 382-365; NVLS across nodes 499-511)
    busbw = {}
    for nodes in (4, 16):
        rows = {a: predict_nccl(load_cluster("h100-sharp", nodes), [1 << 30], algo=a)["rows"][0]
                for a in ("Ring", "CollNetDirect", "NVLS")}
        assert "nic" in rows["Ring"]["busiest"] and "gpu" in rows["CollNetDirect"]["busiest"]
        assert rows["Ring"]["busbw_GBps"] < 390 < 1.05 * 390 < rows["CollNetDirect"]["busbw_GBps"] < \
            rows["NVLS"]["busbw_GBps"]
        busbw[nodes] = rows
    assert busbw[16]["CollNetDirect"]["kernel_us"] == pytest.approx(busbw[4]["CollNetDirect"]["kernel_us"], rel=0.01)
    assert busbw[16]["Ring"]["kernel_us"] > 1.05 * busbw[4]["Ring"]["kernel_us"]


def test_new_machines_behave_as_their_hardware_says():
    p2p = predict_nccl(load_cluster("l40s-box"), [1 << 30])["rows"][0]
    shm = predict_nccl(load_cluster("rtx4090-box"), [1 << 30])["rows"][0]
    assert p2p["algo"] == shm["algo"] == "Ring" and shm["time_us"] > 1.4 * p2p["time_us"]
    p5 = predict_nccl(load_cluster("p5"), [1 << 30], algo="Ring")["rows"][0]
    p4d = predict_nccl(load_cluster("p4d"), [1 << 30], algo="Ring")["rows"][0]
    assert p5["busbw_GBps"] > 4 * p4d["busbw_GBps"]                  # 3200 vs 400 Gb/s of EFA
    rack = predict_nccl(load_cluster("gb200-nvl72"), [8, 1 << 30])["rows"]
    assert rack[-1]["algo"] == "NVLS" and rack[-1]["busbw_GBps"] > 500 and rack[0]["time_us"] < 100
    h800 = predict_nccl(load_cluster("dgx-h800", nodes=1), [1 << 30], algo="Ring")["rows"][0]
    assert h800["busbw_GBps"] < 0.5 * predict_nccl(load_cluster("h100-nvlink"), [1 << 30], algo="Ring")["rows"][0][
        "busbw_GBps"]                                                  # 200 vs 450 GB/s of NVLink


def test_a_quick_run_calibrates_the_description_and_narrows_its_ranges(tmp_path, capsys):
    """Self-consistency, not validation: a 'quick run' (our pair's runner file, its times made by collsim on a
    2 x H200 whose ring reaches 0.75 of NVLink) is fitted back by collsim fit --cluster (the real-log checks,
    leaving sizes and files out, are docs/accuracy.md's "Quick run" table; on several nodes the robust fit
    moves the NICs and the hop little, the same table shows)."""
    from dataclasses import replace

    from collsim.inputs import QUICK_SIZES
    from collsim.machine import Cluster
    base = Cluster("H200", 2, nvls=False)
    truth = replace(base, calibrated={"intra_efficiency": 0.75})
    rows = predict_nccl(truth, list(QUICK_SIZES), harness="runner", timing="graph")["rows"]
    real = (Path(__file__).resolve().parents[2] / "data/h200x2/run2/runner/nvlink_default_graph.jsonl").read_text(
    ).splitlines()
    records = [json.loads(x) for x in real]
    times = {r["bytes"]: r["time_us"] for r in rows}
    kept = [records[0]] + [{**r, "time_us": times[r["size"]], "time_us_min": times[r["size"]]}
                           for r in records[1:] if r.get("size") in times]
    f = tmp_path / "quick.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in kept) + "\n")
    yaml_in = tmp_path / "pair.yaml"
    yaml_in.write_text("gpu: H200\ngpus_per_node: 2\nnvls: false\n")
    out_yaml = tmp_path / "fitted.yaml"
    assert main(["fit", "--cluster", str(yaml_in), str(f), "-o", str(out_yaml)]) == 0
    assert "calibrated cluster ->" in capsys.readouterr().out
    fitted = load_cluster(out_yaml)
    assert fitted.calibrated["intra_efficiency"] == pytest.approx(0.75, rel=0.03)
    assert fitted.inputs["intra"].kind == "machine"
    before = predict_nccl(base, [1 << 30], harness="runner", timing="graph")["rows"][0]
    after = predict_nccl(fitted, [1 << 30], harness="runner", timing="graph")["rows"][0]
    assert after["time_us"] == pytest.approx(rows[-1]["time_us"], rel=0.03)
    assert abs(before["time_us"] / rows[-1]["time_us"] - 1) > 0.05
    assert main(["predict-nccl", "--cluster", str(out_yaml), "--bytes", "1G"]) == 0
    assert "bandwidth from a run of this machine" in capsys.readouterr().out
    one = tmp_path / "one.jsonl"
    one.write_text("\n".join(json.dumps(x) for x in kept[:2]) + "\n")
    assert main(["fit", "--cluster", str(yaml_in), str(one)]) == 2        # one size calibrates nothing
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("log, spec, nodes, small, large", [
    ("P01", "a3-mega", 2, 0.05, 0.10),      # TCPXO: its hop calibrated on the 8 B-4 KiB rows; 1-8 GiB checked
    ("P05", "p4d", 4, 0.05, 0.05),          # EFA: its hop calibrated on the 64 B-16 KiB rows; 1 GiB checked
    ("P03", "p4d", 2, None, 0.02),          # EFA's efficiency calibrated here
    ("P04", "p4d", 3, None, 0.05),          # checked: no number set on it
])
def test_the_other_public_logs_from_their_descriptions(log, spec, nodes, small, large):
    """data/public/README.md: each log sets at most one number; the rest is checked against it."""
    from collsim.fit.cluster_compare import compare_cluster
    path = next(PUBLIC.glob(f"{log}_*.jsonl"))
    res = compare_cluster(load_cluster(spec, nodes), [path])
    rows = res["files"][0]["rows"]
    err = {r["bytes"]: abs(r["simulated_us"] / r["measured_us"] - 1) for r in rows}
    if small is not None:
        assert np.median([e for b, e in err.items() if b <= 4096]) <= small, err
    assert max(e for b, e in err.items() if b >= 1 << 30) <= large, err


def test_one_call_searches_and_tunes_once(monkeypatch):
    """NCCL's topology search and its tuning run once per predict_nccl call, for every size of it (their
    result is the context's ``setup``), whatever the collective."""
    import collsim.nccl.search as search_mod
    import collsim.predict.context as context
    calls = {"search": 0, "tune": 0}

    def counted(name, real):
        def f(*a, **k):
            calls[name] += 1
            return real(*a, **k)
        return f
    monkeypatch.setattr(context, "search", counted("search", search_mod.search))
    monkeypatch.setattr(context, "tune", counted("tune", context.tune))
    for coll in ("all_reduce", "all_gather"):
        calls.update(search=0, tune=0)
        rows = predict_nccl(load_cluster("dgx-h100", 2), [8, 1 << 20, 1 << 28], coll=coll)["rows"]
        assert len(rows) == 3 and calls == {"search": 1, "tune": 1}, (coll, calls)
