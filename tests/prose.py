"""Numbers in the notebooks' prose tied to what the cells compute.

A number a markdown cell states from the outputs is written as it reads, followed by an HTML comment
holding the f-string that prints it from the previous cells' variables: ``within 1.01<!--{r:.2f}--> of``
renders as "within 1.01 of" in JupyterLab and the HTML. ``inject`` adds after each tagged markdown cell a
code cell that prints those f-strings (run in the same kernel, so with the state of the cells above);
``mismatches`` compares what was printed with what is written. ``tests/test_notebooks.py`` runs both on
every notebook, so a number in the prose that the code no longer gives fails the suite.
"""
import json
import re

TAG = re.compile(r"([^\s(\[*~]+)<!--(\{.+?\})-->")
MARK = "prose-numbers:"


def tags(source: str) -> list[tuple[str, str]]:
    """(written number, f-string template) of every tag of a markdown cell."""
    return [(m.group(1), m.group(2)) for m in TAG.finditer(source)]


def inject(nb) -> list[tuple[int, list]]:
    """Insert a checking code cell after every tagged markdown cell of ``nb`` (an nbformat notebook); the
    (index of each inserted cell, its tags)."""
    import nbformat

    out, i = [], 0
    while i < len(nb.cells):
        cell = nb.cells[i]
        found = tags(cell.source) if cell.cell_type == "markdown" else []
        if found:
            body = ", ".join(f'f"""{t}"""' for _, t in found)
            code = f"import json as _j\nprint({MARK!r} + _j.dumps([{body}]))"
            nb.cells.insert(i + 1, nbformat.v4.new_code_cell(code))
            out.append((i + 1, found))
            i += 1
        i += 1
    return out


def mismatches(nb, injected) -> list[str]:
    """'written X, computed Y (template)' for every tag whose number the cells above do not give."""
    bad = []
    for i, found in injected:
        text = "".join(o.get("text", "") for o in nb.cells[i].outputs)
        line = next((ln for ln in text.splitlines() if ln.startswith(MARK)), None)
        if line is None:
            bad.append(f"cell {i - 1}: the tags did not print ({text[-200:]!r})")
            continue
        for (written, template), got in zip(found, json.loads(line[len(MARK):])):
            if written != got:
                bad.append(f"cell {i - 1}: written {written}, computed {got} ({template})")
    return bad
