"""A real JupyterHub started by ``python3 dev.py hub`` for the term test, and a browser on it.

The hub runs on free ports with its state and exchange in a temporary folder, for
test users of its own (``hubtest-*``, real Unix accounts whose homes are emptied
first), and is stopped at the end (JupyterHub's ``cleanup_servers`` stops every
user's server; processes of the test users still alive after that are killed by pid).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM, _free_port, _wait_ready

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "hub"
INSTRUCTOR = "hubtest-instructor"
STUDENTS = ("hubtest-alice", "hubtest-bob")
#: a second course on the same hub and exchange, taken by alice only
OTHER_COURSE = "dt-other"


@dataclass
class Hub:
    url: str
    password: str
    exchange: Path
    process: subprocess.Popen
    log: Path

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)


def _user_pids(users) -> list[int]:
    uids = set()
    for user in users:
        with contextlib.suppress(KeyError):
            uids.add(pwd.getpwnam(user).pw_uid)
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
    return pids


def _empty_homes(users) -> None:
    for user in users:
        with contextlib.suppress(KeyError):
            shutil.rmtree(pwd.getpwnam(user).pw_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def hub():
    if os.geteuid() != 0:
        pytest.skip("JupyterHub spawns each user's server as that Unix user: needs root (CI runs as root)")
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is missing (apt-get install -y chromium; .ci/run installs it in CI)")
    users = (INSTRUCTOR, *STUDENTS)
    for pid in _user_pids(users):  # a previous run killed half-way
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _empty_homes(users)
    base = Path(tempfile.mkdtemp(prefix="hubtest-"))
    base.chmod(0o755)  # users reach the exchange inside it
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = ARTIFACTS / "jupyterhub.log"
    port = _free_port()
    cmd = [sys.executable, str(REPO / "dev.py"), "hub", f"--port={port}", f"--state={base / 'state'}",
           f"--exchange={base / 'exchange'}", f"--instructor={INSTRUCTOR}", f"--students={','.join(STUDENTS)}",
           f"--course=distributed-training={','.join(STUDENTS)}", f"--course={OTHER_COURSE}={STUDENTS[0]}"]
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, "", process, log, probe="/hub/api")  # the first run installs the proxy with npm
        password = (base / "state" / "password").read_text().strip()
        yield Hub(url, password, base / "exchange", process, log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        for pid in _user_pids(users):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
