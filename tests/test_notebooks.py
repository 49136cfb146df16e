"""Execute every course notebook in notebooks/ top to bottom with nbclient (each under 60 s), with the
numbers their prose states checked against what the cells compute (``tests/prose.py``)."""
import re
import time
from pathlib import Path

import pytest

from tests import prose

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_every_course_notebook_is_here():
    assert [n[:2] for n in ALL] == ["01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"], ALL


NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?:e[+-]?\d+)?%?")


@pytest.mark.parametrize("name", ALL)
def test_prose_numbers_are_tagged_well(name):
    """Every tag follows a number and holds an f-string; every notebook ties some of its prose to its cells."""
    import nbformat

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    found = [t for c in nb.cells if c.cell_type == "markdown" for t in prose.tags(c.source)]
    for written, template in found:
        assert NUMBER.fullmatch(written) and any(ch.isdigit() for ch in written), (name, written, template)
        compile(f'f"""{template}"""', name, "eval")
    loose = [c.source for c in nb.cells if c.cell_type == "markdown" and "<!--{" in c.source
             and len(prose.tags(c.source)) != c.source.count("<!--{")]
    assert not loose, f"{name}: a tag that follows no number: {loose[0][:200]}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ALL)
def test_notebook_runs_clean_and_fast(name, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path))
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    assert nb.cells[0].source.strip() == "%matplotlib inline"
    assert "What you will learn" in nb.cells[1].source
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks clean"
    injected = prose.inject(nb)
    t = time.perf_counter()
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    elapsed = time.perf_counter() - t
    assert elapsed < 60, f"{name} took {elapsed:.1f} s"
    assert not prose.mismatches(nb, injected), prose.mismatches(nb, injected)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    # the exercise cell checked every (unanswered) exercise
    assert text.count("not answered yet") >= 2
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs)
    assert images >= 1


