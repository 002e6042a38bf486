"""``course`` works in a JupyterLab Terminal however the server was started (issue 48).

The student docs ask for ``course student NAME`` in a Terminal. A server started as a plain
``.venv/bin/jupyter server`` from a shell whose PATH does not hold ``.venv/bin``, with no tty (as a hub's
spawner starts it, so its terminals are login shells that read ``/etc/profile``), must still find the command:
``dev.py setup`` installs ``hub/jupyter_server_env_config.py`` as the environment's server config.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_environment_config_is_the_one_setup_installs():
    installed = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.py"
    assert installed.read_text() == (REPO / "hub" / "jupyter_server_env_config.py").read_text()


def test_a_plain_jupyter_server_without_the_venv_on_path_gives_terminals_the_course_command(tmp_path):
    tornado_websocket = pytest.importorskip("tornado.websocket")
    from tornado.ioloop import IOLoop

    port, token = _free_port(), uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "JUPYTER_CONFIG_DIR")}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=str(tmp_path), SHELL="/bin/bash",
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    argv = [str(VENV_BIN / "jupyter"), "server", f"--port={port}", "--no-browser", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={tmp_path}"] + (["--allow-root"] if os.geteuid() == 0 else [])
    log = tmp_path / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.5)
        request = urllib.request.Request(f"{base}/api/terminals?token={token}", method="POST", data=b"")
        name = json.load(urllib.request.urlopen(request, timeout=30))["name"]

        async def run_in_terminal() -> str:
            ws = await tornado_websocket.websocket_connect(
                f"ws://127.0.0.1:{port}/terminals/websocket/{name}?token={token}")
            ws.write_message(json.dumps(["stdin", "command -v course && echo FOUND-$? || echo MISSING\r"]))
            seen = ""
            end = time.monotonic() + 60
            while time.monotonic() < end and "FOUND-0" not in seen and "MISSING\r" not in seen.replace("echo MISSING", ""):
                message = await ws.read_message()
                if message is None:
                    break
                kind, *rest = json.loads(message)
                if kind == "stdout":
                    seen += rest[0]
            ws.close()
            return seen

        seen = IOLoop.current().run_sync(run_in_terminal, timeout=90)
        assert "FOUND-0" in seen and str(VENV_BIN / "course") in seen, seen[-1500:]
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
