"""Shape properties of collsim's NCCL-shaped time model (``collsim.fitted.model``)."""
import numpy as np
import pytest

from collsim.errors import CollsimError
from collsim.fitted.layout import Config, layout
from collsim.fitted.model import explain, predict
from collsim.fitted.params import default_params, with_path

SIZES = 2 ** np.arange(3, 33)
TWO = Config(ranks=2)


def busbw(t_us, sizes, n=2):
    return sizes / t_us / 1e3 * 2 * (n - 1) / n


@pytest.mark.parametrize("algo,proto", [("Ring", "Simple"), ("Ring", "LL"), ("Ring", "LL128"),
                                        ("Tree", "Simple"), ("Tree", "LL128")])
def test_floor_ramp_plateau(algo, proto):
    p = default_params()
    t = predict(p, algo, proto, SIZES, TWO)
    bw = busbw(t, SIZES)
    # floor: the time of tiny messages barely moves
    assert t[3] / t[0] < 1.05
    # busbw rises from 1 MiB to 1 GiB (allowing 1% wiggle from step boundaries)
    i1m, i1g = list(SIZES).index(2 ** 20), list(SIZES).index(2 ** 30)
    ramp = bw[i1m:i1g + 1]
    assert (np.diff(ramp) > -0.01 * ramp[1:]).all() and ramp[-1] > 2 * ramp[0]
    # plateau stays below what the channels and the link could carry
    cap = min(p.channels * p.path("nvlink", algo, proto)["chan_GBps"], p.link_GBps["nvlink"])
    assert bw.max() < cap


def test_ring_simple_ramp_not_alpha_beta():
    # The default parameters give a slow ramp: 16 MiB well below the 4 GiB plateau.
    t = predict(default_params(), "Ring", "Simple", [2 ** 24, 2 ** 32], TWO)
    bw16, bw4g = busbw(t, np.array([2 ** 24, 2 ** 32]))
    assert bw16 < 0.75 * bw4g


def test_ll_half_bandwidth():
    p = default_params()
    for proto in ("LL", "Simple"):  # same channel rate and zero overheads: only the payload differs
        p = with_path(p, ("nvlink", "Ring", proto), chan_GBps=10.0, step_us=0.0, fill=0.0, base_us=1.0, hop_us=0.0)
    big = 2 ** 32
    ll, simple = predict(p, "Ring", "LL", big, TWO)[0], predict(p, "Ring", "Simple", big, TWO)[0]
    assert ll / simple == pytest.approx(2.0, rel=1e-3)


def test_buffsize_direction():
    # A smaller Simple buffer means more pipeline steps: slower large messages with step overhead.
    p = default_params()
    small = predict(p, "Ring", "Simple", 2 ** 30, Config(2, buffsize=1 << 20))[0]
    default = predict(p, "Ring", "Simple", 2 ** 30, TWO)[0]
    assert small > default
    lay_small, lay_def = (layout("Ring", "Simple", [2 ** 30], c) for c in (Config(2, buffsize=1 << 20), TWO))
    assert lay_small.steps[0] > 3 * lay_def.steps[0]
    # with no per-step cost, the bigger buffer's larger slices make the fill longer instead
    p0 = with_path(p, ("nvlink", "Ring", "Simple"), step_us=0.0)
    assert predict(p0, "Ring", "Simple", 2 ** 28, Config(2, buffsize=1 << 20))[0] < \
        predict(p0, "Ring", "Simple", 2 ** 28, Config(2, buffsize=1 << 24))[0]


def test_barrier_cost_follows_nccl_threads():
    """warp_us x steps x warps: NCCL raises Ring Simple's threads 64 -> 512 between 4 and 32 KiB
    on one channel (collsim.nccl.chunking.nccl_channels), so the term grows 8x there with steps unchanged."""
    p = with_path(default_params(), ("nvlink", "Ring", "Simple"), warp_us=0.05)
    sizes = [4096, 8192, 16384, 32768]
    lay = layout("Ring", "Simple", sizes, TWO)
    assert list(lay.threads) == [64, 128, 256, 512] and (lay.nc == 1).all() and len(set(lay.steps)) == 1
    rows = explain(p, "Ring", "Simple", sizes, TWO)
    sync = [r["shares"]["sync"] * r["time_us"] for r in rows]
    assert sync == pytest.approx([0.05 * lay.steps[0] * w for w in (2, 4, 8, 16)])
    base = predict(default_params(), "Ring", "Simple", sizes, TWO)
    assert predict(p, "Ring", "Simple", sizes, TWO) - base == pytest.approx(sync)