# The worked solutions of every notebook (folded under each exercise cell), as code: appended to the
# answer cell, every exercise must then check "correct".
SOLUTIONS = {
    "01_ring.ipynb": '''
answer_1 = 2 * 7 * node.intra.alpha + 2 * 7 / 8 * 14e9 * node.intra.beta
answer_2 = 3


def my_allreduce(P, count):
    off, length = split_even(count, P)
    b = ScheduleBuilder(P, count, name="my-allreduce")
    r = np.arange(P)
    for k in range(P - 1):
        c = (r - k) % P
        b.add_step(r, (r + 1) % P, off[c], length[c], REDUCE)
    for k in range(P - 1):
        c = (r + 1 - k) % P
        b.add_step(r, (r + 1) % P, off[c], length[c], COPY)
    return b.build()
''',
    "02_trees.ipynb": '''
answer_1 = 29 * (alpha + ((4 << 20) / 4) * beta)
answer_2 = 12
answer_3 = predicted_crossover(128)
answer_4 = 8 * 2**20
''',
    "03_hierarchical.ipynb": '''
answer_1 = 2 * (G - 1) * (a_i + 2**30 / G * b_i) + 2 * (N - 1) * (a_x + 2**30 / (G * N) * b_x) + ib.call_us * 1e-6
answer_2 = (15 / 16) / (1 / 2)
_ = my_cluster.write_text("gpu: H100\\ngpus_per_node: 4\\nnodes: 2\\nintra: nvswitch\\nnics_per_node: 2\\n"
                          "nic_Gbps: 200\\nnet: ib\\n")
topo = to_topology(load_cluster(str(my_cluster)))
answer_3 = rail_ring(8, 2**30, 4, 2, topo.intra.alpha, topo.intra.beta, topo.inter.alpha, topo.inter.beta,
                     channels=8) + topo.call_us * 1e-6
''',
    "05_from_alpha_beta_to_nccl.ipynb": '''
answer_1 = 2 * ab["Ring/Simple"]["alpha_s"] + (1 << 26) * ab["Ring/Simple"]["beta_s_per_byte"]
answer_2 = 2 * (ab["Ring/Simple"]["alpha_s"] - ab["Ring/LL"]["alpha_s"]) / (
    ab["Ring/LL"]["beta_s_per_byte"] - ab["Ring/Simple"]["beta_s_per_byte"])
pts = load_points([my_file])
(mine,) = alpha_beta_fit(pts, holdout="odd").values()
P = pts[0].config.ranks
answer_3 = 2 * (P - 1) * mine["alpha_s"] + 2 * (P - 1) / P * (1 << 28) * mine["beta_s_per_byte"]
answer_4 = 4 * 400 / 8
''',
    "06_nccl_knobs.ipynb": '''
(lat_ll, bw_ll), (lat_s, bw_s) = rows["Ring"]["LL"], rows["Ring"]["Simple"]
answer_1 = (lat_s - lat_ll) / (1 / bw_ll - 1 / bw_s) * 1000
answer_2 = 2 * channels["NCCL_MAX_NCHANNELS=2"][1 << 30]
answer_3 = {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple", "NCCL_MAX_NCHANNELS": "8"}
''',
    "07_overlap_graphs.ipynb": '''
c32 = run.cost("float32")
compute = run.forward_s + sum(layer.backward_s for layer in run.layers) + run.optimizer_s
answer_1 = compute + (c32(3 * (64 << 20)) - run.layers[0].backward_s) + c32(64 << 20)
S = sum(layer.grad_bytes for layer in run.layers[:8])
answer_2 = run.cost("float32")(S) - run.cost("bfloat16")(S / 2) - 2 * run.casts["bf16"] * S
host = model.host_s / 2
answer_3 = max(r["bytes"] for r in grows if 1 - r["graph_s"] / max(host, r["graph_s"]) >= 0.10)
''',
    "08_use_nccl.ipynb": '''
answer_1 = 8
answer_3 = False
answer_4 = 24576


def my_bidirectional_ring(P, count):
    off, length = split_even(count, 2 * P)
    b = ScheduleBuilder(P, count, name="bidirectional-ring")
    r = np.arange(P)
    right, left = (r + 1) % P, (r - 1) % P
    for k in range(P - 1):
        cw, ccw = (r - k) % P, P + (-r - k) % P
        b.add_step(np.r_[r, r], np.r_[right, left], off[np.r_[cw, ccw]], length[np.r_[cw, ccw]], REDUCE)
    for k in range(P - 1):
        cw, ccw = (r + 1 - k) % P, P + (-r + 1 - k) % P
        b.add_step(np.r_[r, r], np.r_[right, left], off[np.r_[cw, ccw]], length[np.r_[cw, ccw]], COPY)
    return b.build()
''',
    "09_appendix_harness.ipynb": '''
answer_1 = fixed_us / 0.01
one_slice, twenty = (model.predict(params2, "Ring", "LL", [16 << 20],
                                   layout.Config(2, slices=k, buffer_bytes=4 << 30))[0] for k in (1, 20))
answer_2 = one_slice / twenty
''',
    "11_clusters_and_scale.ipynb": '''
answer_1 = 4 * 100 / 8 * 0.614
answer_2 = ring[512]["simulated_us"] * (2 * (16384 - 1)) / (2 * (4096 - 1))
''',
    "10_is_my_busbw_right.ipynb": '''
answer_1 = "nic_link_rate"
answer_2 = 100 / 400
answer_3 = 2 * 200 / 8
answer_4 = "sockets_instead_of_ib"
''',
    "04_alpha_beta.ipynb": '''
answer_1 = "hierarchical"
answer_2 = 524288 * (63 - 9 * (1 + 524288e-11 / 10e-6))
answer_3 = "larger"
pts = load_points([my_file])
(entry,) = alpha_beta_fit(pts, holdout="odd").values()
answer_4 = pts[0].config.ranks * entry["alpha_s"] / entry["beta_s_per_byte"]
''',
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_worked_solutions_are_correct(name, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path))
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "answer_1 = None" in c.source)
    nb.cells[i].source += "\n" + SOLUTIONS[name]
    assert "<details>" in nb.cells[i + 2].source        # the worked solutions follow the checking cell
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    lines = "".join(o.get("text", "") for o in nb.cells[i + 1].outputs).strip().splitlines()
    assert lines and all(line.endswith(": correct") for line in lines), lines
