"""A real browser runs the widget notebook: JupyterLab + Debian chromium driven by Playwright.

Starts JupyterLab in an isolated temporary environment on a copy of
notebooks/04_alpha_beta.ipynb, runs all cells, moves the first slider of the
CostExplorer and checks that the rendered figure changed; notebook 01's ScheduleExplorer (valid P
only, Play speed, recovery from a machine without NVLink SHARP) and notebook 05's MeasuredVsPredicted
likewise. Recipe: JupyterLab started on a free port in an isolated temporary HOME and Jupyter
config (the ``lab`` fixture), Debian's chromium driven by Playwright (no browser download), autosave
off. In CI (env CI=true) a missing
chromium is a failure; elsewhere the test is skipped.
"""
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "04_alpha_beta.ipynb"
NOTEBOOK05 = NOTEBOOK.parent / "05_from_alpha_beta_to_nccl.ipynb"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
OVERRIDES = {"@jupyterlab/docmanager-extension:plugin": {"autosave": False},
             "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}

pytestmark = pytest.mark.browser


def _need_chromium():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{CHROMIUM} is missing (apt-get install -y chromium): the browser test must run in CI")
        pytest.skip(f"{CHROMIUM} not installed (allowed outside CI only)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def _lab_root(tmp_path, notebook=NOTEBOOK):
    """A temporary server root: a copy of the notebook in notebooks/, the repository's data/ beside it."""
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(notebook, root / "notebooks" / notebook.name)
    (root / "data").symlink_to(NOTEBOOK.parent.parent / "data")
    return root


@pytest.fixture
def lab(tmp_path, request):
    """A JupyterLab server on a free port serving a temporary copy of the notebook (``request.param``
    when parametrized indirectly, else notebook 04) and the data folder."""
    _need_chromium()
    root = _lab_root(tmp_path, getattr(request, "param", NOTEBOOK))
    env = dict(os.environ, JUPYTER_PREFER_ENV_PATH="1", HOME=str(tmp_path / "home"))
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR",
                "JUPYTERLAB_WORKSPACES_DIR", "IPYTHONDIR", "MPLCONFIGDIR"):
        env[var] = str(tmp_path / var.lower())
    settings = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(OVERRIDES))
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}",
         "--ServerApp.token=", "--ServerApp.password=", "--allow-root",
         f"--ServerApp.root_dir={root}"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"))
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                _get(base + "/api/status")
                break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail("JupyterLab did not start: " + (tmp_path / "lab.log").read_text()[-2000:])
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _kernel_idle(base: str) -> bool:
    return any(s.get("kernel", {}).get("execution_state") == "idle" for s in _get(base + "/api/sessions"))


def _open_and_run_all(page, lab: str, name: str):
    """Open notebooks/NAME in JupyterLab, wait for its kernel, Run All Cells; the notebook panel."""
    page.goto(f"{lab}/lab/tree/notebooks/{name}?reset")
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    deadline = time.time() + 60
    while time.time() < deadline:
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and "Select Kernel" in dialog.inner_text():
            dialog.get_by_role("button", name="Select").click()
        if _kernel_idle(lab) and page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]').count():
            break
        time.sleep(0.5)
    else:
        pytest.fail("kernel never became idle")
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-item:not(.lm-mod-disabled) .lm-Menu-itemLabel",
                 has_text=re.compile(r"^Run All Cells$")).click()
    return panel


def test_slider_changes_rendered_figure(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        panel = _open_and_run_all(page, lab, NOTEBOOK.name)
        image = panel.locator(".widget-image").first
        image.wait_for(state="visible", timeout=60_000)
        slider = panel.locator(".widget-slider").first
        readout = slider.locator(".widget-readout")
        before_value = readout.inner_text()
        page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle(),
                               timeout=30_000)
        before_src = image.get_attribute("src")
        before_shot = hashlib.sha256(image.screenshot()).hexdigest()
        handle = slider.locator(".noUi-handle")
        handle.click()
        for _ in range(6):
            handle.press("ArrowRight")
        page.wait_for_function("([el, old]) => el.src !== old && el.complete && el.naturalWidth > 0",
                               arg=[image.element_handle(), before_src], timeout=30_000)
        assert readout.inner_text() != before_value
        after_shot = hashlib.sha256(image.screenshot()).hexdigest()
        assert after_shot != before_shot, "the figure did not change after moving the slider"
        # End on NICs/node after GPUs/node grew to 16 reaches 16 (the slider's range grew with it)
        for label in ("GPUs/node", "NICs/node"):
            handle = panel.locator(".widget-slider", has_text=label).locator(".noUi-handle")
            handle.focus()
            handle.press("End")
            page.wait_for_timeout(300)
            end = time.time() + 30                 # the kernel has answered (and replaced the NICs slider)
            while not _kernel_idle(lab) and time.time() < end:
                time.sleep(0.1)
            readout = panel.locator(".widget-slider", has_text=label).locator(".widget-readout")
            page.wait_for_function("el => el.textContent.trim() === '16'", arg=readout.element_handle(),
                                   timeout=30_000)
        browser.close()


