"""Executed HTML of the course notebooks, readable in any browser with nothing installed.

    python -m collsim.widgets.notebooks_html OUT [--notebooks DIR] [--only 05 08 ...]

Runs every notebook of ``notebooks/`` (or those whose names start with ``--only``) top to bottom
with nbclient in its own folder, keeping the widgets' state (``store_widget_state=True``), converts
each to HTML with nbconvert's "lab" template (figures and animations are in the page) and writes
OUT/index.html listing them with their titles and run times. Widgets are drawn in the page from
their saved state by @jupyter-widgets/html-manager's ``embed.js``, copied into OUT/_static/ with its
icon fonts from the npm registry (``npm pack``) when npm is there, else loaded from a CDN by the
reader's browser; the animations' players get their icons from the npm package font-awesome 4.7,
copied into OUT/_static/font-awesome/, so the pages need no network. In the static page a widget
shows the state it was saved in: a note above it says so, and its controls are disabled (computing
needs a kernel: ``bash scripts/notebooks.sh``).
"""
from __future__ import annotations

import argparse
import html
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from collsim.errors import CollsimError
from collsim.outputs import atomic_write, printable

ROOT = Path(__file__).resolve().parents[2]   # the checkout: its notebooks/ folder
# ipywidgets 8's widget state (version_major 2)
HTML_MANAGER = "@jupyter-widgets/html-manager@1"
EMBED = "_static/embed.js"
FONT_AWESOME = "font-awesome@4.7.0"                    # the icons of matplotlib's animation players
FA_CSS = "_static/font-awesome/css/font-awesome.min.css"
FONTS = (".woff2", ".woff", ".ttf", ".eot", ".svg", ".otf")
CDN_FA = re.compile(r"https?://[^\"']*font-awesome[^\"']*\.css")
STATIC_NOTE = ("saved widget: it shows the state it was left in, and its controls compute nothing "
               "here (they need a running kernel: bash scripts/notebooks.sh)")
STATIC_JS = """<style>.collsim-static-note{font:italic 85% sans-serif;color:#555;margin:0.3em 0}
.jupyter-widgets input,.jupyter-widgets select,.jupyter-widgets button,.jupyter-widgets textarea,
.jupyter-widgets .noUi-target{pointer-events:none}</style>
<script>(function(){
  function still(root){
    root.querySelectorAll('.jupyter-widgets input,.jupyter-widgets select,.jupyter-widgets button,'
      + '.jupyter-widgets textarea').forEach(function(e){e.disabled=true;});
    root.querySelectorAll('.jupyter-widgets .noUi-handle')
      .forEach(function(e){e.setAttribute('tabindex','-1');});
    root.querySelectorAll('.jupyter-widgets .noUi-target')
      .forEach(function(e){e.setAttribute('disabled','');});
  }
  document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')
    .forEach(function(s){
    var d=document.createElement('div'); d.className='collsim-static-note'; d.textContent=NOTE;
    s.parentNode.insertBefore(d,s);
  });
  new MutationObserver(function(){still(document);})
    .observe(document.body,{childList:true,subtree:true});
  still(document);
})();</script>
"""


def _npm_files(package: str, wanted) -> dict[str, bytes] | None:
    """The files of npm ``package`` (``npm pack``) whose path inside it (after ``package/``)
    ``wanted`` accepts, by that path; None without npm or when the pack fails."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([npm, "pack", package, "--silent"], cwd=tmp,
                              capture_output=True, text=True, timeout=300)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if proc.returncode != 0 or not tarballs:
            return None
        with tarfile.open(tarballs[0]) as tar:
            return {m.name.removeprefix("package/"): tar.extractfile(m).read()
                    for m in tar.getmembers()
                    if m.isfile() and wanted(m.name.removeprefix("package/"))}


def vendor_widgets_js(out: Path) -> str | None:
    """Copy html-manager's standalone ``dist/embed.js`` (standard widgets, no require.js) into
    ``out/_static`` with ``npm pack``, with the icon fonts it asks for beside itself; its URL
    relative to ``out``, or None without npm."""
    target = out / EMBED
    if target.exists():
        return EMBED
    files = _npm_files(HTML_MANAGER, lambda rel: rel == "dist/embed.js" or (rel.startswith("dist/")
                                                                           and rel.endswith(FONTS)))
    if not files or "dist/embed.js" not in files:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        (target.parent / Path(rel).name).write_bytes(data)
    return EMBED


def vendor_font_awesome(out: Path) -> str | None:
    """Copy font-awesome 4.7's CSS and fonts (npm) into ``out/_static/font-awesome``; the CSS's URL
    relative to ``out``, or None without npm."""
    if (out / FA_CSS).exists():
        return FA_CSS
    files = _npm_files(FONT_AWESOME,
                       lambda rel: (rel == "css/font-awesome.min.css"
                                    or (rel.startswith("fonts/") and rel.endswith(FONTS))))
    for rel, data in (files or {}).items():
        dest = out / "_static" / "font-awesome" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
    return FA_CSS if (out / FA_CSS).exists() else None


def execute(path: Path, timeout: int = 120):
    """The notebook at ``path`` run top to bottom in its folder, widget state kept."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def title(nb) -> str:
    """The first markdown heading of a notebook."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return ""


def to_html(nb, widgets_js: str | None, icons_css: str | None = None) -> str:
    """nbconvert's lab-template HTML of an executed notebook, widgets drawn by ``widgets_js``, the
    animation players' icons from ``icons_css`` (else the CDN matplotlib names), each widget under a
    note that it is a saved state, its controls disabled."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", widget_renderer_url=widgets_js or "")
    body, _ = exporter.from_notebook_node(nb)
    if icons_css:
        body = CDN_FA.sub(icons_css, body)
    script = STATIC_JS.replace("NOTE", repr(STATIC_NOTE))
    return body.replace("</body>", script + "</body>", 1) if "</body>" in body else body + script


