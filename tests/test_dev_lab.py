"""The README's first command, ``python3 dev.py lab``, opens a working JupyterLab.

It starts the real command (with ``--no-browser`` and a fixed token passed
through), waits for the server, and checks what a student lands on: the course
map exists, and the front-end extensions the course needs (widgets, bqplot,
nbgrader) are installed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "course-test-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("lab") / "lab.log"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(log.parent), COURSE_LEDGER=str(log.parent / "ledger.json"))
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "dev.py"), "lab", "--no-browser", f"--port={port}",
             f"--IdentityProvider.token={TOKEN}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"dev.py lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                _get_json(f"{url}/api/status?token={TOKEN}")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within 120 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.slow
def test_lab_serves_the_course_map(lab_url):
    listing = _get_json(f"{lab_url}/api/contents/notebooks?token={TOKEN}")
    names = {item["name"] for item in listing["content"]}
    assert {"index.ipynb", "errata.ipynb"} <= names
    with urllib.request.urlopen(f"{lab_url}/lab/tree/notebooks/index.ipynb?token={TOKEN}", timeout=10) as page:
        assert page.status == 200


@pytest.mark.slow
def test_lab_has_the_extensions_the_course_needs(lab_url):
    extensions = {ext["name"] for ext in _get_json(f"{lab_url}/lab/api/extensions?token={TOKEN}")}
    # Names as JupyterLab's extension manager reports them.
    assert {"jupyter-widgets-jupyterlab-manager", "bqplot", "jupyter-nbgrader"} <= extensions


@pytest.mark.slow
def test_lab_never_asks_about_jupyter_news(lab_url):
    """The course's settings override answers JupyterLab's "official Jupyter news?" prompt (no user action)."""
    settings = _get_json(f"{lab_url}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={TOKEN}")
    # JupyterLab applies overrides.json to the schema's defaults; the user has set nothing
    defaults = settings["schema"]["properties"]
    assert defaults["fetchNews"]["default"] == "false" and "fetchNews" not in settings["settings"]
    assert defaults["checkForUpdates"]["default"] is False


@pytest.mark.slow
def test_a_terminal_finds_the_course_command(lab_url):
    """The setup cells tell students to run `course student NAME` in a terminal: JupyterLab's terminal
    (a login shell when the server has no tty, whose /etc/profile resets PATH) must find it (issue 36)."""
    import asyncio

    from tornado.websocket import websocket_connect

    request = urllib.request.Request(f"{lab_url}/api/terminals?token={TOKEN}", method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=30) as response:
        name = json.load(response)["name"]

    async def run() -> str:
        ws = await websocket_connect(f"{lab_url.replace('http', 'ws', 1)}/terminals/websocket/{name}?token={TOKEN}")
        # the marker is computed by the shell, so the echo of the typed line never matches it
        ws.write_message(json.dumps(["stdin", "command -v course; echo FOUND-$((6*7))\r"]))
        out, deadline = "", time.monotonic() + 60
        while "FOUND-42" not in out and time.monotonic() < deadline:
            message = await asyncio.wait_for(ws.read_message(), 60)
            if message is None:
                break
            kind, *rest = json.loads(message)
            if kind == "stdout":
                out += rest[0]
        ws.close()
        return out

    try:
        out = asyncio.run(run())
    finally:
        urllib.request.urlopen(urllib.request.Request(f"{lab_url}/api/terminals/{name}?token={TOKEN}",
                                                      method="DELETE"), timeout=30).close()
    assert "FOUND-42" in out, out
    assert str(ROOT / ".venv" / "bin" / "course") in out, out


def test_the_environment_carries_the_course_lab_settings_for_every_server():
    """`dev.py setup` (run before every command) installs the course's JupyterLab settings into the
    environment, so the hub's single-user servers, started from the same .venv without `dev.py lab`,
    never ask about Jupyter news either (issue 36: the hub showed the prompt)."""
    installed = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert json.loads(installed.read_text()) == json.loads((ROOT / "jupyterlab-overrides.json").read_text())