def test_executed_html_shows_figures_and_widgets(tmp_path):
    """``python -m collsim.widgets.notebooks_html`` on notebooks 01 and 05, read by chromium with every
    request that is not a local file blocked: the index links the pages; 05 shows a figure and the
    MeasuredVsPredicted widget drawn from its saved state; 01's ScheduleExplorer was saved settled (its
    status and timeline belong to the configuration on screen, the step slider says 3 as the grid does);
    the animation players' and widgets' icons come from the bundled fonts (FontAwesome loads, no request
    fails but the CDN scripts nothing on the page needs); every widget sits under a note that it is a saved
    state, and its controls are disabled."""
    _need_chromium()
    from playwright.sync_api import sync_playwright

    from collsim.widgets import notebooks_html

    out = tmp_path / "html"
    rows = notebooks_html.build(out, only=["01", "05"])
    assert [r["name"][:2] for r in rows] == ["01", "05"] and (out / "index.html").exists()
    if not (out / notebooks_html.EMBED).exists() or not (out / notebooks_html.FA_CSS).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("npm could not fetch the widget renderer or font-awesome: pages would need a CDN")
        pytest.skip("npm not available: the page's widgets would load from a CDN")
    assert list((out / "_static").glob("*.woff2"))                        # the widgets' icon fonts
    assert list((out / "_static" / "font-awesome" / "fonts").glob("*.woff2"))    # the players' icons
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        blocked, failed = [], []
        context.route(re.compile(r"^(?!file:).*"), lambda route: (blocked.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto((out / "index.html").as_uri())
        link = page.locator("a", has_text=re.compile("From alpha-beta to NCCL"))
        assert link.count() == 1
        link.click()
        page.wait_for_load_state("load")
        figure = page.locator(".jp-OutputArea-output img[src^='data:image/png']").first
        figure.wait_for(state="visible", timeout=30_000)
        assert figure.evaluate("el => el.naturalWidth") > 100
        widget = page.locator(".widget-image img, img.widget-image").first     # MeasuredVsPredicted's picture
        widget.wait_for(state="visible", timeout=30_000)
        assert widget.evaluate("el => el.naturalWidth") > 100
        runs = page.locator(".widget-dropdown select").first
        assert "run 1: runner, CUDA graphs" in runs.inner_text().replace("\xa0", " ")
        assert ("sizes (all scored; the parameters were fitted on this run's even sizes); "
                "model_us") in page.locator(".widget-html").first.inner_text().replace("\xa0", " ")
        assert runs.is_disabled() and page.locator(".collsim-static-note").count() >= 1

        page.goto((out / "01_ring.html").as_uri())
        page.wait_for_load_state("load")
        box = page.locator(".widget-vbox", has=page.locator(".widget-play")).first
        box.wait_for(state="visible", timeout=30_000)
        box.scroll_into_view_if_needed()
        texts = " ".join(box.locator(".widget-html").all_inner_texts()).replace("\xa0", " ")
        assert "simulating" not in texts and "P=16" in texts and "after 3 of 30 steps" in texts
        assert "shaded: step 4 of 30" in texts
        steps = box.locator(".widget-slider", has_text="steps done").locator(".widget-readout")
        assert steps.inner_text().strip() == "3"
        play_icon = box.locator(".widget-play button i, .widget-play button .fa").first
        glyph = play_icon.evaluate("e => getComputedStyle(e, '::before').content") if play_icon.count() else ""
        assert glyph not in ("", "none")
        assert all(box.locator("select").nth(i).is_disabled() for i in range(box.locator("select").count()))
        page.locator(".animation").first.scroll_into_view_if_needed()
        page.wait_for_function("document.fonts.check('14px FontAwesome')", timeout=10_000)
        assert page.evaluate("document.fonts.check('14px FontAwesome')")
        assert not [u for u in failed if u not in blocked], failed
        assert all("require" in u or "mathjax" in u.lower() for u in blocked), blocked
        browser.close()


@pytest.mark.parametrize("lab", [NOTEBOOK05], indirect=True)
def test_measured_widget_switches_runs_and_survives_a_bad_path(lab):
    """Notebook 05 in JupyterLab: pick another bundled run in MeasuredVsPredicted's run dropdown (the
    picture and status change), type a path that is no measurement and press load (an error line, the
    picture stays), then pick another configuration (the widget still answers)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        panel = _open_and_run_all(page, lab, NOTEBOOK05.name)
        box = panel.locator(".widget-vbox", has=page.locator(".widget-upload")).first
        image = box.locator(".widget-image").first
        image.wait_for(state="visible", timeout=90_000)
        status = box.locator(".widget-html").last
        quiet, deadline = 0, time.time() + 90         # Run All done: the driving cell has moved the widget
        while quiet < 4 and time.time() < deadline:
            quiet = quiet + 1 if _kernel_idle(lab) else 0
            time.sleep(0.5)

        def changed(old):
            page.wait_for_function("([el, old]) => el.src !== old && el.complete && el.naturalWidth > 0",
                                   arg=[image.element_handle(), old], timeout=30_000)
            return image.get_attribute("src")

        box.scroll_into_view_if_needed()
        src = image.get_attribute("src")
        box.locator(".widget-dropdown select").first.select_option(label="run 2: runner, CUDA graphs")
        src = changed(src)
        page.wait_for_function("el => el.textContent.includes('run 2')", arg=status.element_handle(), timeout=30_000)
        box.locator(".widget-text input").fill("../README.md")
        box.locator("button.widget-button", has_text=re.compile(r"^load$")).click()
        page.wait_for_function("el => el.textContent.includes('could not show')", arg=status.element_handle(),
                               timeout=30_000)
        assert image.get_attribute("src") == src
        configs = box.locator(".widget-dropdown select").nth(1)
        configs.select_option(index=3)
        changed(src)
        assert "could not" not in status.text_content()
        browser.close()


NOTEBOOK01 = NOTEBOOK.parent / "01_ring.ipynb"


@pytest.mark.parametrize("lab", [NOTEBOOK01], indirect=True)
def test_schedule_explorer_valid_ranks_play_speed_and_recovery(lab):
    """Notebook 01 in JupyterLab, ScheduleExplorer: arrow keys on the P slider step only through rank
    counts the machine allows (8 -> 16 on 8-GPU nodes, never 9); Play advances the step slider faster
    at 0.1 s a step than at 1.5 s a step; NVLS on a machine without NVLink SHARP gives a message, the
    step slider still redraws the grid, and picking the ring again clears the message."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        panel = _open_and_run_all(page, lab, NOTEBOOK01.name)
        box = panel.locator(".widget-vbox", has=page.locator(".widget-play")).first
        grid = box.locator(".widget-image").first
        grid.wait_for(state="visible", timeout=90_000)
        quiet, deadline = 0, time.time() + 90         # Run All done: the driving cell set ib-400g, P = 16
        while quiet < 4 and time.time() < deadline:
            quiet = quiet + 1 if _kernel_idle(lab) else 0
            time.sleep(0.5)
        box.scroll_into_view_if_needed()
        status = box.locator(".widget-html").first

        def readout(label):
            return box.locator(".widget-slider", has_text=label).locator(".widget-readout").inner_text().strip()

        def wait_idle():
            page.wait_for_timeout(300)
            end = time.time() + 30
            while not _kernel_idle(lab) and time.time() < end:
                time.sleep(0.1)

        # 1. P: only valid rank counts (8 GPUs per node on ib-400g)
        assert readout("P (ranks)") == "16"
        handle = box.locator(".widget-slider", has_text="P (ranks)").locator(".noUi-handle")
        seen = []
        for key in ("ArrowLeft", "ArrowRight", "ArrowRight"):
            handle.press(key)
            wait_idle()
            seen.append(readout("P (ranks)"))
        assert seen == ["8", "16", "24"], seen
        page.wait_for_function("el => el.textContent.includes('P=24')", arg=status.element_handle(), timeout=30_000)
        assert "color:#b00" not in (status.inner_html() or "")
        # End on the step slider reaches the new last step (the range grew from the first ring's 6 steps)
        step_handle = box.locator(".widget-slider", has_text="steps done").locator(".noUi-handle")
        step_handle.focus()
        step_handle.press("End")
        wait_idle()
        assert readout("steps done") == str(2 * (24 - 1))

        # 2. Play speed: steps advanced in the same wall time, fast against slow
        speed = box.locator(".widget-dropdown select").nth(2)
        play = box.locator(".widget-play button").first

        def advance(label):
            speed.select_option(label=label)
            box.locator(".widget-play button").nth(1).click()          # stop: back to step 0
            wait_idle()
            start = int(readout("steps done"))
            play.click()
            page.wait_for_timeout(2500)
            play.click()                                                # pause
            return int(readout("steps done")) - start

        fast, slow = advance("fast: 0.1 s a step"), advance("slow: 1.5 s a step")
        assert fast >= 8 and slow <= 3 and fast > slow, (fast, slow)

        # 3. NVLS where the machine has no NVLink SHARP: a message, the widget still answers, then it clears
        box.locator(".widget-dropdown select").nth(0).select_option(label="nvls")
        wait_idle()
        box.locator(".widget-dropdown select").nth(1).select_option(label="a100-nvlink")
        page.wait_for_function("el => el.textContent.includes('NVLink SHARP')", arg=status.element_handle(),
                               timeout=30_000)
        before = grid.get_attribute("src")
        step = box.locator(".widget-slider", has_text="steps done").locator(".noUi-handle")
        step.press("ArrowRight")
        page.wait_for_function("([el, old]) => el.src !== old", arg=[grid.element_handle(), before], timeout=30_000)
        box.locator(".widget-dropdown select").nth(0).select_option(label="ring")
        page.wait_for_function("el => !el.textContent.includes('NVLink SHARP') && el.textContent.includes('a100')",
                               arg=status.element_handle(), timeout=30_000)
        browser.close()
