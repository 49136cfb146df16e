"""Tests of collsim.machine.topology: links, rank mapping, presets and topology files (every malformed case)."""
import json

import pytest

from collsim.errors import CollsimError
from collsim.machine.presets import PRESETS, get_preset
from collsim.machine.topology import Link, Topology, load_topology

GOOD = {"name": "t", "source": "test", "nodes": 2, "gpus_per_node": 4, "nics_per_node": 2,
        "intra": {"bandwidth_GBps": 100, "latency_us": 1.5},
        "inter": {"alpha_s": 5e-6, "beta_s_per_byte": 1e-10}}


def test_link_units():
    link = Link.from_GBps(360, 2.0)
    assert link.alpha == pytest.approx(2e-6) and link.beta == pytest.approx(1 / 360e9)
    assert link.bandwidth_GBps == pytest.approx(360) and link.latency_us == pytest.approx(2.0)
    assert link.time(1e9) == pytest.approx(2e-6 + 1 / 360)
    for bad in ((-1.0, 1e-9), (0.0, 0.0), (float("nan"), 1e-9), (0.0, "x")):
        with pytest.raises(CollsimError):
            Link(*bad)
    with pytest.raises(CollsimError, match="bandwidth"):
        Link.from_GBps(0, 1)


def test_rank_mapping_and_nics():
    t = Topology(3, 4, Link(1e-6, 1e-11), Link(5e-6, 1e-10), nics_per_node=2)
    assert t.ranks == 12
    assert (t.node_of(9), t.local_of(9)) == (2, 1)
    assert [t.nic_of(r) for r in range(4, 8)] == [2, 2, 3, 3]     # node 1, NIC = local x 2 // 4
    u = Topology.uniform(5, 1e-6, 1e-9)
    assert (u.nodes, u.gpus_per_node, u.ranks) == (1, 5, 5) and u.intra == u.inter == Link(1e-6, 1e-9)
    for kw in ({"nodes": 0}, {"gpus_per_node": 2.5}, {"nics_per_node": 5}, {"nics_per_node": 0},
               {"call_us": -1.0}, {"links_per_pair": -1}, {"nvls": u.intra, "links_per_pair": 2},
               {"sharp_us": -1.0}, {"sharp_us": float("nan")}):
        args = {"nodes": 1, "gpus_per_node": 4, "intra": u.intra, "inter": u.inter, **kw}
        with pytest.raises(CollsimError):
            Topology(**args)


def test_presets_have_sources_and_sane_figures():
    names = set(PRESETS)
    assert {"h100-nvlink", "h200-nvlink", "a100-nvlink", "pcie-box"} <= names
    assert {f"{k}-{g}g" for k in ("ib", "eth") for g in (100, 200, 400)} <= names
    for name, t in PRESETS.items():
        assert t.name == name and len(t.source) > 40
        assert 1e-7 < t.intra.alpha < 1e-4 and 1e-7 < t.inter.alpha < 1e-4
    nv = PRESETS["h100-nvlink"].intra.bandwidth_GBps
    assert 300 <= nv <= 478                         # measured-level, below NVLink4's raw 478 GB/s
    assert PRESETS["a100-nvlink"].intra.bandwidth_GBps < nv
    ib = [PRESETS[f"ib-{g}g"].inter.bandwidth_GBps for g in (100, 200, 400)]
    assert ib[0] < ib[1] < ib[2] <= 50 and ib[2] == pytest.approx(392.69 / 8, rel=1e-3)   # L15's ring plateau
    assert PRESETS["eth-400g"].inter.bandwidth_GBps < PRESETS["ib-400g"].inter.bandwidth_GBps
    assert PRESETS["eth-400g"].nics_per_node == 1 and PRESETS["ib-400g"].nics_per_node == 8


def test_get_preset_resizes():
    t = get_preset("ib-400g", nodes=16, gpus_per_node=4)
    assert (t.nodes, t.gpus_per_node, t.nics_per_node) == (16, 4, 4)   # still one NIC per GPU
    assert get_preset("eth-100g", gpus_per_node=2).nics_per_node == 1
    assert get_preset("h200-nvlink", gpus_per_node=2).ranks == 2
    with pytest.raises(CollsimError, match="unknown preset 'nope'"):
        get_preset("nope")
    with pytest.raises(CollsimError, match="nodes"):
        get_preset("ib-400g", nodes=0)


@pytest.mark.parametrize("ext", ["json", "yaml", "yml"])
def test_load_round_trip(tmp_path, ext):
    import yaml
    t = Topology.from_dict(GOOD)
    assert t.intra.alpha == pytest.approx(1.5e-6) and t.inter == Link(5e-6, 1e-10) and t.nics_per_node == 2
    for d in (GOOD, t.to_dict()):
        p = tmp_path / f"topo.{ext}"
        p.write_text(json.dumps(d) if ext == "json" else yaml.safe_dump(d))
        assert load_topology(p) == t
    full = {**GOOD, "nvls": {"bandwidth_GBps": 300, "latency_us": 2}, "call_us": 8.4, "sharp_us": 2.5}
    t2 = Topology.from_dict(full)
    assert t2.nvls.bandwidth_GBps == pytest.approx(300) and t2.call_us == 8.4 and Topology.from_dict(t2.to_dict()) == t2
    assert t2.sharp_us == 2.5 and "SHARP 2.5 us" in t2.describe() and Topology.from_dict(GOOD).sharp_us is None
    p = tmp_path / f"one.{ext}"       # one node: inter may be omitted, nics default to 1
    p.write_text(json.dumps({"nodes": 1, "gpus_per_node": 2, "intra": GOOD["intra"]}))
    one = load_topology(p)
    assert one.inter == one.intra and one.nics_per_node == 1