def writable_folder(out: Path) -> None:
    """Create ``out`` (and its parents) and prove a file can be written in it, or one CollsimError
    line: a file or a device (/dev/full) in its place, a path under a file, a read-only or full
    file system."""
    if out.exists() and not out.is_dir():
        raise CollsimError(f"cannot write into {out}: not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-") as f:
            f.write(b"\0" * 65536)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise CollsimError(f"cannot write into {out}: {e.strerror or e}") from None


def build(out, notebooks=ROOT / "notebooks", only=None, timeout: int = 120) -> list[dict]:
    """Write OUT/<name>.html for each notebook and OUT/index.html; returns one row per notebook
    (name, title, seconds to run)."""
    out, notebooks = Path(out), Path(notebooks)
    paths = sorted(p for p in notebooks.glob("*.ipynb") if not only
                   or any(p.name.startswith(o) for o in only))
    if not paths:
        raise CollsimError(f"no notebooks in {notebooks}"
                           + (f" starting with {', '.join(only)}" if only else ""))
    writable_folder(out)                     # before minutes of running notebooks
    js = vendor_widgets_js(out)
    icons = vendor_font_awesome(out)
    rows = []
    for path in paths:
        t = time.perf_counter()
        nb = execute(path, timeout)
        seconds = time.perf_counter() - t
        page = path.with_suffix(".html").name
        with atomic_write(out / page, "page") as f:
            f.write(to_html(nb, js, icons))
        rows.append({"name": path.stem, "page": page, "title": title(nb), "seconds": seconds})
        print(f"{path.name}: {seconds:.1f} s -> {out / page}", file=sys.stderr)
    items = "\n".join('<li><a '
                      f'href="{html.escape(r["page"])}">{html.escape(r["title"] or r["name"])}</a> '
                      f'<small>({html.escape(r["name"])}.ipynb, ran in {r["seconds"]:.1f} '
                      's)</small></li>'
                      for r in rows)
    widgets = ("widgets are drawn from their saved state" if js else
               "widgets load their renderer from a CDN (npm was not available when this was built)")
    with atomic_write(out / "index.html", "index") as f:
        f.write(f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>collsim course notebooks</title></head>
<body style="font-family: sans-serif; max-width: 52em; margin: 2em auto">
<h1>collsim course notebooks</h1>
<p>Executed on {time.strftime('%Y-%m-%d')} with their outputs, figures and animations;
{widgets} (their controls need a running kernel: <code>bash scripts/notebooks.sh</code>).</p>
<ol>
{items}
</ol>
</body></html>
""")
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m collsim.widgets.notebooks_html",
                                description=__doc__.splitlines()[0])
    p.add_argument("out", help="folder to write index.html and one page per notebook into")
    p.add_argument("--notebooks", default=str(ROOT / "notebooks"), help="folder of the notebooks")
    p.add_argument("--only", nargs="*", help="notebooks whose names start with these (e.g. 05 08)")
    p.add_argument("--timeout", type=int, default=120, help="seconds a cell may run")
    args = p.parse_args(argv)
    try:
        build(args.out, args.notebooks, args.only, args.timeout)
    except (CollsimError, OSError) as e:   # an OSError too: one line, never a traceback
        print(f"notebooks_html: error: {printable(e)}", file=sys.stderr)
        return 2
    print(Path(args.out) / "index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
