"""Reusable fixtures: a real JupyterLab server and a headless Chromium page on it.

Teammates' browser tests use them like this::

    @pytest.mark.browser
    def test_my_notebook(lab_notebook):
        page = lab_notebook("notebooks/my_notebook.ipynb")   # opened, all cells run
        page.locator(".bqplot").first.wait_for()

* ``jupyterlab`` (session): starts ``jupyter lab`` on a free port with a random
  token in a temporary root folder (``--allow-root`` when root), with its own
  config/data/runtime dirs and ``COURSE_LEDGER``/``COURSE_AUTOPREDICT`` set so
  the student's files are never touched; yields a :class:`LabServer`.
* ``browser`` (session): Debian's ``/usr/bin/chromium`` through Playwright
  (never ``playwright install``). Skips with a reason when it is missing.
* ``lab_notebook`` (function): copies a repo notebook into the server root,
  opens it in a fresh page, runs all cells, waits for the kernel to go idle,
  and returns the Playwright page.

Artifacts (screenshots) go to ``test-artifacts/`` at the repo root (ignored by git).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.progress import Stalled, wait_for_function, wait_for_locator, wait_until

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


#: JavaScript for WCAG 2.1 contrast, pasted at the top of a page function's body (``"() => {" + CONTRAST_JS +
#: "..."``): ``parse`` (a CSS rgb()/rgba() colour -> [r, g, b, a]), ``over`` (a colour composited over an opaque
#: one), ``background`` (the backgrounds of ``el`` and its ancestors composited up to the first opaque one, over
#: white), ``lum`` (relative luminance) and ``ratio`` (the contrast ratio of two opaque colours).
CONTRAST_JS = """
    const parse = c => { const m = /rgba?\\(([^)]+)\\)/.exec(c || ''); if (!m) return null;
        const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
    const over = (fg, bg) => [0, 1, 2].map(i => fg[i] * fg[3] + bg[i] * (1 - fg[3])).concat([1]);
    const background = el => {
        const layers = [];
        for (let e = el; e; e = e.parentElement) {
            const c = parse(getComputedStyle(e).backgroundColor);
            if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
        }
        let bg = [255, 255, 255, 1];
        for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
        return bg;
    };
    const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
    const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
