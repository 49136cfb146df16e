"""collsim.strategies.knobs on the committed 2 x H200 NCCL-variable sweeps and NCCL probe.

Bounds are the measured errors (data/h200x2/STRATEGIES.md) with a margin."""
from pathlib import Path

import pytest

from collsim.errors import CollsimError
from collsim.strategies.knobs import knob_effects, probe_rows, vars_rows
from collsim.strategies.tables import model_params

DATA = Path(__file__).resolve().parents[2] / "data" / "h200x2"


@pytest.fixture(scope="module")
def params():
    return model_params(DATA)[0]


@pytest.fixture(scope="module")
def effects(params):
    return {(e["variable"].split(" ")[0], e["setting"]): e for e in knob_effects(vars_rows(DATA, params))}


def test_buffsize_hardly_matters_on_nvlink_and_collsim_agrees(effects):
    for s in ("1 MiB", "16 MiB"):
        e = effects[("NCCL_BUFFSIZE", s)]
        assert 0.85 < e["measured_ratio_large"] < 1.1 and 0.9 < e["collsim_ratio_large"] < 1.1
        assert e["collsim_median_abs_error"] < 0.10               # measured 5-6%


def test_channels_matter_for_large_messages(effects):
    two, eight = effects[("channels", "MAX_NCHANNELS=2")], effects[("channels", "MAX_NCHANNELS=8")]
    assert two["measured_ratio_large"] > 5 and two["collsim_ratio_large"] > 5      # 7.8x and 11.7x
    assert 1.5 < eight["measured_ratio_large"] < two["measured_ratio_large"]
    assert 0.6 < two["measured_ratio_small"] < 1.5                  # 64 KiB: no effect
    # collsim over-predicts the channel effect (reported to model2): bound its error
    assert two["collsim_median_abs_error"] < 0.7


def test_p2p_disable_costs_an_order_of_magnitude(effects):
    e = effects[("NCCL_P2P_DISABLE", "1: through host memory")]
    assert e["measured_ratio_large"] > 10 and e["collsim_ratio_large"] > 5
    assert effects[("NCCL_P2P_DISABLE", "0: NVLink P2P")]["collsim_median_abs_error"] < 0.10


def test_socket_threads_do_not_help_over_loopback(effects):
    for s in ("2 x 2", "4 x 4"):
        e = effects[("socket", s)]
        assert 0.8 < e["measured_ratio_large"] < 1.2
        assert e["collsim_ratio_large"] == pytest.approx(1.0)     # no socket-thread term in the model


def test_probe_choices_and_predictions(params):
    rows = probe_rows(DATA, params)
    assert len(rows) == 30
    chosen = {r["bytes"]: f"{r['algo']}/{r['proto']}" for r in rows}
    assert chosen[1 << 20] == "Ring/LL" and chosen[2 << 20] == "Ring/Simple"
    assert all(r["table_argmin"] == f"{r['algo']}/{r['proto']}" for r in rows)   # NCCL follows its table
    assert [r["channels"] for r in rows if r["bytes"] <= 1 << 16][-4:] == [1, 2, 4, 8]
    big = [r for r in rows if r["bytes"] >= 1 << 20]
    assert all(abs(r["model_us"] / r["graph_us"] - 1) < 0.1 for r in big)
    assert all(r["nccl_us"] < r["graph_us"] for r in big)   # NCCL's model is optimistic


def test_missing_file_is_one_error(tmp_path, params):
    with pytest.raises(CollsimError, match="missing"):
        vars_rows(tmp_path, params)
