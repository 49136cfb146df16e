"""Tests of collsim.viz: grid state, arrows, timeline rows, animations, curves and crossovers."""
import io

import numpy as np
import pytest

from collsim.algorithms import build_schedule
from collsim.algorithms.lecture import lecture_tree
from collsim.core.compose import ScheduleBuilder, split_even
from collsim.core.schedule import COPY, REDUCE
from collsim.errors import CollsimError
from collsim.viz import curves, grid, grid_colors, palette, timeline


def ring(P, count):
    """Textbook ring (reduce-scatter then all-gather), built here so viz tests stand alone."""
    off, ln = split_even(count, P)
    b = ScheduleBuilder(P, count, name="ring")
    r = np.arange(P)
    for k in range(P - 1):
        c = (r - k - 1) % P
        b.add_step(r, (r + 1) % P, off[c], ln[c], REDUCE)
    for k in range(P - 1):
        c = (r - k) % P
        b.add_step(r, (r + 1) % P, off[c], ln[c], COPY)
    return b.build()


def whole_buffer_ring(P, count):
    """The lecture's ring: whole buffers every step (counts contributions twice)."""
    b = ScheduleBuilder(P, count, name="whole-buffer")
    r = np.arange(P)
    for _ in range(P - 1):
        b.add_step((r + 1) % P, r, 0, count, REDUCE)
    return b.build()


# ------------------------------------------------------------------ grid state
def test_grid_states_ring_ends_with_exact_sum_and_grows_by_one():
    s = ring(5, 23)                      # 23 elements: uneven chunks 5,5,5,4,4
    st = grid.grid_states(s)
    assert list(st.bounds) == [0, 5, 10, 15, 19, 23]
    assert st.distinct.shape == (s.n_steps + 1, 5, 5)
    assert np.all(st.distinct[0] == 1) and not st.over.any()
    assert np.all(st.distinct[-1] == 5)
    # in reduce-scatter step k the receiving cell gains exactly one contribution per transfer
    for k in range(4):
        assert st.distinct[k + 1].sum() - st.distinct[k].sum() == 5 * (k + 1)
    assert grid.GridView(s).correct()


def test_grid_states_flags_double_counting_of_lecture_ring():
    st = grid.grid_states(whole_buffer_ring(4, 8))
    assert st.bounds.tolist() == [0, 8]
    # after two steps rank r holds x_r + 2 x_{r+1} + x_{r+2}
    assert st.mult[2, 0, 0].tolist() == [1, 2, 1, 0]
    assert st.over[2].all() and not st.over[1].any()
    assert grid.cell_label(st.mult[2, 0, 0]) == "x0+2x1+x2"
    assert not grid.GridView(whole_buffer_ring(4, 8)).correct()


@pytest.mark.parametrize("make", [lambda: ring(5, 23), lambda: whole_buffer_ring(4, 8),
                                  lambda: lecture_tree(4, 8),
                                  lambda: build_schedule("double-tree", 6, 12, chunks=2)])
def test_grid_states_agree_with_executed_multiplicities(make):
    st = grid.grid_states(make())
    assert st.mult is not None
    assert np.array_equal(st.distinct, np.count_nonzero(st.mult, axis=-1))
    assert np.array_equal(st.over, (st.mult > 1).any(axis=-1))


def test_grid_states_are_the_checkers_and_refuse_what_it_refuses():
    from collsim.core.checker import check, contribution_states
    from collsim.core.schedule import Schedule

    s = ring(5, 23)
    st, proof = grid.grid_states(s), contribution_states(s)
    assert np.array_equal(st.distinct, proof.distinct) and np.array_equal(st.over, proof.over)
    steps = [[(0, 1, 0, 4, "reduce"), (1, 0, 0, 4, "reduce")], [(0, 1, 0, 4, "copy"), (1, 1, 0, 4, "reduce")]]
    conflict = Schedule.from_steps(2, 4, steps)        # step 1 copies and reduces into rank 1
    with pytest.raises(CollsimError) as e:
        grid.grid_states(conflict)
    assert str(e.value) == check(conflict).error and "a copy and another transfer" in str(e.value)


