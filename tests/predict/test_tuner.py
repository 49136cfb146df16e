"""collsim.predict.tuner and ``collsim export-tuner``: the file read as NCCL's example tuner plugin reads it
(NVIDIA/nccl plugins/tuner/example/plugin.c at 5067397c: loadConfig lines 195-250, pluginGetCollInfo 353-420),
each simulated size finding the simulated best in the first row that matches."""
import collsim.cli as cli
from collsim.machine import load_cluster
from collsim.predict.best import best
from collsim.predict.tuner import ALGO_NAMES, PROTO_NAMES, SIZE_MAX

PLUGIN_ALGOS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")   # parseAlgorithm
PLUGIN_PROTOS = ("ll", "ll128", "simple")                                                        # parseProtocol


def plugin_configs(path):
    """loadConfig: fgets(256), skip '#' and empty lines, strtok(','), trim, 8-10 fields, strtoull/atoi; an
    unknown algorithm or protocol name would be read as ring/simple, so it is refused here."""
    configs = []
    raw = path.read_bytes()
    assert b"\r" not in raw
    for line in raw.decode().split("\n"):
        assert len(line) < 255, line      # fgets would split it into two reads
        if not line or line.startswith("#"):
            continue
        tokens = [t.strip(" \t") for t in line.split(",") if t != ""]   # strtok skips empty fields
        assert 8 <= len(tokens) <= 10, line
        coll, lo, hi, algo, proto, ch, nodes, ranks = tokens[:8]
        assert coll == "allreduce" and algo in PLUGIN_ALGOS and proto in PLUGIN_PROTOS, line
        assert int(lo) <= int(hi) <= SIZE_MAX
        configs.append({"coll": coll, "lo": int(lo), "hi": int(hi), "algo": algo, "proto": proto,
                        "channels": int(ch), "nodes": int(nodes), "ranks": int(ranks),
                        "pipe": int(tokens[8]) if len(tokens) > 8 else -1,
                        "reg": int(tokens[9]) if len(tokens) > 9 else -1})
    return configs


def applied(configs, nbytes, nodes, ranks, pipe=1, reg=0):
    """pluginGetCollInfo: the first matching config's (algo, proto, channels); else 1 channel, NCCL's pair."""
    for c in configs:
        if c["coll"] == "allreduce" and c["lo"] <= nbytes <= c["hi"] and c["nodes"] in (-1, nodes) and \
                c["ranks"] in (-1, ranks) and c["pipe"] in (-1, pipe) and c["reg"] in (-1, reg):
            return c["algo"], c["proto"], c["channels"]
    return None, None, 1


def test_export_tuner_file_is_read_by_the_plugin_as_the_simulated_best(tmp_path, capsys):
    out = tmp_path / "tuner.csv"
    assert cli.main(["export-tuner", "--cluster", "ib-400g", "-b", "1K", "-e", "1G", "-o", str(out)]) == 0
    assert f"to {out}" in capsys.readouterr().out
    configs = plugin_configs(out)
    c = load_cluster("ib-400g")
    sizes = [1 << k for k in range(10, 31)]
    for row in best(c, sizes):
        want = (ALGO_NAMES[row["best"]["algo"]], PROTO_NAMES[row["best"]["proto"]], row["best"]["channels"])
        assert applied(configs, row["bytes"], c.nodes, c.ranks) == want, row
        assert row["gain"] >= 1.0
    for n in (0, 1, 3 << 20, 5 << 30, SIZE_MAX):      # every size has a row: none falls to 1 channel
        assert applied(configs, n, c.nodes, c.ranks)[0] is not None
    assert applied(configs, 1 << 20, c.nodes + 1, c.ranks)[0] is None   # another shape: no row applies
    assert configs[0]["lo"] == 0 and configs[-1]["hi"] == SIZE_MAX
    assert all(a["hi"] + 1 == b["lo"] for a, b in zip(configs, configs[1:]))


def test_export_tuner_refuses_unknown_collectives_and_its_input_as_output(tmp_path, capsys):
    assert cli.main(["export-tuner", "--cluster", "ib-400g", "--coll", "AllToAll", "-o", str(tmp_path / "t")]) == 2
    assert "AllToAll" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()
