"""The Viewer in a real browser: JupyterLab on 127.0.0.1 runs a generated notebook that shows a
Viewer, and Playwright drives Debian's Chromium through it: Run All Cells, Next batch, a slider
moved with the keyboard; each must change the picture on the page. A screenshot of the viewer is
saved to tests/artifacts/viewer.png; with AUGKIT_UPDATE_SCREENSHOT=1 it is also copied to
docs/viewer.png (the README shows it).

Needs /usr/bin/chromium (``make test`` installs it) and Playwright (the ``dev`` extra); with
``AUGKIT_SKIP_BROWSER=1`` the test is skipped instead of failing where they are missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import nbformat
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = pathlib.Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 30_000  # per step: the first run of the pipeline imports torch in the kernel

pytestmark = pytest.mark.browser

NOTEBOOK_CELLS = [
    """\
import numpy as np
from augkit import Pipeline, fn, types
from augkit.widgets import Viewer


def brighten(image, amount=20):
    return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)


pipe = Pipeline(batch_size=8, num_threads=2, device_id=None, seed=3)
with pipe:
    jpegs, labels = fn.readers.file(file_root={images!r}, random_shuffle=True)
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    images = fn.resize(images, resize_x=160, resize_y=160)
    angle = fn.random.uniform(range=(-20.0, 20.0))
    images = fn.rotate(images, angle=angle, keep_size=True, fill_value=0)
    pipe.set_outputs(fn.python_function(images, function=brighten, name="brighten"), labels)""",
    """\
viewer = Viewer(pipe, columns=4, tile=160, params={{"brighten": {{"amount": (0, 100, 5)}}}})
viewer""",
]


def _require(tool: str, missing: bool, how: str) -> None:
    if not missing:
        return
    message = f"the browser test needs {tool}: {how}"
    if os.environ.get("AUGKIT_SKIP_BROWSER") == "1":
        pytest.skip(f"{message} (skipped: AUGKIT_SKIP_BROWSER=1)")
    pytest.fail(f"{message}; or set AUGKIT_SKIP_BROWSER=1 to skip it", pytrace=False)


def _playwright() -> Any:
    """Playwright's ``sync_playwright``, once Chromium and Playwright are known to be here."""
    _require(
        str(CHROMIUM),
        not CHROMIUM.exists(),
        "run `make test`, which installs Debian's chromium (apt-get install -y chromium, as root)",
    )
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _require("Playwright", True, "run `make test`, which installs the dev extra")
    return sync_playwright


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


@contextlib.contextmanager
def _jupyterlab(folder: pathlib.Path) -> Iterator[str]:
    """JupyterLab serving ``folder``, where it writes viewer_smoke.ipynb; yields its URL."""
    notebook = nbformat.v4.new_notebook()
    images = str(ROOT / "data" / "images")
    notebook.cells = [nbformat.v4.new_code_cell(c.format(images=images)) for c in NOTEBOOK_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(notebook, folder / "viewer_smoke.ipynb")
    settings = folder / ".settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No "get Jupyter news?" toast over the page, no request for news or updates.
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    port = _free_port()
    env = {
        **os.environ,
        # Keep the user's JupyterLab settings and workspaces out of it, and it out of them.
        "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(folder / ".workspaces"),
        "JUPYTER_RUNTIME_DIR": str(folder / ".runtime"),
    }
    log = (folder / "lab.log").open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={folder}",
            "--allow-root",
            "--no-browser",
        ],
        cwd=folder,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError):
                _get(f"{url}/api/status")
                break
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{(folder / 'lab.log').read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        with contextlib.suppress(OSError, ValueError):  # HTTPError is an OSError
            for kernel in json.loads(_get(f"{url}/api/kernels")):
                request = urllib.request.Request(
                    f"{url}/api/kernels/{kernel['id']}", method="DELETE"
                )
                urllib.request.urlopen(request, timeout=10).close()
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def _wait_for_idle_kernel(url: str) -> None:
    """Wait until the notebook's kernel has started and the page is connected to it: cells
    run before that are silently not run."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    kernels: Any = "no answer yet"
    while time.monotonic() < deadline:
        try:
            kernels = json.loads(_get(f"{url}/api/kernels"))
        except urllib.error.HTTPError as error:
            # jupyter_server answers 500 while a kernel it lists has started but is not watched
            # yet (its model has no execution_state): a race on its side; ask again.
            if error.code != 500:
                raise
            kernels = f"HTTP {error.code}"
            time.sleep(0.2)
            continue
        if any(k["execution_state"] == "idle" and k["connections"] > 0 for k in kernels):
            return
        time.sleep(0.2)
    pytest.fail(f"the notebook's kernel did not start: {kernels}")


# The bytes behind the viewer's <img> (ipywidgets shows them through a blob: URL), as a digest.
IMAGE_DIGEST = """async (img) => {
    const bytes = await (await fetch(img.src)).arrayBuffer();
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest)).map(b => b.toString(16).padStart(2, "0")).join("");
}"""


def test_viewer_in_jupyterlab(tmp_path):
    sync_playwright = _playwright()
    with _jupyterlab(tmp_path) as lab, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 1400})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            page.goto(f"{lab}/lab/tree/viewer_smoke.ipynb")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for()
            _wait_for_idle_kernel(lab)
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            viewer = page.locator(".jp-OutputArea-output .widget-vbox").first
            image = viewer.locator("img.widget-image")
            image.wait_for()
            first = image.evaluate(IMAGE_DIGEST)

            def wait_for_a_new_picture(source: str | None) -> str:
                page.wait_for_function(
                    "([img, old]) => img.src !== old", arg=[image.element_handle(), source]
                )
                assert "Traceback" not in viewer.inner_text()  # the viewer's error panel
                return image.evaluate(IMAGE_DIGEST)

            source = image.get_attribute("src")
            viewer.get_by_role("button", name="Next batch").click()
            after_next = wait_for_a_new_picture(source)
            assert after_next != first

            source = image.get_attribute("src")
            viewer.locator(".widget-slider .noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")  # amount: 20 -> 25 (step 5)
            assert wait_for_a_new_picture(source) != after_next
            assert viewer.locator(".widget-readout").first.inner_text() == "25"
            assert "functools.partial(brighten, amount=25)" in viewer.inner_text()

            ARTIFACTS.mkdir(exist_ok=True)
            viewer.screenshot(path=ARTIFACTS / "viewer.png")
            if os.environ.get("AUGKIT_UPDATE_SCREENSHOT") == "1":  # refresh the README's copy
                shutil.copyfile(ARTIFACTS / "viewer.png", ROOT / "docs" / "viewer.png")
        except Exception:
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=ARTIFACTS / "failure.png", full_page=True)
            raise
        finally:
            browser.close()
