"""The package as users install it: the wheel's contents, running it outside the checkout, its version,
its dependency lists, and the one text that says who predicts what."""
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

import collsim
from collsim.predictors import PREDICTORS

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def words(text: str) -> str:
    """``text`` without its whitespace: the sentences however a file or argparse wraps them."""
    return "".join(text.split())


def test_pyproject_lists_every_room_and_the_data():
    rooms = {".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "collsim").rglob("__init__.py")}
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == rooms | {"collsim.data"}
    assert PYPROJECT["tool"]["setuptools"]["package-dir"] == {"collsim.data": "data"}


def test_environment_yml_lists_the_same_dependencies():
    """Core, notebooks and runners dependencies of pyproject.toml, each with its bounds, and nothing else
    (conda calls torch pytorch); the dev extras come through pip."""
    project = PYPROJECT["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["notebooks"] + \
        project["optional-dependencies"]["runners"]
    spec = {re.split(r"[<>=~ ]", d)[0].replace("torch", "pytorch"): d.replace("torch", "pytorch") for d in wanted}
    text = (ROOT / "environment.yml").read_text().split("dependencies:")[1]
    listed = [line.split("#")[0].strip()[2:].strip() for line in text.splitlines()
              if line.startswith("  - ") and not line.startswith("  - pip")]
    listed = {re.split(r"[<>=~ ]", d)[0]: d for d in listed if not d.startswith("python=")}
    assert listed == spec


def test_version_is_the_projects():
    out = subprocess.run([sys.executable, "-m", "collsim", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == f"collsim {PYPROJECT['project']['version']}"
    assert collsim.__version__ == PYPROJECT["project"]["version"]


@pytest.mark.parametrize("where", ["README.md", "simulate --help", "predict-nccl --help"])
def test_the_same_three_sentences_say_who_predicts_what(where):
    if where.endswith("--help"):
        text = subprocess.run([sys.executable, "-m", "collsim", *where.split()], capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "COLUMNS": "200"}).stdout
    else:
        text = (ROOT / where).read_text()
    assert words(PREDICTORS) in words(text)
    assert PREDICTORS.count(". ") == 2     # three sentences


@pytest.mark.slow
def test_the_wheel_carries_its_data_and_runs_outside_the_checkout(tmp_path):
    """``pip wheel .`` holds the bundled measurements and the packaged fit; installed on its own (no checkout on
    the path, run from another folder) it finds them: ``collsim demo`` and ``predict-nccl`` on a YAML file."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp_path / "w"), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / "w").glob("collsim-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "collsim/fitted/hopper_params.json" in names and "collsim/fitted/sim_params.json" in names
    assert "collsim/data/h200x2/runner/nvlink_Ring_Simple_graph.jsonl" in names
    assert "collsim/data/public/L15_h100x16_2n_ring_minctas24_ndr_aion.jsonl" in names
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    (tmp_path / "c.yaml").write_text("gpu: H100\ngpus_per_node: 8\nnodes: 2\nintra: nvswitch\nnics_per_node: 8\n"
                                     "nic_Gbps: 400\nnet: ib\n")
    env = {**os.environ, "PYTHONPATH": str(site), "MPLBACKEND": "Agg"}
    where = subprocess.run([sys.executable, "-c", "import collsim; print(collsim.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, env=env, check=True).stdout
    assert where.startswith(str(site))
    for argv in (["demo", "--out", "d.png"],
                 ["predict-nccl", "--cluster", "c.yaml", "-b", "1M", "-e", "1G", "-f", "32"]):
        p = subprocess.run([sys.executable, "-m", "collsim", *argv], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=300)
        assert p.returncode == 0, p.stderr
    assert (tmp_path / "d.png").stat().st_size > 10_000


def test_every_module_is_mirrored_by_a_test_or_listed_with_the_tests_that_cover_it():
    readme = (ROOT / "tests" / "README.md").read_text()
    unmirrored = []
    for f in sorted((ROOT / "collsim").rglob("*.py")):
        rel = f.relative_to(ROOT / "collsim")
        if rel == Path("__init__.py"):
            continue
        name = ".".join(("collsim",) + rel.with_suffix("").parts).removesuffix(".__init__")
        stem = rel.parent.name if f.name == "__init__.py" else f.stem
        mirror = ROOT / "tests" / rel.parent / f"test_{stem}.py"
        if not mirror.exists() and f"`{name}`" not in readme:
            unmirrored.append(name)
    assert not unmirrored, f"neither mirrored nor listed in tests/README.md: {unmirrored}"
    named = set(re.findall(r"([a-z_/]+/test_\w+\.py|test_\w+\.py)", readme))
    assert [t for t in named if not (ROOT / "tests" / t).exists()] == []
