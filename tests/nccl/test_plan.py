"""collsim.nccl.plan: NCCL's slot, chunk, slices and loops per channel, the one plan the simulation
and the fitted model read."""
import pytest

from collsim.fitted.layout import Config, layout
from collsim.nccl.chunking import channel_bytes, split_channels
from collsim.nccl.plan import (
    PAT_FLOOR,
    chain_chunk,
    collnet_chunk,
    nvls_chunk,
    nvls_loops,
    pat_chunk,
    payload_slot,
    ring_plan,
    tree_chunk,
    tree_chunks,
)

MIB = 1 << 20


def test_slots_hold_each_protocols_payload():
    assert payload_slot("Simple", 4 * MIB) == 512 << 10                 # 4 MiB / NCCL_STEPS
    assert payload_slot("LL", 4 * MIB) == 32 << 10                      # 512 KiB / 8, half payload
    assert payload_slot("LL128", 4 * MIB) == 4915200 // 8 // 16 * 15    # 15/16 of a 4,915,200 B / 8 slot


def test_ring_loops_and_slices_follow_nccls_chunking():
    # Simple: a chunk is 4 slots of NCCL_BUFFSIZE / 8 (2 MiB), sent as 2 slices; a loop moves 8 x 2 MiB per channel
    plan = ring_plan("Simple", 64 * MIB, 8, 4 * MIB)
    assert (plan.chunk, plan.loops, plan.slices, plan.sends, plan.largest) == (2 * MIB, 4, 2, 8, MIB)
    assert ring_plan("LL", 64 * MIB, 8, 4 * MIB).slices == 1


def test_the_last_ring_loop_spreads_its_remainder_over_the_ranks():
    # 2 full loops of 8 x 2 MiB, then 1 MiB left: 128 KiB a rank, sent as 2 slices of 64 KiB
    plan = ring_plan("Simple", 33 * MIB, 8, 4 * MIB)
    assert plan.loops == 3 and plan.last_chunk == 128 << 10 and plan.sends == 2 * 2 + 2
    tiny = ring_plan("Simple", 1024, 8, 4 * MIB)              # under 2 grains a rank: one slice
    assert (tiny.loops, tiny.slices, tiny.sends, tiny.largest) == (1, 1, 1, 128)


def test_tree_chunks_are_a_slot_and_ll128_shrinks_for_small_parts():
    assert tree_chunks("Simple", 8 * MIB, 16, 2, 4 * MIB) == 16          # one 512 KiB slot a chunk
    full = tree_chunk("LL128", 1 << 30, 16, 2, 4 * MIB)
    assert full == payload_slot("LL128", 4 * MIB) // 1920 * 1920
    assert tree_chunk("LL128", MIB, 16, 2, 4 * MIB) < full


def test_chain_pat_and_nvls_chunks():
    assert chain_chunk("Simple", 4 * MIB) == 512 << 10 and chain_chunk("LL", 4 * MIB) == 32 << 10
    assert nvls_chunk("NVLS", 1 << 30, 8, 1) == 128 << 10 and nvls_chunk("NVLS", MIB, 8, 1) == 16 << 10
    assert nvls_loops("NVLS", 1 << 30, 8, 1) == (1 << 30) // (8 * (128 << 10))
    assert nvls_chunk("NVLSTree", 1 << 30, 32, 4) == 64 << 10             # 4 nodes and more: 64 KiB


def test_pat_halves_its_slot_down_to_64_kib():
    assert pat_chunk("all_gather", 1 << 30, 16, 4 * MIB) == 512 << 10
    assert pat_chunk("all_gather", 16 * MIB, 16, 4 * MIB) == PAT_FLOOR      # 16 MiB / (16 x 32) = 32 KiB < floor
    assert pat_chunk("reduce_scatter", 64 * MIB, 16, 4 * MIB) == 256 << 10  # 64 MiB / (16 x 16)


def test_collnet_chunks_follow_calccollchunking():
    # calcCollChunking (enqueue.cc:2030-2041@v2.28.9): Direct starts at a 512 KiB slot and halves while a loop of
    # 16 channels x 8 heads leaves fewer than depth 2 x 64 of them, not below 128 KiB; Chain starts at 256 KiB
    # against depth 8 (the GPUs of a node)
    assert collnet_chunk("CollNetDirect", 1 << 30, 16, 8, 2, 4 * MIB) == 128 << 10
    assert collnet_chunk("CollNetDirect", 64 << 30, 16, 8, 2, 4 * MIB) == 512 << 10
    assert collnet_chunk("CollNetDirect", MIB, 1, 8, 2, 4 * MIB) == 32 << 10
    assert collnet_chunk("CollNetChain", 8 << 30, 16, 1, 8, 4 * MIB) == 256 << 10
    assert collnet_chunk("CollNetChain", 1 << 30, 16, 1, 8, 4 * MIB) == 128 << 10


@pytest.mark.parametrize("algo,proto", [("Ring", "Simple"), ("Ring", "LL"), ("Tree", "LL128"), ("NVLS", "Simple")])
def test_the_fitted_model_counts_the_plans_steps(algo, proto):
    """The fitted model's pipeline is the plan's: a ring's steps are 2(n-1) x its sends, a tree's its chunks,
    NVLS's its loops (over NCCL's split of the call in channels)."""
    for nbytes in (64 << 10, 33 * MIB, 1 << 30):
        (steps,) = layout(algo, proto, [nbytes], Config(8, buffsize=4 * MIB)).steps
        if algo == "NVLS":
            part = -(-nbytes // split_channels(nbytes, 16, "Simple"))
            assert steps == nvls_loops(algo, part, 8, 1)
            continue
        part = channel_bytes(algo, proto, nbytes, 24, 8)[2]
        if algo == "Ring":
            assert steps == 2 * 7 * ring_plan(proto, part, 8, 4 * MIB).sends
        else:
            assert steps == tree_chunks(proto, part, 8, 1, 4 * MIB)