"""


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    process: subprocess.Popen

    def notebook_url(self, relative: str) -> str:
        # a fresh workspace per page: no layout or session state carried over from earlier tests
        workspace = uuid.uuid4().hex[:12]
        return f"{self.url}/lab/workspaces/{workspace}/tree/{relative}?token={self.token}&reset"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_ready(url: str, token: str, process: subprocess.Popen, log: Path,
                probe: str = "/api/status?token={token}") -> None:
    """Wait until ``url + probe`` answers 200 (``probe``: JupyterHub's is ``/hub/api``), as long as the
    server is starting (tests/progress.py: its processes use CPU); stop at once if it exits."""
    def answers() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[:3]} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + probe.format(token=token), timeout=5) as resp:
                return resp.status == 200
        except OSError:
            return False

    try:
        wait_until(answers, f"{process.args[:3]} answering {probe.split('?')[0]}", poll=0.5)
    except Stalled as stalled:
        raise RuntimeError(f"{stalled}\n{log.read_text()[-3000:]}") from None


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    with start_lab_server(tmp_path_factory.mktemp("jupyterlab")) as server:
        yield server


@contextlib.contextmanager
def start_lab_server(base: Path, *, autopredict: bool = True):
    """Run ``jupyter lab`` with its root in ``base/root`` and its own dirs and ledger under ``base``.

    ``autopredict=False`` leaves ``COURSE_AUTOPREDICT`` unset in the kernels, so
    every prediction lock waits for a click, as it does for a student.
    """
    root = base / "root"
    root.mkdir()
    port, token = _free_port(), uuid.uuid4().hex
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        IPYTHONDIR=str(base / "ipython"),
        COURSE_LEDGER=str(base / "ledger.json"),
        COURSE_AUTOPREDICT="1",
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
    )
    if not autopredict:
        del env["COURSE_AUTOPREDICT"]
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
        f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.news_url=", f"--LabApp.workspaces_dir={base / 'workspaces'}",
        # as dev.py lab and the hub configure it: kernel websockets with TCP_NODELAY (course/lab_server.py)
        "--ServerApp.kernel_websocket_connection_class=course.lab_server.NoDelayKernelConnection",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    # Start the notebook's own kernel without asking: on a busy machine JupyterLab otherwise
    # sometimes opens a "Select Kernel" dialog that blocks every click.
    tracker = base / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    # windowingMode "none": every cell stays rendered, so off-screen outputs count as visible
    (tracker / "tracker.jupyterlab-settings").write_text('{"autoStartDefaultKernel": true, "windowingMode": "none"}')
    env["JUPYTERLAB_SETTINGS_DIR"] = str(base / "settings")
    # no "official Jupyter news?" pop-up over the screenshots
    labconfig = base / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    (labconfig / "page_config.json").write_text(
        '{"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": true}}'
    )
    with jupyter_server(cmd, port, token, base / "jupyterlab.log", env=env, cwd=root) as process:
        yield LabServer(f"http://127.0.0.1:{port}", token, root, process)


@contextlib.contextmanager
def jupyter_server(cmd: list, port: int, token: str, log: Path, **popen):
    """``cmd`` (a Jupyter server on 127.0.0.1:``port``) started with its output in ``log``; yields its
    process once it answers, and stops it (terminated, killed after 15 s)."""
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, **popen)
    try:
        _wait_ready(f"http://127.0.0.1:{port}", token, process, log)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def dismiss_dialogs(page) -> list[str]:
    """Close any modal JupyterLab dialog (kernel choice, file changed on disk...), printing its text.

    A dialog left open intercepts every click of the test; its text is
    printed so that an unexpected one is visible in the test output.
    """
    texts = []
    dialogs = page.locator(".jp-Dialog")
    for _ in range(3):
        if not dialogs.count():
            break
        text = dialogs.first.inner_text()
        texts.append(text)
        print(f"\n[browser fixture] closing JupyterLab dialog: {text[:300]!r}")
        chooser = dialogs.first.locator("select")
        if "Select Kernel" in text and chooser.count():
            # shown when the kernel list loads slowly (busy machine): pick the notebook's own kernel
            try:
                chooser.first.select_option(label="Python 3 (ipykernel)")
            except Exception as exc:  # noqa: BLE001 - diagnostics only
                print(f"[browser fixture] could not choose the Python 3 kernel: {exc}")
        accept = dialogs.first.locator(".jp-Dialog-button.jp-mod-accept")
        if accept.count():
            accept.first.click()
        else:
            page.keyboard.press("Escape")
        page.wait_for_timeout(300)
    return texts


def run_all_cells(page) -> None:
    """Run every cell through JupyterLab's own menu; wait until each code cell has run.

    The menu click is retried once: on a busy machine the first click can land before the menu
    bar is ready (no cell starts within 20 s). Then it waits as long as the kernel and the page
    are working (tests/progress.py), not for a fixed time.
    """
    all_ran = """() => {
        const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
        return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
    }"""
    started = """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
        .some(p => /\\[[\\d*]+\\]/.test(p.textContent))"""
    for attempt in range(2):
        dismiss_dialogs(page)
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        try:
            page.wait_for_function(started, timeout=20_000, polling=250)
            break
        except Exception:
            if attempt:
                raise
    wait_for_function(page, all_ran, "every code cell run")
    wait_idle(page)


IDLE = """() => {
    const prompts = [...document.querySelectorAll('.jp-Notebook .jp-InputPrompt')];
    if (!prompts.length || prompts.some(p => p.textContent.includes('*'))) return false;
    const ind = document.querySelector('.jp-Notebook-ExecutionIndicator');
    return !ind || ind.getAttribute('data-status') === 'idle';
}"""


def wait_idle(page, timeout_ms=None) -> None:
    """Wait until no cell shows the running prompt [*] and the kernel reports idle: as long as the
    kernel and the page are working, or within ``timeout_ms`` when a caller has its own bound."""
    if timeout_ms is not None:
        page.wait_for_function(IDLE, timeout=timeout_ms, polling=250)
    else:
        wait_for_function(page, IDLE, "the kernel going idle")


def open_notebook_page(server: LabServer, context, relative: str):
    """Open ``relative`` (a path under the server root) in a new page of ``context``; wait for an idle kernel."""
    page = context.new_page()
    page.goto(server.notebook_url(relative), wait_until="commit")
    wait_for_locator(page.locator(".jp-Notebook").first, f"JupyterLab showing {relative}")
    wait_kernel_ready(page, server, relative)
    return page


def wait_kernel_ready(page, server: LabServer, relative: str) -> None:
    """Wait until the notebook's own kernel runs, is connected and idle, and the page says idle for 1 s,
    as long as the server, the kernel starting and the page are working (tests/progress.py).

    The page's indicator reads "idle" for a moment before its kernel has even
    started; a Run All clicked then is dropped.
    """
    import json

    headers = {"Authorization": f"token {server.token}"}
    idle_since = [None]

    def ready_for_a_second() -> bool:
        try:
            request = urllib.request.Request(f"{server.url}/api/sessions", headers=headers)
            with urllib.request.urlopen(request, timeout=10) as resp:
                sessions = json.load(resp)
        except OSError:
            sessions = []
        kernel = next((x["kernel"] for x in sessions if x.get("path") == str(relative)), None)
        ready = (kernel is not None and kernel.get("execution_state") == "idle" and kernel.get("connections", 0) >= 1
                 and page.evaluate("() => document.querySelector('.jp-Notebook-ExecutionIndicator')"
                                   "?.getAttribute('data-status') === 'idle'"))
        if not ready:
            idle_since[0] = None
        elif idle_since[0] is None:
            idle_since[0] = time.monotonic()
        elif time.monotonic() - idle_since[0] >= 1.0:
            return True
        page.wait_for_timeout(250)
        return False

    wait_until(ready_for_a_second, f"the kernel of {relative} ready", poll=0)


@pytest.fixture
def lab_notebook(jupyterlab, browser):
    pages = []

    def open_notebook(relative: str | Path, run: bool = True):
        source = Path(relative) if Path(relative).is_absolute() else REPO / relative
        target = jupyterlab.root / source.name
        shutil.copy(source, target)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pages.append(context)
        page = open_notebook_page(jupyterlab, context, source.name)
        if run:
            run_all_cells(page)
        return page

    yield open_notebook
    for context in pages:
        context.close()
    shutdown_kernels(jupyterlab)


def shutdown_kernels(server: LabServer) -> None:
    """Stop the kernels a test started (closing the browser leaves them running and loading the machine)."""
    import json

    headers = {"Authorization": f"token {server.token}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{server.url}/api/sessions", headers=headers),
                                    timeout=10) as resp:
            sessions = json.load(resp)
        for session in sessions:
            request = urllib.request.Request(f"{server.url}/api/sessions/{session['id']}", method="DELETE",
                                             headers=headers)
            urllib.request.urlopen(request, timeout=10).close()
    except OSError as exc:
        print(f"[browser fixture] could not stop kernels: {exc}")