def test_explain_shares_and_dominant_term():
    rows = explain(default_params(), "Ring", "Simple", [8, 2 ** 32], TWO)
    for r in rows:
        assert sum(r["shares"].values()) == pytest.approx(1.0)
        assert all(v >= -1e-9 for v in r["shares"].values())
        assert 0 <= r["link_utilisation"]["nvlink"] <= 1
    assert rows[0]["dominant"] == "latency" and rows[1]["dominant"] == "bandwidth"
    assert rows[1]["link_utilisation"]["nvlink"] > rows[0]["link_utilisation"]["nvlink"]
    ll = explain(default_params(), "Ring", "LL", [2 ** 30], TWO)[0]
    assert ll["shares"]["protocol"] == pytest.approx(ll["shares"]["bandwidth"], rel=0.05)


def test_eager_launch_floor():
    p = with_path(default_params(), ("nvlink", "Ring", "LL"), host_us=45.0)
    eager = predict(p, "Ring", "LL", [8, 2 ** 30], Config(2, timing="eager"))
    graph = predict(p, "Ring", "LL", [8, 2 ** 30], TWO)
    assert eager[0] == pytest.approx(45.0) and eager[1] == pytest.approx(graph[1])


def test_socket_path_uses_net_class():
    p = default_params()
    net = predict(p, "Ring", "Simple", [8, 2 ** 28], Config(2, nodes=2))
    nvl = predict(p, "Ring", "Simple", [8, 2 ** 28], TWO)
    assert (net > nvl).all()
    assert busbw(net[1:], np.array([2 ** 28]))[0] <= p.link_GBps["net"]
    rows = explain(p, "Tree", "Simple", [2 ** 28], Config(4, nodes=2))
    assert set(rows[0]["link_utilisation"]) == {"nvlink", "net"}


def test_bad_input_is_a_collsim_error():
    with pytest.raises(CollsimError, match="sizes must be positive"):
        predict(default_params(), "Ring", "Simple", [0], TWO)
    with pytest.raises(CollsimError):
        predict(default_params(), "Star", "Simple", [8], TWO)
    missing = default_params()
    del missing.paths[("nvlink", "Ring", "LL")]
    with pytest.raises(CollsimError, match="no entry for nvlink/Ring/LL"):
        explain(missing, "Ring", "LL", [8], TWO)


def test_warm_user_buffer_scales_the_bandwidth_time_only_while_it_fits_in_l2():
    """(warm - 1) x bandwidth time when 2 x the user footprint fits in L2 (50 MiB): one reused
    slice up to 16 MiB in place; never when calls do not reuse the buffer (slices = 0)."""
    p = with_path(default_params(), ("nvlink", "Ring", "LL"), warm=0.75)
    sizes = [1 << 20, 1 << 24, 1 << 25]
    one_slice = Config(2, slices=1, buffer_bytes=1 << 25)
    cold = predict(p, "Ring", "LL", sizes, TWO)
    assert list(cold) == pytest.approx(list(predict(default_params(), "Ring", "LL", sizes, TWO)))
    warm = predict(p, "Ring", "LL", sizes, one_slice)
    rows = explain(default_params(), "Ring", "LL", sizes, TWO)
    bw = [sum(r["shares"][k] for k in ("bandwidth", "protocol", "channels")) * r["time_us"] for r in rows]
    assert warm[:2] - cold[:2] == pytest.approx([-0.25 * b for b in bw[:2]])
    assert warm[2] == pytest.approx(cold[2])  # 32 MiB: 64 MiB reuse distance > L2
    assert explain(p, "Ring", "LL", sizes, one_slice)[1]["shares"]["reuse"] < 0


@pytest.mark.parametrize("algo", ["Ring", "Tree"])
def test_the_fitted_model_and_the_simulation_agree_where_both_apply(algo):
    """One model: on the machine the model was fitted on (2 x H200 on NVLink, the runner's CUDA graphs) the
    fitted model's time (model_us) and predict-nccl's simulation of the same algorithm, protocol and channels
    (simulated_us) agree: within 10% at the median and 30% at every size from 1 KiB to 1 GiB."""
    from collsim.fitted.rescale import hopper_params
    from collsim.machine import Cluster
    from collsim.predict import predict_nccl

    fitted, sizes = hopper_params(), [1 << k for k in range(10, 31, 4)]
    h200x2 = Cluster.from_dict({"gpu": "H200", "gpus_per_node": 2, "intra": "nvlink"})
    errors = []
    for proto in ("LL", "LL128", "Simple"):
        rows = predict_nccl(h200x2, sizes, algo=algo, proto=proto, harness="runner", timing="graph")["rows"]
        for size, row in zip(sizes, rows):
            (model_us,) = predict(fitted, algo, proto, [size], Config(2, channels=row["channels"], harness="runner"))
            errors.append(abs(row["simulated_us"] / model_us - 1))
    assert np.median(errors) < 0.10 and max(errors) < 0.30, sorted(errors)[-3:]
