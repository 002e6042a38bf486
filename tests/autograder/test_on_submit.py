"""Grading on submit off the hub (issue 37): real nbgrader release, fetch and submit through a local
exchange; ``course-autograde on-submit`` grades and releases; a service killed while grading loses
nothing, and nothing is graded twice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from .course_dir import CHAPTER, make_course, nbgrader_env, solution

pytestmark = pytest.mark.slow


def _run(args, cwd, env) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def _queue(root: Path) -> dict:
    path = root / "grades" / CHAPTER / "queue.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.fixture()
def course(tmp_path):
    root = make_course(tmp_path / "course")
    env = dict(nbgrader_env(), NBGRADER_EXCHANGE=str(tmp_path / "exchange"))
    (tmp_path / "exchange").mkdir()
    home = tmp_path / "student"
    home.mkdir()
    student_env = dict(env, HOME=str(home))
    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "release_assignment", CHAPTER], root, env)
    _run([*nbgrader, "fetch_assignment", CHAPTER, "--course=distributed-training"], home, student_env)
    who = _run([sys.executable, "-c", "import getpass; print(getpass.getuser())"], home, student_env).stdout.strip()
    nbformat.write(solution(root, student=who), str(home / CHAPTER / f"{CHAPTER}.ipynb"))

    def submit():
        _run([*nbgrader, "submit", CHAPTER, "--course=distributed-training"], home, student_env)

    def fetch_feedback():
        _run([*nbgrader, "fetch_feedback", CHAPTER, "--course=distributed-training"], home, student_env)
        return sorted((home / CHAPTER / "feedback").rglob("*.html"))

    cli = [sys.executable, "-m", "autograder", "on-submit"]
    return root, env, cli, submit, fetch_feedback, who


def test_labs_hold_feedback_and_chapters_release_it_unless_told(tmp_path):
    from autograder.engines import on_submit

    assert on_submit.enable(tmp_path, "lab05_parallelism_paradox")["hold"] is True
    assert on_submit.enable(tmp_path, CHAPTER)["hold"] is False
    seed = on_submit.settings(tmp_path)[CHAPTER]["seed"]
    assert on_submit.enable(tmp_path, CHAPTER, hold=True) == {"hold": True, "seed": seed}  # one seed per assignment
    on_submit.enable(tmp_path, "lab05_parallelism_paradox", disable=True)
    assert list(on_submit.settings(tmp_path)) == [CHAPTER]


def test_graded_released_once_and_a_crash_loses_nothing(course):
    root, env, cli, submit, fetch_feedback, who = course
    assert "released as soon as it is graded" in _run([*cli, "enable", CHAPTER], root, env).stdout
    submit()
    first = _run([*cli, "once"], root, env)
    assert "graded 1 submission(s)" in first.stdout and "8.0 of 8.0 points" in first.stdout, first.stdout
    assert [e["state"] for e in _queue(root).values()] == ["released"]
    pages = fetch_feedback()
    assert len(pages) == 1 and f"{CHAPTER} (Score: 8.0 / 8.0)" in pages[0].read_text()
    assert "graded 0 submission(s)" in _run([*cli, "once"], root, env).stdout  # nothing twice

    # a second submission; the service is killed while grading it, then started again
    time.sleep(1.1)  # nbgrader's timestamps are per second in the exchange's folder names
    submit()
    service = subprocess.Popen([*cli, "run", "--interval", "1"], cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and "grading" not in [e["state"] for e in _queue(root).values()]:
            time.sleep(0.2)
        assert "grading" in [e["state"] for e in _queue(root).values()], _queue(root)
    finally:
        os.killpg(service.pid, signal.SIGKILL)
        service.wait()
    again = _run([*cli, "once"], root, env)
    assert "queued again" in again.stdout and "graded 1 submission(s)" in again.stdout, again.stdout
    states = sorted(e["state"] for e in _queue(root).values())
    assert states == ["released", "released"], _queue(root)
    assert "graded 0 submission(s)" in _run([*cli, "once"], root, env).stdout
    listing = _run([*cli, "queue", CHAPTER], root, env).stdout
    assert listing.count("released") == 2 and "2 submission(s)" in listing
    assert len(fetch_feedback()) == 2
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert [s.student.id for s in gb.find_assignment(CHAPTER).submissions] == [who]
    grades = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())
    assert [(r["student"], r["score"]) for r in grades["students"]] == [(who, 8.0)]
