"""The package's rooms, in loop order (README "Layout"); the import-graph rules of architecture.md.

- Every import of a collsim module, at the top of a file or inside a function, goes from a room to the
  same or an earlier one (``collsim/__init__.py``, the front door, names the loop's verbs from every room).
- No import cycle among modules, lazy imports included (a package's ``__init__`` may import its modules).
- An import inside a function is there only for a heavy or optional package (``HEAVY``), or for a collsim
  module that pulls one in at its top: everything else is imported at the top of the file.
- Nothing but the widgets imports ipywidgets; no module imports torch (only the runners do).
- No module over 300 lines; at most 10 modules at the top level of the package.
"""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "collsim"
# room of each module, by dotted prefix (the longest prefix wins); order = the loop
ROOMS = [
    ("collsim", 0), ("collsim.errors", 0), ("collsim.units", 0), ("collsim.inputs", 0), ("collsim.outputs", 0),
    ("collsim.predictors", 0), ("collsim.launch", 0),
    ("collsim.machine", 1),
    ("collsim.core", 2), ("collsim.algorithms", 3), ("collsim.cost", 4),
    ("collsim.simulate", 5), ("collsim.sweep", 6), ("collsim.nccl", 7), ("collsim.fitted", 8),
    ("collsim.predict", 9), ("collsim.measure", 10), ("collsim.fit", 11), ("collsim.diagnose", 12),
    ("collsim.strategies", 13), ("collsim.viz", 14), ("collsim.widgets", 15), ("collsim.cli", 16),
    ("collsim.__main__", 16),
]
# third-party packages worth importing only when used: slow to import, or optional (extras)
HEAVY = {"torch", "ipywidgets", "IPython", "matplotlib", "scipy", "PIL", "nbformat", "nbclient", "nbconvert",
         "pandas", "playwright", "tqdm", "numba"}
MAX_LINES = 300
MAX_TOP_LEVEL = 10


def room(module: str) -> int:
    best = max((p for p, _ in ROOMS if module == p or module.startswith(p + ".")), key=len)
    return dict(ROOMS)[best]


def modules():
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


NAMES = {n for n, _ in modules()}


def imports(path: Path, name: str):
    """(imported module, top level?, line) for every import in the file; ``from pkg import mod`` names the
    module when ``pkg.mod`` is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in NAMES else base for a in node.names]
        else:
            continue
        for t in dict.fromkeys(targets):
            yield t, id(node) in top, node.lineno


def _graph(lazy: bool):
    return {name: {t for t, top, _ in imports(path, name) if (lazy or top) and t in NAMES and t != name}
            for name, path in modules()}


def heavy_modules() -> set:
    """collsim modules that import a HEAVY package at their top, directly or through other collsim modules."""
    graph = _graph(lazy=False)
    direct = {name for name, path in modules()
              if any(top and t.split(".")[0] in HEAVY for t, top, _ in imports(path, name))}
    heavy, grew = set(direct), True
    while grew:
        grew = False
        for name, deps in graph.items():
            if name not in heavy and deps & heavy:
                heavy.add(name)
                grew = True
    return heavy


def test_rooms_in_loop_order():
    bad = [f"{name} imports {t}" for name, path in modules() for t, _, _ in imports(path, name)
           if t.startswith("collsim") and t in NAMES and room(t) > room(name) and name != "collsim"]
    assert not bad, bad


def test_no_import_cycles_lazy_imports_included():
    graph = _graph(lazy=True)
    state = {}
    sys.setrecursionlimit(10000)

    def visit(n, stack):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1 and not n.startswith(m + "."):   # a package's __init__ may import its modules
                pytest.fail(f"import cycle: {' -> '.join(stack + [m])}")
            if not state.get(m):
                visit(m, stack + [m])
        state[n] = 2
    for n in sorted(graph):
        if not state.get(n):
            visit(n, [n])


def test_lazy_imports_only_for_heavy_or_optional_packages():
    heavy = heavy_modules()
    bad = [f"{path.relative_to(ROOT)}:{line} imports {t} inside a function" for name, path in modules()
           for t, top, line in imports(path, name)
           if not top and t.split(".")[0] not in HEAVY and t not in heavy]
    assert not bad, bad


@pytest.mark.parametrize("heavy, allowed", [("torch", ()), ("ipywidgets", ("collsim.widgets",))])
def test_core_never_imports_torch_or_ipywidgets(heavy, allowed):
    bad = [f"{name} imports {t}" for name, path in modules() for t, _, _ in imports(path, name)
           if (t == heavy or t.startswith(heavy + ".")) and not name.startswith(allowed)]
    assert not bad, bad


def test_modules_are_small_and_few_at_the_top():
    big = [(n, len(p.read_text().splitlines())) for n, p in modules() if len(p.read_text().splitlines()) > MAX_LINES]
    assert not big, big
    top = [p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")]
    assert len(top) <= MAX_TOP_LEVEL, top


def test_every_module_has_a_room():
    """A new room must be placed in the loop (ROOMS above) before it can hold modules."""
    unplaced = [n for n in NAMES if max((len(p) for p, _ in ROOMS if n == p or n.startswith(p + ".")), default=0)
                == len("collsim") and n not in dict(ROOMS)]
    assert not unplaced, unplaced


def test_readme_layout_names_every_room_and_runner():
    """README's Layout table names every room and top-level module of the package and every runner; the
    rooms' own docstrings name their modules."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    layout = layout[:layout.find("\n## ", 4)] if "\n## " in layout[4:] else layout
    rooms = [p for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    tops = [p for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")]
    missing = [f"collsim/{p.name}/" for p in rooms if f"collsim/{p.name}/" not in layout]
    missing += [p.name for p in tops if f"`{p.name}`" not in layout and f"collsim/{p.name}" not in layout]
    missing += [p.name for p in (ROOT / "runners").glob("*.py") if p.name not in layout]
    assert not missing, f"README Layout does not name: {missing}"
    undocumented = []
    for r in rooms:
        doc = ast.get_docstring(ast.parse((r / "__init__.py").read_text())) or ""
        undocumented += [f"{r.name}/{m.name}" for m in r.glob("*.py")
                         if m.name != "__init__.py" and m.stem not in doc]
    assert not undocumented, f"rooms' docstrings do not name: {undocumented}"
