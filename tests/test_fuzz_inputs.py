"""Fuzz: hypothesis-made malformed measurement files (meta and records), nccl-tests text logs and
-J JSON, topology files, parameters files and schedule JSON through every loader and through
the CLI. The contract: a loader returns or raises ``CollsimError``; a command exits 0 (1 for
``check`` of a wrong schedule), or exits 2 with exactly one line on stderr; never a traceback
or an internal error, and no warning but collsim's own. The worst inputs found before (alias
bombs, huge counts, deep nesting) also run as subprocesses under a 2 GB address-space limit."""
import contextlib
import copy
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import collsim.cli as cli
from collsim.core.schedule import Schedule
from collsim.errors import CollsimError, CollsimWarning
from collsim.fitted.params import load_params
from collsim.machine import load_cluster
from collsim.machine.topology import load_topology
from collsim.measure import load, result_record
from collsim.measure.nccl_tests import import_nccl_tests

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "data" / "h200x2" / "run2" / "params.json"
LOG = Path(__file__).parent / "fixtures" / "nccl_tests_allreduce.txt"
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 40)), deadline=None,  # more to hunt: 600
                suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ values and mutations
SPECIAL = st.sampled_from(["two", "1e9", "1000000000", "", "-3", "\x1b[31m", "=1+1", "²", "NaN", "Ring", "LL",
                           "Simple", "graph", "eager", "nvlink", "nccl-tests", "0", "64", "65"])
LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                 st.sampled_from([0, 1, -1, 2, 24, 64, 65, 2**31, 2**63, 10**30]),
                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12), SPECIAL)
VALUE = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                      max_size=3), max_leaves=6)


