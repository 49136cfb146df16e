"""The parameter-free layout of collsim's NCCL-shaped model (``collsim.fitted.layout``): channel
split, pipeline steps and slices, receive-buffer footprint, hops, and configuration checks."""
import pytest

from collsim.errors import CollsimError
from collsim.fitted.layout import Config, channel_bytes, layout

TWO = Config(ranks=2)


def test_channel_split_matches_nccl_cells():
    # 1 MiB Simple on 24 channels: 43,690 B per channel rounds up to 6 cells of 8 KiB.
    assert channel_bytes("Ring", "Simple", 2 ** 20, 24, 2) == (22, 512, 6 * 8192)
    # tiny messages: one channel carries everything
    assert channel_bytes("Ring", "LL", 8, 24, 2) == (1, 64, 8)


def test_ring_pipeline_steps():
    # 4 GiB Ring Simple on 24 channels, 2 ranks: 178,956,971 B per channel; loops of 2 x 2 MiB
    lay = layout("Ring", "Simple", [2 ** 32], TWO)
    bc = channel_bytes("Ring", "Simple", 2 ** 32, 24, 2)[2]
    full, rem = divmod(bc, 2 * 2 ** 21)
    assert lay.steps[0] == 2 * (2 * full + 2)
    assert lay.slice[0] == 2 ** 20
    assert rem > 0


def test_channel_counts_match_nccl_log():
    # NCCL 2.28.9 on 2 x H200 logged "channel{Lo..Hi}" for each size of an 8 B..4 GiB sweep.
    from pathlib import Path

    from collsim.nccl.log import parse_file
    log = parse_file(Path(__file__).resolve().parents[2] / "data/h200x2/nccl-tests/probe_default.log")
    logged = {c["bytes"]: c for c in log.choices if c["func"] == "AllReduce"}
    assert len(logged) == 30
    for nbytes, c in logged.items():
        nc = channel_bytes(c["algo"], c["proto"], nbytes, log.coll_channels, 2)[0]
        assert nc == c["channel_hi"] - c["channel_lo"] + 1, nbytes


def test_tree_ll128_chunk_doubles_at_256_mib():
    # calcCollChunking on 2 ranks, 24 channels: Tree LL128's chunk goes 71040 -> 144000 B between
    # 128 and 256 MiB, so the receive buffers one call cycles through go 14.5 -> 29.5 MB (8 slots
    # x 24 channels x the chunk on the wire, 16/15 of the payload).
    lay = layout("Tree", "LL128", [2 ** 27, 2 ** 28], TWO)
    assert list(lay.slice) == [71040, 144000] and (lay.nc == 24).all()
    assert list(lay.footprint) == pytest.approx([8 * 24 * 71040 * 16 / 15, 8 * 24 * 144000 * 16 / 15])


@pytest.mark.parametrize("ranks,nodes,algo,hops", [
    (8, 1, "Ring", (14, 0, 1)), (8, 2, "Ring", (12, 2, 1)), (4, 4, "Ring", (0, 6, 1)),
    (8, 1, "Tree", (14, 0, 14)), (8, 2, "Tree", (6, 2, 8)), (4, 4, "Tree", (0, 4, 4))])
def test_hops_and_depth_follow_nccl_count(ranks, nodes, algo, hops):
    # ring: 2(n-1) steps, 2(nNodes-1) over the network; tree: 2(ppn-1) intra, 2 log2(nNodes) net,
    # pipeline depth 2 x tree depth
    lay = layout(algo, "Simple", [8], Config(ranks, nodes=nodes))
    assert (lay.hops_intra, lay.hops_net, lay.depth) == hops


def test_names_are_case_insensitive():
    lay = layout("ring", "ll128", [8, 1 << 20], TWO)
    assert (lay.algo, lay.proto) == ("Ring", "LL128") and lay.sizes.tolist() == [8, 1 << 20]


@pytest.mark.parametrize("make,message", [
    (lambda: Config(3, nodes=2), "divisible by nodes"),
    (lambda: Config(1), "ranks >= 2"),
    (lambda: Config(2, intra="wifi"), "nvlink or pcie"),
    (lambda: Config(2, timing="sometimes"), "graph or eager"),
    (lambda: Config(2, buffsize=1024), "too small"),
    (lambda: layout("Ring", "Simple", [0], TWO), "sizes must be positive"),
    (lambda: layout("Ring", "Simple", [], TWO), "sizes must be positive"),
    (lambda: layout("Star", "Simple", [8], TWO), "Star")])
def test_bad_input_is_a_collsim_error(make, message):
    with pytest.raises(CollsimError, match=message):
        make()


def test_user_footprint_follows_how_calls_reuse_the_buffer():
    """Config.slices: 0 never reused (inf), 1 one slice (the size), k slices of buffer_bytes
    (nccl-tests: k = -n, at most buffer // size of them), doubled out of place."""
    sizes = [1 << 20, 1 << 24, 1 << 26]
    assert (layout("Ring", "LL", sizes, TWO).user_footprint == float("inf")).all()
    assert list(layout("Ring", "LL", sizes, Config(2, slices=1, buffer_bytes=1 << 26)).user_footprint) == sizes
    nt = layout("Ring", "LL", sizes, Config(2, slices=20, buffer_bytes=1 << 26))
    assert list(nt.user_footprint) == [20 << 20, 4 << 24, 1 << 26]
    oop = layout("Ring", "LL", sizes, Config(2, slices=1, buffer_bytes=1 << 26, inplace=False))
    assert list(oop.user_footprint) == [2 * s for s in sizes]
    with pytest.raises(CollsimError, match="slices"):
        Config(2, slices=-1)
