"""collsim.predict.scale: NCCL's run simulated over node counts, rows as predict_nccl's for each count."""
from collsim.machine import load_cluster
from collsim.predict import predict_nccl
from collsim.predict.scale import scale_nccl


def test_rows_are_predict_nccls_for_every_node_count_and_nccls_choice_is_simulated_once():
    c = load_cluster("ib-400g")
    ticks = []
    d = scale_nccl(c, [2, 4], [1 << 24, 1 << 28], ["Tree", "Ring"], progress=ticks.append)
    assert d["cluster"] == c.to_dict() and d["sizes"] == [1 << 24, 1 << 28] and len(ticks) == 2 * 3
    for n in (2, 4):
        alone = predict_nccl(c.with_nodes(n), [1 << 24, 1 << 28])["rows"]
        mine = [r for r in d["rows"] if r["nodes"] == n and r["nccl_choice"]]
        assert [r["busbw_GBps"] for r in mine] == [r["busbw_GBps"] for r in alone]
        for r in mine:                            # an algorithm NCCL chose is not simulated again forced
            assert not [x for x in d["rows"] if x["nodes"] == n and x["bytes"] == r["bytes"] and x["algo"] == r["algo"]
                        and not x["nccl_choice"]]
    forced = [r for r in d["rows"] if not r["nccl_choice"]]
    assert {r["algo"] for r in forced} <= {"Tree", "Ring"} and all(r["ranks"] == 8 * r["nodes"] for r in d["rows"])
    assert scale_nccl(c, [2], [1 << 20], ["all"])["algos"] == ["Ring", "Tree", "NVLS", "NVLSTree"]