@st.composite
def mutated(draw, base, paths):
    """A deep copy of ``base`` with one to three of ``paths`` (tuples of keys and indices) set to
    a random value or deleted (a path whose parent an earlier change replaced is skipped)."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        try:
            parent = doc
            for key in path[:-1]:
                parent = parent[key]
            if isinstance(parent, dict) and draw(st.integers(0, 4)) == 0:
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(VALUE)
        except (KeyError, IndexError, TypeError):
            continue
    return doc


def paths_of(doc, prefix=(), depth=4):
    """Every key path of a JSON document (dicts and lists), to ``depth`` levels."""
    out = [prefix] if prefix else []
    if depth and isinstance(doc, dict):
        for k, v in doc.items():
            out += paths_of(v, prefix + (k,), depth - 1)
    elif depth and isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            out += paths_of(v, prefix + (i,), depth - 1)
    return out


@st.composite
def text_damage(draw, text):
    """``text`` with a line replaced, dropped or doubled, a token changed, or cut short."""
    lines = text.split("\n")
    i = draw(st.integers(0, len(lines) - 1))
    kind = draw(st.sampled_from(["token", "token", "line", "drop", "double", "cut"]))
    if kind == "token" and lines[i].split():
        tokens = lines[i].split()
        junk = SPECIAL | st.text(max_size=8).filter(lambda t: "\n" not in t) | st.sampled_from(
            ["inf", "nan", "-1", "N/A", "1e400", "9" * 40])
        tokens[draw(st.integers(0, len(tokens) - 1))] = draw(junk)
        lines[i] = "  ".join(tokens)
    elif kind == "line":
        lines[i] = draw(st.text(max_size=60).filter(lambda t: "\n" not in t))
    elif kind == "drop":
        del lines[i]
    elif kind == "double":
        lines.insert(i, lines[i])
    else:
        return text[:draw(st.integers(0, len(text)))]
    return "\n".join(lines)


# ------------------------------------------------------------------ the contract
def call(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def _not_json(constant):
    raise AssertionError(f"{constant} is not JSON")


def holds(result, ok=(0,)) -> None:
    """The contract (module docstring); what ``--json`` prints parses as strict JSON."""
    code, out, err = result
    assert "Traceback" not in err and "internal error" not in err, err
    if code == 2:
        assert len(err.splitlines()) == 1 and " error: " in err, err
    else:
        assert code in ok, (code, err)
        assert all(line.startswith("collsim: warning: skipped ") for line in err.splitlines()), err
        if out.startswith(("{", "[")):
            json.loads(out, parse_constant=_not_json)


def loads_or_refuses(fn, *args, **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CollsimWarning)
            return fn(*args, **kwargs)
    except CollsimError as e:
        assert "\n" not in str(e)
        return None


@contextlib.contextmanager
def folder():
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


# ------------------------------------------------------------------ measurement files
META = {"type": "meta", "harness": "collsim", "collective": "allreduce", "timing": "graph", "world_size": 2,
        "nodes": 1, "iters": 20, "warmup": 5, "graph_calls": 20, "inplace": True, "rotate": False,
        "env": {"NCCL_MAX_NCHANNELS": "16", "NCCL_BUFFSIZE": "4194304"},
        "nccl_probe": {"coll_channels": 24, "n_nodes": 1,
                       "choices": [{"func": "AllReduce", "bytes": 8, "algo": "RING", "proto": "LL",
                                    "channel_lo": 0, "channel_hi": 1}],
                       "tuning": {"AllReduce": {"Ring": {"LL": [4.4, 14.2], "Simple": [8.4, 150.0]}}},
                       "graphs": [{"pattern": 4, "n_channels": 12, "bw_intra_GBps": 30.0, "bw_inter_GBps": 30.0}]}}
RECORDS = [result_record(s, s // 4, "float32", 10.0 + s / 1e4, 2, 0, inplace=True, algo="Ring", proto="Simple",
                         timing="graph", time_us_min=9.5 + s / 1e4, time_us_mean=9.8 + s / 1e4)
           for s in (8, 64, 512, 4096)]
RUN = {"meta": META, "records": RECORDS}
RUN_PATHS = [p for p in paths_of(RUN, depth=6) if len(p) > 1]


def write_run(path, doc, damage=None):
    text = "\n".join(json.dumps(r) for r in [doc["meta"], *doc["records"]]) + "\n"
    path.write_text(damage if damage is not None else text)
    return path


@FUZZ
@given(doc=mutated(RUN, RUN_PATHS), cut=st.none() | st.integers(0, 3000))
def test_measurement_files(doc, cut):
    with folder() as d:
        f = write_run(d / "m.jsonl", doc)
        if cut is not None:
            f.write_text(f.read_text()[:cut])
        loads_or_refuses(load, f)
        lenient = load(f, strict=False)
        assert all(str(f) in s for s in lenient.skipped)
        holds(call("show", f, "--lenient", "--csv", d / "x.csv"))
        holds(call("compare", "--params", PARAMS, "--measured", f, "--holdout", "all", "--json"))
        holds(call("fidelity", "--runner", f, "--reference", f))


@settings(max_examples=8, deadline=None)
@given(doc=mutated(RUN, RUN_PATHS))
def test_fit_on_measurement_files(doc):
    with folder() as d:
        holds(call("fit", write_run(d / "m.jsonl", doc), "-o", d / "p.json", "--holdout", "even"))


# ------------------------------------------------------------------ nccl-tests output
@FUZZ
@given(text=text_damage(LOG.read_text()))
def test_nccl_tests_text_logs(text):
    with folder() as d:
        f = d / "graph_Ring_LL.log"
        f.write_text(text)
        for strict in (True, False):
            m = loads_or_refuses(import_nccl_tests, f, "Ring/LL", strict=strict)
            if m is not None:
                assert all(r["time_us"] >= 0 for r in m.records)
        holds(call("import-nccl-tests", f, "--label", "Ring/LL", "-o", d / "o.jsonl"))
        holds(call("compare", "--params", PARAMS, "--measured", f, "--holdout", "all"))


J_DOC = {"version": 1, "args": ["./all_reduce_perf", "-G", "20"], "env": ["NCCL_ALGO=Ring", "HOME=/x"],
         "nccl_version": 22809,
         "config": {"nthreads": 1, "ngpus": 2, "graph": 20, "iterations": 20, "warmup_iters": 5,
                    "devices": [{"rank": 0, "hostname": "h"}, {"rank": 1, "hostname": "h"}]},
         "results": [{"size": s, "count": s // 4, "type": "float", "redop": "sum", "root": -1,
                      "out_of_place": {"time": 10.0 + s / 1e4, "alg_bw": 1.0, "bus_bw": 1.0, "nwrong": 0},
                      "in_place": {"time": 9.5 + s / 1e4, "alg_bw": 1.0, "bus_bw": 1.0, "nwrong": 0}}
                     for s in (8, 64, 512)],
         "average_bus_bandwidth": {"bandwidth": 0.5, "okay": "unchecked"}}


@FUZZ
@given(doc=mutated(J_DOC, paths_of(J_DOC, depth=5)))
def test_nccl_tests_json(doc):
    with folder() as d:
        f = d / "graph_Ring_LL.json"
        f.write_text(json.dumps(doc))
        loads_or_refuses(import_nccl_tests, f, "Ring/LL")
        holds(call("import-nccl-tests", f, "--label", "Ring/LL", "-o", d / "o.jsonl"))
        holds(call("compare", "--params", PARAMS, "--measured", f, "--holdout", "all", "--json"))


# ------------------------------------------------------------------ topology, parameters, schedules
TOPOLOGY = {"name": "t", "source": "test", "nodes": 2, "gpus_per_node": 4, "nics_per_node": 2,
            "intra": {"bandwidth_GBps": 100, "latency_us": 1.5}, "inter": {"alpha_s": 5e-6, "beta_s_per_byte": 1e-10}}


@FUZZ
@given(doc=mutated(TOPOLOGY, paths_of(TOPOLOGY)), ext=st.sampled_from([".json", ".yaml"]),
       raw=st.none() | st.text(max_size=80))
def test_topology_files(doc, ext, raw):
    yaml = pytest.importorskip("yaml")
    with folder() as d:
        f = d / f"t{ext}"
        f.write_text(raw if raw is not None else json.dumps(doc) if ext == ".json" else yaml.safe_dump(doc))
        loads_or_refuses(load_topology, f)
        holds(call("simulate", "--algo", "ring", "--ranks", 8, "--bytes", "64K", "--cluster", f, "--json"))


CLUSTER = {"name": "c", "gpu": "H100", "gpus_per_node": 8, "nodes": 2, "intra": "nvswitch", "nvlink_GBps": 450,
           "nics_per_node": 8, "nic_Gbps": 400, "net": "ib", "nvls": True, "nccl": "2.28", "cpu": "intel"}


@FUZZ
@given(doc=mutated(CLUSTER, paths_of(CLUSTER)), ext=st.sampled_from([".json", ".yaml"]))
def test_cluster_files(doc, ext):
    yaml = pytest.importorskip("yaml")
    with folder() as d:
        f = d / f"c{ext}"
        f.write_text(json.dumps(doc) if ext == ".json" else yaml.safe_dump(doc))
        loads_or_refuses(load_cluster, f)
        holds(call("predict-nccl", "--cluster", f, "--bytes", "8", "1M", "4G", "--json"))
        holds(call("simulate", "--algo", "ring", "--ranks", 16, "--bytes", "1M", "--cluster", f))


# ------------------------------------------------------------------ what users paste (issue 35)
PASTES = sorted((ROOT / "tests" / "data" / "diagnose" / "pastes").iterdir())


@FUZZ
@given(data=st.data(), index=st.integers(0, len(PASTES) - 1))
def test_pasted_files_through_the_parsers_and_diagnose(data, index):
    """Damaged copies of every public paste (XML topology dumps, connection lines, nccl-tests text with
    doubled headers, version labels, env dumps): the parsers return data, diagnose a report or one line."""
    from collsim.diagnose import diagnose, parsers, topo_xml
    text = data.draw(text_damage(PASTES[index].read_text()))
    lines = text.split("\n")
    for parse in (topo_xml.topo_xml, parsers.channels, parsers.stated_rates, parsers.topo_matrix):
        parse(lines)
    with folder() as d:
        f = d / PASTES[index].name
        f.write_text(text)
        report = loads_or_refuses(diagnose, [f])
        if report is not None:
            json.dumps(report, allow_nan=False, default=str)


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 40)) // 4 + 1, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated(CLUSTER, paths_of(CLUSTER)),
       coll=st.sampled_from(["AllReduce", "allreduce", "AllToAll", "", "\x1b"]),
       lo=st.sampled_from(["1M", "0", "-1", "x", "1e30"]),
       nccl=st.sampled_from(["2.22,2.25", "2.22", "2.2x,2.25", ","]))
def test_export_tuner_and_diagnose_answers_on_damaged_clusters(doc, coll, lo, nccl):
    """export-tuner and diagnose --nccl on mutated cluster files and hostile arguments: a file or one line."""
    with folder() as d:
        f = d / "c.json"
        f.write_text(json.dumps(doc))
        result = call("export-tuner", "--cluster", f, "--coll", coll, "-b", lo, "-e", "4M", "-o", d / "t.csv")
        holds(result)
        assert (result[0] == 0) == (d / "t.csv").exists()
        holds(call("diagnose", "--cluster", f, "--measured", "1G=10", "--nccl", nccl, "--json"))


PARAMS_DOC = json.loads(PARAMS.read_text())


@FUZZ
@given(doc=mutated(PARAMS_DOC, [p for p in paths_of(PARAMS_DOC) if p[0] != "meta"]))
def test_parameters_files(doc):
    with folder() as d:
        f = d / "p.json"
        f.write_text(json.dumps(doc))
        loads_or_refuses(load_params, f)
        holds(call("explain", "--params", f, "--algo", "Ring", "--proto", "Simple", "--ranks", 2,
                   "--sizes", "8", "1M", "4G"))
        holds(call("compare", "--params", f, "--measured", write_run(d / "m.jsonl", RUN), "--holdout", "all"))


SCHEDULE = json.loads(Schedule.from_steps(3, 6, [[(0, 1, 0, 2, "reduce"), (1, 2, 2, 2, "reduce")],
                                                 [(2, 0, 4, 2, "copy")]]).to_json())


@FUZZ
@given(doc=mutated(SCHEDULE, paths_of(SCHEDULE, depth=5)), raw=st.none() | text_damage(json.dumps(SCHEDULE)))
def test_schedule_files(doc, raw):
    with folder() as d:
        f = d / "s.json"
        f.write_text(raw if raw is not None else json.dumps(doc))
        loads_or_refuses(Schedule.from_json, f.read_text())
        holds(call("check", "--file", f, "--json"), ok=(0, 1))


COLLS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv", "allreduce",
         "AllGather", "nope", ""]
NUMBER = st.sampled_from(["0", "1", "-1", "1e-6", "1e30", "nan", "inf", "x", "4M", "1G", "2", "3", "1048576",
                          "1048577", "8E"]) | st.integers(-3, 1 << 21).map(str)


@FUZZ
@given(coll=st.sampled_from(COLLS), algo=st.none() | st.sampled_from(["ring", "pat", "p2p", "double-tree", "x"]),
       opts=st.lists(st.tuples(st.sampled_from(["--ranks", "--bytes", "--alpha", "--beta", "--gamma",
                                                "--channels", "--chunks", "--slices", "--gpus-per-node"]),
                               NUMBER), max_size=8), as_json=st.booleans())
def test_predict_coll(coll, algo, opts, as_json):
    """predict --coll with any algorithm and numbers: an answer (valid JSON) or one line, exit 2."""
    argv = ["predict", "--coll", coll, *(["--algo", algo] if algo else []),
            *[x for pair in opts for x in pair], *(["--json"] if as_json else [])]
    holds(call(*argv))


# ------------------------------------------------------------------ the worst cases, in a subprocess
def _laughs(levels: int = 9) -> str:
    names = "abcdefghijklmnop"
    text = f"{names[0]}: &{names[0]} [x, x, x, x, x, x, x, x, x]\n"
    for prev, name in zip(names, names[1:levels + 1]):
        text += f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
    return text


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


WORST = [
    ("t.yaml", _laughs(), ["simulate", "--algo", "ring", "--ranks", 8, "--bytes", 8, "--cluster", "FILE"],
     "aliases (*name) are not allowed"),
    ("j.json", json.dumps({**J_DOC, "config": {**J_DOC["config"], "nthreads": "x" * 3000, "ngpus": 10**9}}),
     ["import-nccl-tests", "FILE", "--label", "Ring/LL", "-o", "OUT"], "'nthreads' must be an integer"),
    ("s.json", "[" * 10**6 + "]" * 10**6, ["check", "--file", "FILE"], "nested deeper than 32"),
    ("p.json", json.dumps({**PARAMS_DOC, "channels": 10**9}),
     ["explain", "--params", "FILE", "--algo", "Ring", "--proto", "LL", "--ranks", 2], "'channels' must be <= 64"),
    ("m.jsonl", "\n".join(json.dumps(r) for r in [{**META, "env": {"NCCL_MAX_NCHANNELS": "1000000000"}}, *RECORDS]),
     ["compare", "--params", PARAMS, "--measured", "FILE"], "NCCL_MAX_NCHANNELS must be <= 64"),
    (None, None, ["predict", "--algo", "ring", "--ranks", 4, "--bytes", "1e30", "--alpha", 1e-6, "--beta", 1e-9],
     "at most"),
]


@pytest.mark.parametrize("name, content, argv, words", WORST, ids=[w[3][:24] for w in WORST])
def test_worst_cases_in_a_subprocess_under_a_memory_limit(tmp_path, name, content, argv, words):
    if name:
        (tmp_path / name).write_text(content)
    argv = [tmp_path / name if a == "FILE" else tmp_path / "o.jsonl" if a == "OUT" else a for a in argv]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "collsim", *map(str, argv)], capture_output=True, text=True, cwd=ROOT,
                       env=env, preexec_fn=_limit_memory, timeout=120)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1, p.stderr[-2000:]
    assert words in p.stderr and "Traceback" not in p.stderr


# ------------------------------------------------------------------ new paths (issue 29), under 4 GB
ENV_NAMES = st.sampled_from(["NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_BUFFSIZE",
                             "NCCL_NVLS_ENABLE", "NCCL_IB_DISABLE", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_NTHREADS",
                             "NCCL_CROSS_NIC", "NCCL_NET_OVERHEAD", "NCCL_X", "OTHER", "NCCL_", ""])
ENV_VALUE = SPECIAL | st.text(alphabet=list("0123456789xX_+- .e^,;:RingTreLLSmpNVallreduc\t\u0661\u00b2"),
                              max_size=12) | st.sampled_from(["16", "0x10", "010", "1_6", "9" * 30, "-1", "^NVLS",
                                                              "allreduce:ring;broadcast:tree", "LL128"])


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 40)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.tuples(ENV_NAMES, st.sampled_from(["=", "", "=="]), ENV_VALUE), min_size=1, max_size=4),
       cluster=st.sampled_from(["ib-400g", "h100-nvlink", "pcie-box"]))
def env_strings(pairs, cluster):
    """``--env`` strings, repeated or not, through predict-nccl and import-nccl-tests."""
    env = [x for name, sep, value in pairs for x in ("--env", f"{name}{sep}{value}")]
    holds(call("predict-nccl", "--cluster", cluster, "--bytes", "8", "1M", "1G", "--json", *env))
    with folder() as d:
        holds(call("import-nccl-tests", LOG, "--label", "Ring/LL", "-o", d / "o.jsonl", *env))


def _executed_run() -> dict:
    from tests.measure.test_executed import executed_file
    with folder() as d:
        lines = [json.loads(x) for x in executed_file(d / "x.jsonl").read_text().splitlines()]
    return {"meta": lines[0], "records": lines[1:5]}


EXECUTED = _executed_run()
HOSTILE_SCHEDULES = st.sampled_from([{"file": p, "sha256": "0" * 64} for p in
                                     ("/etc/passwd", "/proc/self/environ", "/dev/zero", "/dev/stdin", "../x.json",
                                      "", ".", "x" * 300, "\x1b[31m.json")] + ["ring", ["ring"], {"ring": 5}])


@settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", 40)), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated(EXECUTED, [p for p in paths_of(EXECUTED, depth=6) if len(p) > 1]),
       hostile=st.none() | HOSTILE_SCHEDULES)
def executed_files(doc, hostile):
    """Files of executed schedules (runners/schedule_bench.py) through compare: never a path the meta names."""
    if hostile is not None:
        doc["meta"]["schedule"] = hostile if isinstance(hostile, dict) and "file" in hostile else {
            "algorithms": hostile}
    with folder() as d:
        holds(call("compare", write_run(d / "e.jsonl", doc), "--alpha", 1e-6, "--beta", 1e-10, "--json"))


def test_new_paths_fuzzed_under_a_4_gb_address_space():
    """--env strings, executed-schedule files and cluster descriptions (``test_cluster_files``' cases),
    fuzzed in a subprocess whose address space is 4 GB: every case exits 0 or says one line, exit 2."""
    code = ("import tests.test_fuzz_inputs as f; f.env_strings(); f.executed_files(); f.test_cluster_files(); "
            "print('fuzzed')")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "FUZZ_EXAMPLES": os.environ.get("FUZZ_EXAMPLES", "30")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (4 * 10**9, 4 * 10**9)), timeout=900)
    assert p.returncode == 0 and p.stdout.strip().endswith("fuzzed"), (p.stdout[-3000:], p.stderr[-3000:])