def test_grid_view_executes_only_when_a_later_step_is_shown():
    calls = []
    s = ring(8, 64)
    v = grid.GridView(s, lambda: calls.append(1) or grid.grid_states(s), label_limit=0)
    assert not calls and v.image.get_array()[0, 0].tolist() == v._lut[0, 1].tolist()
    v.show(s.n_steps)
    assert calls == [1] and v.correct() and "every rank holds the sum" in v.caption


def test_run_steps_executes_real_values():
    from collsim.core.atoms import atoms_of, run_steps

    s = ring(3, 10)
    bounds, _, _ = atoms_of(s)
    data = np.arange(3 * (len(bounds) - 1), dtype=float).reshape(3, -1)
    states = list(run_steps(s, data))
    assert len(states) == s.n_steps + 1 and np.array_equal(states[0], data)
    assert np.allclose(states[-1], data.sum(axis=0)[None, :])


def test_cell_colors_and_labels():
    distinct = np.array([[1, 3], [3, 2]])
    over = np.array([[False, False], [True, False]])
    rgba = grid_colors.cell_colors(distinct, over, 3)
    assert rgba.shape == (2, 2, 4)
    assert tuple(rgba[0, 1]) == palette.rgba(palette.EXACT)   # exact sum: Okabe-Ito yellow
    assert tuple(rgba[1, 0]) == palette.rgba(palette.OVER)    # over-counted: vermillion (and crossed)
    assert rgba[0, 0, 2] > rgba[1, 1, 2] or rgba[0, 0, 0] > rgba[1, 1, 0]   # more data = darker
    assert grid.cell_label(np.array([1.0, 1.0])) == "Σ"
    assert grid.cell_label(np.array([0.0, 1.0, 3.0])) == "x1+3x2"


# Machado, Oliveira and Fernandes (2009), severity 1, on linear RGB: what protanopes, deuteranopes
# and tritanopes see
CVD = {"normal": np.eye(3),
       "protan": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
       "deutan": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
       "tritan": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]]}


