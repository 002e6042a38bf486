"""Starting a sandboxed program whose answer is on its standard output, reading it, ending it: what the
clean room (:mod:`autograder.judging.sandboxed_cleanroom`) and the ranks
(:mod:`autograder.judging.ranks`) both do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

from . import sandbox


def start(cmd: List[str], work: Path, use_bwrap: bool, stdin=subprocess.DEVNULL) -> subprocess.Popen:
    """``cmd`` (a :func:`autograder.isolation.sandbox.command`) in its own session, in ``work``; its
    standard output a pipe, its errors dropped. bwrap clears the environment and sets the sandbox's own;
    prlimit alone passes this one on."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"} if use_bwrap else sandbox.sandbox_env(str(work))
    return subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=str(work), env=env, start_new_session=True)


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``'s whole session (the sandbox and all it started), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class Output:
    """``proc``'s standard output, read by a thread into :attr:`received`, at most ``max_bytes``; more
    than that calls ``on_overflow(self)`` and ends the reading. :attr:`heard` is when it last wrote."""

    def __init__(self, proc: subprocess.Popen, max_bytes: int,
                 on_overflow: Optional[Callable[["Output"], None]] = None):
        self.proc, self.max_bytes, self.on_overflow = proc, max_bytes, on_overflow
        self.received = bytearray()
        self.heard = time.monotonic()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                return
            if len(self.received) + len(chunk) > self.max_bytes:
                self.received.clear()
                if self.on_overflow is not None:
                    self.on_overflow(self)
                return
            self.received.extend(chunk)
            self.heard = time.monotonic()

    def join(self, timeout: float) -> None:
        self.thread.join(timeout=timeout)
