"""The package's rooms, in loop order: schedule -> predict -> measure -> fit -> strategies -> picture -> cli.
(collsim/__init__.py, the front door, names the loop's verbs from every room.)

Every import of a collsim module (at the top of a file or inside a function) goes from a room to the
same or an earlier one; the top-level imports form no cycle; nothing but the widgets, the CLI and the
notebooks' helpers imports ipywidgets, and no module imports torch (only the runners do)."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "collsim"
# room of each module, by dotted prefix (the longest prefix wins); order = the loop
ROOMS = [
    ("collsim", 0), ("collsim.errors", 0), ("collsim.units", 0), ("collsim.inputs", 0),
    ("collsim.outputs", 0),
    ("collsim.schedule", 1), ("collsim.compose", 1), ("collsim.checker", 1), ("collsim.execution", 1),
    ("collsim.rank_plan", 1),
    ("collsim.algorithms", 1),
    ("collsim.cost", 2), ("collsim.simulate", 3), ("collsim.sweep", 4), ("collsim.nccl", 5),
    ("collsim.measure", 6), ("collsim.fit", 7), ("collsim.strategies", 8), ("collsim.viz", 9),
    ("collsim.widgets", 10), ("collsim.cli", 11), ("collsim.__main__", 11),
]


def room(module: str) -> int:
    best = max((p for p, _ in ROOMS if module == p or module.startswith(p + ".")), key=len)
    return dict(ROOMS)[best]


def modules():
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def imports(path: Path, package: str):
    """(imported module, top level?) for every import in the file."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for n in names:
            yield n, id(node) in top


def test_rooms_in_loop_order():
    bad = []
    for name, path in modules():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target, _ in imports(path, package):
            if target.startswith("collsim") and room(target) > room(name) and name != "collsim":   # the front door
                bad.append(f"{name} imports {target}")
    assert not bad, bad


def test_no_cycles_at_top_level():
    graph = {}
    names = {n for n, _ in modules()}
    for name, path in modules():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = {t for t, top in imports(path, package) if top and t in names and t != name}
    state = {}

    def visit(n, stack):
        state[n] = 1
        for m in graph.get(n, ()):
            if state.get(m) == 1 and not n.startswith(m + "."):   # a package's __init__ may import its modules
                pytest.fail(f"import cycle: {' -> '.join(stack + [m])}")
            if not state.get(m):
                visit(m, stack + [m])
        state[n] = 2
    for n in sorted(graph):
        if not state.get(n):
            visit(n, [n])


@pytest.mark.parametrize("heavy, allowed", [("torch", ()), ("ipywidgets", ("collsim.widgets",))])
def test_core_never_imports_torch_or_ipywidgets(heavy, allowed):
    bad = [f"{name} imports {t}" for name, path in modules() for t, _ in imports(path, name)
           if (t == heavy or t.startswith(heavy + ".")) and not name.startswith(allowed)]
    assert not bad, bad


def test_modules_are_small():
    big = [(n, len(p.read_text().splitlines())) for n, p in modules() if len(p.read_text().splitlines()) > 330]
    assert not big, big


def test_readme_layout_names_every_module():
    """README's Layout section names every module of the package and every runner."""
    readme = (PKG.parent / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    files = [p for p in PKG.rglob("*") if p.suffix in (".py", ".json") and p.name not in ("__init__.py", "__main__.py")]
    files += [p for p in (PKG.parent / "runners").glob("*.py")]
    missing = sorted(str(p.relative_to(PKG.parent)) for p in files if f"`{p.name}`" not in layout
                     and f"{p.parent.name}/{p.name}" not in layout)
    assert not missing, f"README Layout does not name: {missing}"