def _lab(colour, kind):
    """CIELAB (D65) of an sRGB colour as a reader with colour vision ``kind`` sees it."""
    from matplotlib.colors import to_rgb

    c = np.asarray(to_rgb(colour))
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lin = np.clip(np.asarray(CVD[kind]) @ lin, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("kind", list(CVD))
def test_palette_states_stay_apart_for_colour_blind_readers(kind):
    """Every pair of grid states, transfer kinds and curve colours differs by a CIELAB distance of at
    least 15 for normal, protan, deutan and tritan vision (about 2.3 is just noticeable)."""
    states = {"¼ held": grid_colors.held_color(0.25), "¾ held": grid_colors.held_color(0.75), "exact": palette.EXACT,
              "over": palette.OVER}
    groups = [states, {"reduce": palette.REDUCE, "copy": palette.COPY, **states},
              {f"curve {i}": c for i, c in enumerate(palette.CURVE_COLOURS)}]
    for g in groups:
        names = list(g)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                d = np.linalg.norm(_lab(g[a], kind) - _lab(g[b], kind))
                assert d >= 15, f"{a} vs {b} for {kind} vision: {d:.1f}"
    # and "over" is never told by colour alone: the grid crosses those cells
    v = grid.GridView(whole_buffer_ring(4, 4))
    v.show(2)
    assert len(v.crosses.get_offsets()) == 4


def test_arrow_polygons_point_from_sender_to_receiver():
    down, up = grid.arrow_polygons([0, 3], [1, 1], [0.0, 2.0])
    assert down[:, 1].min() >= 0 and down[3, 1] == pytest.approx(0.7)   # tip near row 1
    assert up[3, 1] == pytest.approx(1.3) and up[:, 1].max() <= 3


def test_gridview_show_updates_artists_in_place():
    s = ring(4, 8)
    v = grid.GridView(s)
    image, arrows = v.image, v.arrows
    before = v.image.get_array().copy()
    v.show(3)
    assert v.image is image and v.arrows is arrows
    assert not np.array_equal(before, v.image.get_array())
    assert len(v.arrows.get_paths()) == 4
    assert "after 3 of 6 steps; arrows: step 4," in v.ax.get_title()
    v.show(s.n_steps)
    assert len(v.arrows.get_paths()) == 0 and "every rank holds the sum" in v.ax.get_title()
    assert v.labels[0][0].get_text() == "Σ"
    with pytest.raises(ValueError):
        v.show(s.n_steps + 1)
    v.set_schedule(ring(6, 6))                 # other P on the same axes
    assert v.image is image and v.image.get_array().shape[:2] == (6, 6)


def test_frame_png_blits_only_changed_artists():
    from PIL import Image

    from collsim.viz.render import FramePNG

    v = grid.GridView(ring(8, 64))
    r = FramePNG(v.fig, v.artists())
    frames = []
    for k in (0, 1, 0):
        v.show(k)
        frames.append(r.frame())
    assert frames[0] != frames[1] and frames[0] == frames[2]
    assert Image.open(io.BytesIO(frames[0])).format == "PNG"


def test_frame_png_draws_axis_and_cell_text_itself():
    """Overlay axes: matplotlib leaves their ticks out; the frame draws them, and the cell labels."""
    from matplotlib.figure import Figure
    from PIL import Image

    from collsim.viz.render import FramePNG, plain_text

    fig = Figure(figsize=(5, 4), dpi=72)
    fig.subplots_adjust(left=0.12, bottom=0.14)          # fixed margins, room for the axis text
    v = grid.GridView(ring(4, 4), ax=fig.add_subplot(), text=False)   # 16 cells, written as text
    r = FramePNG(v.fig, v.artists())
    r.use(None, [v.ax])
    v.show(6)
    img = np.asarray(Image.open(io.BytesIO(r.frame())).convert("L"))
    assert not v.ax.xaxis.get_visible() and r.full_draws == 1
    box = v.ax.bbox
    h = img.shape[0]
    left = img[int(h - box.y1):int(h - box.y0), :int(box.x0) - 1]       # y tick labels and "rank"
    below = img[int(h - box.y0) + 1:, int(box.x0):int(box.x1)]          # x tick labels and "chunk"
    assert (left < 128).sum() > 50 and (below < 128).sum() > 50
    blank = FramePNG(v.fig, [a for a in v.artists() if a not in sum(v.labels, [])])
    blank.use(None, [v.ax])
    cells = np.asarray(Image.open(io.BytesIO(blank.frame())).convert("L"))
    assert (img != cells).any()                          # the "Σ" labels are drawn over the cells
    assert plain_text("$\\mathdefault{10^{-3}}$") == "10⁻³" and plain_text("0.5") == "0.5"


# ------------------------------------------------------------------ timeline
def test_timeline_rows_by_link_and_rank_with_cap():
    s = ring(4, 8)
    start = s.step_index * 1.0
    end = start + 0.5
    rows = timeline.timeline_rows(s, start, end, "link", gpus_per_node=2)
    assert rows.labels == ["0→1", "1→2 (inter)", "2→3", "3→0 (inter)"]
    assert np.allclose(rows.busy_s, 6 * 0.5) and rows.dropped == 0
    by_rank = timeline.timeline_rows(s, start, end, "rank", max_rows=2)
    assert len(by_rank.labels) == 2 and by_rank.dropped == 2
    assert (by_rank.row == -1).sum() == 12
    # capped at 2 rows with 2 nodes: one inter-node link keeps its place beside the busier intra ones
    end2 = end + (s.src == 0) * 5.0
    mixed = timeline.timeline_rows(s, start, end2, "link", gpus_per_node=2, max_rows=2)
    assert mixed.labels == ["0→1", "1→2 (inter)"]
    with pytest.raises(CollsimError):
        timeline.timeline_rows(s, start, end, "node")
    with pytest.raises(CollsimError):
        timeline.timeline_rows(s, start[:-1], end, "link")


def test_timeline_highlight_brings_out_one_step():
    s = ring(4, 8)
    start = s.step_index * 1e-6
    v = timeline.TimelineView(s, start, start + 0.5e-6)
    bars = v.bars.get_paths()
    v.highlight(2)
    assert len(v.bars.get_paths()) == len(bars) == s.n_transfers      # the bars stay as they are
    assert v.veil.get_visible() and v.veil.get_zorder() < v.step_bars.get_zorder()
    assert len(v.step_bars.get_paths()) == np.count_nonzero(s.step_index == 2) == 4
    assert np.allclose(v.step_bars.get_paths()[0].vertices[:4, 0].min(), 2.0)
    assert v.span.get_visible() and v.span.get_x() == pytest.approx(2.0)
    v.highlight(None)
    assert not v.span.get_visible() and not v.veil.get_visible() and not v.step_bars.get_paths()


def test_timeline_set_data_reuses_artists_and_ticks_only_on_change():
    s = ring(4, 8)
    start = s.step_index * 1e-6
    v = timeline.TimelineView(s, start, start + 0.5e-6)
    bars, ticks = v.bars, v.ax.get_yticklabels()
    v.set_data(s, start * 2, start * 2 + 1e-6)               # same links, longer: new x limit only
    assert v.bars is bars and [t.get_text() for t in v.ax.get_yticklabels()] == [t.get_text() for t in ticks]
    assert v.ax.get_xlim()[1] == 15.0 and "total 11 µs" in v.caption      # 11.2 rounded up nicely
    assert [timeline.nice_ceil(x) for x in (0, 0.7, 1.0, 2.2, 99, 100, 101)] == [1, 0.8, 1, 3, 100, 100, 150]
    s6 = ring(6, 12)
    v.set_data(s6, s6.step_index * 1e-6, s6.step_index * 1e-6 + 1e-7)
    assert len(v.ax.get_yticklabels()) == 6 and len(v.bars.get_paths()) == s6.n_transfers


# ------------------------------------------------------------------ animation
def test_animation_gif_and_html(tmp_path):
    from PIL import Image, ImageChops

    from collsim.machine.topology import Topology
    from collsim.simulate import simulate
    from collsim.viz.animate import animate_schedule, save_gif, to_html

    s = ring(3, 6)
    anim = animate_schedule(s, result=simulate(s, Topology.uniform(3, 5e-6, 1e-9)))
    path = tmp_path / "ring.gif"
    save_gif(anim, path, fps=4)
    im = Image.open(path)
    assert im.n_frames == s.n_steps + 1
    frames = []
    for k in range(im.n_frames):
        im.seek(k)
        frames.append(im.convert("RGB"))
    assert all(ImageChops.difference(a, b).getbbox() for a, b in zip(frames, frames[1:]))  # every frame moves
    html_path = tmp_path / "ring.html"
    html_path.write_text(to_html(anim))
    html = html_path.read_text()
    assert "<script" in html and html.count("data:image/png;base64") >= s.n_steps + 1


# ------------------------------------------------------------------ curves
def test_crossovers_of_two_lines_in_log_space():
    sizes = 2.0 ** np.arange(0, 21)
    lat = 1e-5 + sizes * 1e-9            # latency-bound early, slow later
    bw = 1e-4 + sizes * 1e-10            # bandwidth-efficient
    cs = curves.crossovers(sizes, {"lat": lat, "bw": bw})
    assert len(cs) == 1
    c = cs[0]
    assert (c.faster_below, c.faster_above) == ("lat", "bw")
    exact = 9e-5 / 9e-10                 # 1e5 bytes, where the lines meet
    assert c.size == pytest.approx(exact, rel=0.1)
    assert curves.fastest(sizes, {"lat": lat, "bw": bw})[0] == "lat"
    assert curves.fastest(sizes, {"lat": lat, "bw": bw})[-1] == "bw"


def test_crossovers_none_when_one_dominates_and_bad_input():
    sizes = np.array([1.0, 2.0, 4.0])
    assert curves.crossovers(sizes, {"a": [1, 2, 3], "b": [2, 3, 4]}) == []
    with pytest.raises(CollsimError):
        curves.crossovers([4, 2, 1], {"a": [1, 2, 3]})
    with pytest.raises(CollsimError):
        curves.crossovers(sizes, {"a": [1, 0, 3]})


def test_busbw_matches_nccl_tests_definition():
    # 1 GB in 10 ms on 8 ranks: algbw 100 GB/s, busbw 175 GB/s
    assert curves.busbw(1e9, 0.01, 2 * 7 / 8) == pytest.approx(175.0)


def test_curves_view_updates_lines_and_marks():
    sizes = 2.0 ** np.arange(0, 21)
    v = curves.CurvesView(["lat", "bw", "off"])
    line = v.lines["lat"]
    cs = v.update(sizes, {"lat": 1e-5 + sizes * 1e-9, "bw": 1e-4 + sizes * 1e-10})
    assert v.lines["lat"] is line and len(line.get_xdata()) == len(sizes)
    assert len(v.lines["off"].get_xdata()) == 0
    assert len(cs) == 1 and len(v.marks.get_xdata()) == 1 and v.labels[0].get_visible()
    assert v.labels[0].get_text().endswith("→bw") and v.labels[0].get_text().startswith(curves._fmt_bytes(cs[0].size))
    with pytest.raises(CollsimError):
        v.update(sizes, {"nope": sizes})
    bus = curves.CurvesView(["bw"], kind="busbw")
    bus.update(sizes, {"bw": 1e-4 + sizes * 1e-10}, factor=1.0)
    assert bus.lines["bw"].get_ydata()[-1] == pytest.approx(sizes[-1] / (1e-4 + sizes[-1] * 1e-10) / 1e9)


def test_legend_blues_are_the_cells_blues():
    """A cell holding 2 of 8 ranks' data is drawn in the legend's "¼" blue, not a pale "own data" one."""
    quarter = next(h for h in grid_colors.legend_handles() if h.get_label().startswith("¼"))
    cell = grid_colors.cell_colors(np.array([2]), np.array([False]), 8)[0]
    assert np.allclose(quarter.get_facecolor(), cell)
    assert not np.allclose(cell, grid_colors.cell_colors(np.array([1]), np.array([False]), 8)[0])


def test_trees_are_drawn_as_trees():
    from collsim.viz import trees

    t0, t1 = trees.tree_parents("double-tree", 16).values()
    for par in (t0, t1):
        x, depth = trees.tree_layout(par)
        kids = [np.flatnonzero(par == r) for r in range(16)]
        assert depth[par < 0].tolist() == [0] and all(depth[c] == depth[r] + 1 for r in range(16) for c in kids[r])
        assert all(x[kids[r]].min() <= x[r] <= x[kids[r]].max() for r in range(16) if len(kids[r]))
        assert len(set(zip(x.tolist(), depth.tolist()))) == 16          # no two ranks on one spot
    inner0, inner1 = (np.bincount(p[p >= 0], minlength=16) > 0 for p in (t0, t1))
    assert not (inner0 & inner1).any()                                  # inner in at most one tree
    fig = trees.draw_trees({"a": t0, "b": t1})
    edges = [sum(len(c.get_segments()) for c in ax.collections if hasattr(c, "get_segments")) for ax in fig.axes]
    assert edges == [15, 15]
    nccl = trees.tree_parents("nccl-tree", 16, 4, channel=1)
    for par in nccl.values():
        child = np.flatnonzero(par >= 0)
        across = child // 4 != par[child] // 4
        assert across.sum() == 3 and set(child[across] % 4) == {1}       # the nodes' chains start at GPU 1
    with pytest.raises(CollsimError):
        trees.tree_layout([1, 0])


def test_crossover_labels_never_overlap():
    """Crossovers a factor of about 2 apart (the case that used to print on top of each other): the
    label boxes overlap neither each other nor any marker, and stay inside the axes."""
    sizes = 2.0 ** np.arange(10, 34)
    series = {n: a + sizes * b for n, a, b in (("a", 1e-3, 1e-11), ("b", 5e-4, 2e-11), ("c", 2.5e-4, 4e-11),
                                               ("d", 1.25e-4, 8e-11))}
    view = curves.CurvesView(series)
    cross = view.update(sizes, series)
    assert len(cross) == 6
    boxes = view.label_boxes
    pts = view.ax.transData.transform([(c.size, c.time_s) for c in cross[:len(boxes)]])
    x0, y0, x1, y1 = view.ax.bbox.extents
    for i, (a, c, b, d) in enumerate(boxes):
        assert x0 <= a and b <= x1 and y0 <= c and d <= y1
        for (e, g, f, h) in boxes[i + 1:]:
            assert b <= e or f <= a or d <= g or h <= c, "two labels overlap"
        for px, py in pts:
            assert not (a < px < b and c < py < d), "a label covers a marker"
    free = curves.place_labels([(50, 50), (52, 50)], [(30, 10), (30, 10)], (0, 0, 200, 200))
    assert free[0] != free[1]