def _without(key):
    return {k: v for k, v in GOOD.items() if k != key}


MALFORMED = [
    ("missing nodes", _without("nodes"), "missing field 'nodes'"),
    ("missing gpus", _without("gpus_per_node"), "missing field 'gpus_per_node'"),
    ("missing intra", _without("intra"), "missing field 'intra'"),
    ("missing inter", _without("inter"), "missing field 'inter'"),
    ("zero nodes", {**GOOD, "nodes": 0}, "'nodes' must be an integer from 1 to 1048576, got 0"),
    ("huge nodes", {**GOOD, "nodes": 10**40}, "'nodes' must be an integer from 1 to 1048576, got 1000000"),
    ("infinite bandwidth", {**GOOD, "intra": {"bandwidth_GBps": 1e400, "latency_us": 1}}, "bandwidth_GBps must be"),
    ("huge latency", {**GOOD, "intra": {"alpha_s": 1e300, "beta_s_per_byte": 1e-9}}, "alpha_s must be a finite number "
                                                                                      "from 0 to 3600"),
    ("float gpus", {**GOOD, "gpus_per_node": 2.5}, "'gpus_per_node' must be an integer"),
    ("bool nics", {**GOOD, "nics_per_node": True}, "'nics_per_node' must be an integer"),
    ("too many nics", {**GOOD, "nics_per_node": 8}, "'nics_per_node' (8) must not exceed"),
    ("string nodes", {**GOOD, "nodes": "2"}, "'nodes' must be an integer"),
    ("unknown key", {**GOOD, "gpu_per_node": 4}, "unknown field 'gpu_per_node'"),
    ("name not str", {**GOOD, "name": 3}, "'name' must be a string"),
    ("link not mapping", {**GOOD, "intra": 5}, "'intra' must be a mapping"),
    ("link mixed forms", {**GOOD, "intra": {"bandwidth_GBps": 1, "beta_s_per_byte": 1e-9}}, "field 'intra' must have"),
    ("link missing", {**GOOD, "inter": {"alpha_s": 1e-6}}, "field 'inter' must have"),
    ("link extra", {**GOOD, "inter": {**GOOD["inter"], "gamma": 1}}, "field 'inter' must have"),
    ("zero bandwidth", {**GOOD, "intra": {"bandwidth_GBps": 0, "latency_us": 1}}, "intra'.bandwidth_GBps must be"),
    ("negative latency", {**GOOD, "intra": {"bandwidth_GBps": 1, "latency_us": -1}}, "intra'.latency_us must be"),
    ("string beta", {**GOOD, "inter": {"alpha_s": 0, "beta_s_per_byte": "x"}}, "inter'.beta_s_per_byte must be"),
    ("zero beta", {**GOOD, "inter": {"alpha_s": 0, "beta_s_per_byte": 0}}, "inter'.beta_s_per_byte must be"),
    ("not a mapping", [1, 2], "expected a mapping"),
    ("bad call", {**GOOD, "call_us": -2}, "'call_us' must be a number from 0 to"),
    ("bad sharp", {**GOOD, "sharp_us": "fast"}, "'sharp_us' must be a number from 0 to"),
    ("bad pairs", {**GOOD, "links_per_pair": 1.5}, "'links_per_pair' must be an integer from 0 to"),
    ("nvls and pairs", {**GOOD, "links_per_pair": 2, "nvls": GOOD["intra"]}, "'nvls' needs an NVSwitch"),
    ("bad nvls", {**GOOD, "nvls": {"bandwidth_GBps": 0, "latency_us": 1}}, "nvls'.bandwidth_GBps must be"),
    ("empty", None, "expected a mapping"),
]


@pytest.mark.parametrize("label,data,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_fields(tmp_path, label, data, message):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    with pytest.raises(CollsimError) as e:
        load_topology(p)
    text = str(e.value)
    assert message in text and str(p) in text and "\n" not in text


@pytest.mark.parametrize("name,content,message", [
    ("missing.json", None, "no such file"),
    ("bad.json", '{"nodes": 1,', r"not valid JSON \(line 1 column"),
    ("deep.json", "[" * 100000 + "]" * 100000, "nested deeper than 32"),
    ("laughs.yaml", "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", r"invalid YAML at line 2 column 8 \(aliases"),
    ("tag.yaml", "nodes: !!python/object/apply:os.system [echo hi]\n", "invalid YAML"),
    ("bad.yaml", "nodes: [1,\n", "invalid YAML"),
    ("topo.txt", "nodes: 1", "unknown extension '.txt'"),
    ("binary.json", b"\xff\xfe\x00", r"not a text file \(byte 0 is not UTF-8\)"),
    ("dir.json", "DIR", "is a directory"),
])
def test_malformed_files(tmp_path, name, content, message):
    p = tmp_path / name
    if content == "DIR":
        p.mkdir()
    elif isinstance(content, bytes):
        p.write_bytes(content)
    elif content is not None:
        p.write_text(content)
    with pytest.raises(CollsimError, match=message):
        load_topology(p)
