"""Feedback rendered by worker processes while the grading threads go on (each keeps one nbconvert
exporter).
"""

from __future__ import annotations

import queue
import sys
from pathlib import Path

from .. import compat


class _FeedbackWorkers:
    """Processes that render feedback (:func:`_feedback_html`), one request at a time each, each
    keeping its own nbconvert exporter. Fresh interpreters of this Python (this process runs
    threads, so no fork); requests and answers are pickles over their stdin and stdout, between
    this process and its own children only (no student code runs there)."""

    def __init__(self, count: int):
        import subprocess

        code = "from autograder.grading.feedback_workers import _feedback_worker; _feedback_worker()"
        self.idle: "queue.Queue" = queue.Queue()
        self.procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, cwd=str(Path(__file__).resolve().parents[2]))
                      for _ in range(count)]
        for proc in self.procs:
            self.idle.put(proc)

    def render(self, *args) -> str:
        import pickle

        proc = self.idle.get()
        try:
            data = pickle.dumps(args)
            proc.stdin.write(len(data).to_bytes(8, "big") + data)
            proc.stdin.flush()
            size = int.from_bytes(proc.stdout.read(8), "big")
            ok, value = pickle.loads(proc.stdout.read(size))
        finally:
            self.idle.put(proc)
        if not ok:
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 -- any failure ends the same way
                proc.kill()


def _feedback_worker() -> None:
    """The loop of one :class:`_FeedbackWorkers` process."""
    import pickle

    from .feedback import _exporter, _preprocessors

    _preprocessors()
    _exporter()  # built once per worker (it loads the templates)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        args = pickle.loads(stdin.read(int.from_bytes(head, "big")))
        try:
            answer = (True, _feedback_html(*args))
        except Exception as exc:  # noqa: BLE001 (the grader renders it itself then)
            answer = (False, f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(answer)
        stdout.write(len(data).to_bytes(8, "big") + data)
        stdout.flush()


def _feedback_html(nb, resources: dict, verdicts, db_url: str, gradebook_lock=None) -> str:
    """The feedback HTML of one graded notebook (:mod:`autograder.grading.feedback`): only the scores come
    from the gradebook (under ``gradebook_lock`` when given); runs in a worker process or thread."""
    from .feedback import feedback_notebook, render_feedback

    compat.open_gradebook(db_url)  # the shared engine for db_url exists before GetGrades opens it
    with compat.shared_gradebooks():
        fb_nb, fb_resources = feedback_notebook(nb, resources, verdicts, gradebook_lock=gradebook_lock)
    return render_feedback(fb_nb, fb_resources)
