"""A real browser runs the widget notebook: JupyterLab + Debian chromium driven by Playwright.

Starts JupyterLab in an isolated temporary environment on a copy of
notebooks/04_alpha_beta.ipynb, runs all cells, moves the first slider of the
CostExplorer and checks that the rendered figure changed. Recipe:
/work/shared/reference/browser-testing.md. In CI (env CI=true) a missing
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


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on a free port serving a temporary copy of the notebook folder."""
    _need_chromium()
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
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


def test_slider_changes_rendered_figure(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{lab}/lab/tree/{NOTEBOOK.name}?reset")
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
        browser.close()
