"""The machine picture, the animated trees and the binned grid, drawn from checked schedules."""
import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.core.checker import contribution_states
from collsim.errors import CollsimError
from collsim.viz.grid import GridView
from collsim.viz.grid_bins import MAX_COLUMNS, arrow_columns, binned, column_bins
from collsim.viz.machine import MachineView, animate_machine
from collsim.viz.tree_motion import TreesView, animate_trees, arrow_between
from collsim.viz.trees import tree_parents

pytestmark = pytest.mark.filterwarnings("ignore:Animation was deleted without rendering")


def test_machine_routes_inside_a_node_through_the_switch_and_across_nodes_on_a_rail():
    ring = build_schedule("ring", 8, 64, channels=2, gpus_per_node=4)
    view = MachineView(ring, gpus_per_node=4)
    for t in range(ring.n_transfers):
        route = view.route(t)
        a, b = int(ring.src[t]), int(ring.dst[t])
        assert np.isclose(route[0, 0], view.gx[a], atol=0.3) and np.isclose(route[-1, 0], view.gx[b], atol=0.3)
        if a // 4 == b // 4:
            assert len(route) == 4                       # GPU -> NVSwitch -> GPU
        else:                                            # GPU -> NIC -> rail -> NIC -> GPU, the rail of GPU a
            assert len(route) == 8 and np.isclose(route[3, 1], route[4, 1])
            assert np.isclose(route[2, 0], view.nic_x[a // 4, a % 4], atol=0.2)
    view.show(3)
    assert "after 3 of 14 steps; moving: step 4, 16 transfers (4 between nodes)" == view.caption
    assert len(view.paths.get_segments()) == 16


def test_machine_fills_every_gpu_with_the_exact_sum_at_the_end_and_names_a_wrong_result():
    ring = build_schedule("ring", 4, 12)
    view = MachineView(ring)
    view.show(ring.n_steps)
    heights = [np.ptp(np.asarray(v)[:, 1]) for v in view.done.get_paths() for v in [v.vertices]]
    assert np.allclose(heights, heights[0]) and heights[0] > 0.5 and view.caption.endswith("every GPU holds the sum")
    wrong = build_schedule("lecture-ring", 4, 12)
    bad = MachineView(wrong)
    bad.show(wrong.n_steps)
    assert bad.caption.endswith("NOT the sum")


def test_machine_nics_fewer_than_gpus_and_bad_shapes():
    tree = build_schedule("nccl-tree", 16, 64, gpus_per_node=4)
    view = MachineView(tree, gpus_per_node=4, nics_per_node=2)
    assert view.nic_x.shape == (4, 2)
    with pytest.raises(CollsimError):
        MachineView(tree, gpus_per_node=5)
    with pytest.raises(CollsimError):
        MachineView(tree, gpus_per_node=4, nics_per_node=8)


def test_machine_animation_frames_move_the_chunks():
    ring = build_schedule("ring", 4, 12)
    anim = animate_machine(ring, substeps=2)
    frames = []
    for i in (0, 1):
        anim._func(i)
        frames.append(anim.view.dots.get_offsets().copy())
    assert not np.allclose(frames[0], frames[1])                  # the dots moved along their paths


def test_trees_view_draws_each_transfer_on_its_trees_half_and_ends_yellow():
    dt = build_schedule("double-tree", 8, 16, chunks=2)
    view = TreesView(dt, tree_parents("double-tree", 8))
    view.show(3)
    assert sum(len(a.get_paths()) for a in view.arrows) == len(range(*dt.step_slice(3).indices(dt.n_transfers)))
    assert "after 3 of 14 steps; arrows: step 4" in view.caption
    view.show(dt.n_steps)
    assert view.caption.endswith("every rank holds the sum")
    yellow = np.array([0xF0, 0xE4, 0x42, 0xFF]) / 255
    assert all(np.allclose(d.get_facecolors(), yellow, atol=1e-3) for d in view.dots)
    with pytest.raises(CollsimError):
        TreesView(dt, tree_parents("double-tree", 16))
    assert len(animate_trees(dt, tree_parents("double-tree", 8)).view.axes) == 2
    poly = arrow_between((0, 0), (0, -1))
    assert poly.shape == (7, 2) and poly[3, 1] > -1 and poly[0, 1] < 0


def test_binned_grid_keeps_a_wrong_atom_visible_and_caps_the_columns():
    bounds = np.arange(0, 1001, 1)
    bins = column_bins(bounds)
    assert bins.max() + 1 == MAX_COLUMNS and np.all(np.diff(bins) >= 0)
    distinct = np.full((2, 1000), 2)
    over = np.zeros((2, 1000), bool)
    over[1, 5] = True
    mean, anyover = binned(distinct, over, bins, np.ones(1000), 2)
    assert anyover[1, 0] and not anyover[0].any() and np.all(mean[0] == 2)
    x, width, keep = arrow_columns(np.zeros(4, int), np.ones(4, int), np.arange(4), np.arange(1, 5), np.zeros(4),
                                   np.arange(1), ranks=32)
    assert len(set(np.round(x, 6))) == 4 and np.all(width < 0.05)      # four arrows side by side in one column


def test_grid_view_of_a_huge_schedule_draws_at_most_max_columns():
    big = build_schedule("ring", 8, 1 << 20, channels=16)
    g = GridView(big, text=False)
    g.show(2)
    assert g.image.get_array().shape[1] <= MAX_COLUMNS and "columns of about" in g.chunk_text
    states = contribution_states(big)
    assert g.image.get_array().shape[1] < states.distinct.shape[2]
