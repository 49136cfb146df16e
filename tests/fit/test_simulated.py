"""collsim.fit.simulated and collsim.fit.sim_sets: the simulation's per-transfer costs fitted with the simulation
in the loop, and the measurement sets it is calibrated and checked on."""
from dataclasses import replace

import numpy as np
import pytest

from collsim.fit import simulated
from collsim.fit.sim_sets import CALIBRATION, SETS, load_series, score, table
from collsim.fitted.rescale import hopper_params, simulation_params


def test_training_sizes_are_the_even_powers_of_two():
    mask = simulated.train_mask([1, 2, 4, 8, 16, 24, 1 << 20, 1 << 21])
    assert mask.tolist() == [True, False, True, False, True, False, True, False]


def test_sets_load_and_score():
    assert set(CALIBRATION) <= {name for name, *_ in SETS}
    series = load_series(["L15"])
    assert len(series) == 1 and len(series[0].sizes) == 14 and series[0].args[0] == "Ring"
    s = score(series)
    assert s["L15"]["all"]["n"] == 14 and s["L15"]["from_1MiB"]["n"] == 14
    assert "| L15 | 14 |" in table(s, s)


def test_runner_graph_files_before_run_2_carry_graph_mixing():
    """The runner set NCCL_GRAPH_MIXING_SUPPORT=0 from run 2 on; run 1's graph files ran NCCL's default."""
    old = load_series(["h200/runner graph"])[0]
    new = load_series(["h200/run4"])
    assert old.args[2]["NCCL_GRAPH_MIXING_SUPPORT"] == "1"
    assert all(s.args[2].get("NCCL_GRAPH_MIXING_SUPPORT", "0") == "0" for s in new if "runner" in s.file)


def test_a_fit_moves_a_perturbed_cost_back(monkeypatch):
    """One parameter, one file: base_us of Ring/Simple doubled, least squares brings the misfit down."""
    monkeypatch.setattr(simulated, "FITTED", {"Ring": {"LL": (), "LL128": (), "Simple": ("base_us",)}})
    series = [s for s in load_series(["h200/nccl-tests graph"]) if s.args[:2] == ("Ring", "Simple")]
    packaged = simulation_params()
    key = ("nvlink", "Ring", "Simple")
    paths = {**packaged.paths, key: {**packaged.paths[key], "base_us": 2 * packaged.paths[key]["base_us"]}}
    fitted, report = simulated.fit_algo(replace(packaged, paths=paths), series, "Ring", max_nfev=4,
                                        log=lambda *_: None)
    assert report["points"] == 15 and report["rms_after"] < 0.5 * report["rms_before"]
    assert fitted.paths[key]["base_us"] == pytest.approx(packaged.paths[key]["base_us"], rel=0.2)


def test_packaged_simulation_parameters_start_from_the_closed_form_fit():
    """sim_params.json is hopper_params.json with only the NVLink paths' fitted costs changed."""
    base, sim = hopper_params(), simulation_params()
    assert sim.link_GBps == base.link_GBps and sim.harness_us == base.harness_us
    for key, v in base.paths.items():
        changed = {k for k in v if not np.isclose(v[k], sim.paths[key][k])}
        names = set(simulated.FITTED[key[1]][key[2]]) if key[0] in ("nvlink", "pcie") and key[1] in simulated.FITTED \
            else set()
        assert changed <= names, (key, changed)
