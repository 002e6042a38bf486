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
    assert listing.count(" released ") == 2 and "2 submission(s); queue depth 0" in listing and "2 released" in listing
    assert len(fetch_feedback()) == 2
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        assert [s.student.id for s in gb.find_assignment(CHAPTER).submissions] == [who]
    grades = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())
    assert [(r["student"], r["score"]) for r in grades["students"]] == [(who, 8.0)]


def test_a_burst_is_graded_in_parallel_once_each_under_the_assignments_policy(course, tmp_path):
    """Three students submit at once (one of them twice): two workers grade them side by side, each
    newest submission once and the older one never; the late penalty the assignment's policy sets
    reaches grades.json and canvas.csv; the queue shows each wait and the depth (issue 45)."""
    root, env, cli, _submit, _fetch, _who = course
    home = tmp_path / "student"
    policy = _run([sys.executable, "-m", "autograder", "policy", CHAPTER, "--due", "2020-01-01 00:00 UTC",
                   "--late-per-day", "0.1", "--late-cap", "0.3"], root, env)
    assert "due date: none -> 2020-01-01 00:00 UTC" in policy.stdout
    _run([*cli, "enable", CHAPTER], root, env)
    students = ["s_ada", "s_bo", "s_cy", "s_ada"]
    for number, student in enumerate(students):
        if number == len(students) - 1:
            time.sleep(1.1)  # nbgrader's exchange names are per second: s_ada's second is the newer one
        nbformat.write(solution(root, student=student), str(home / CHAPTER / f"{CHAPTER}.ipynb"))
        _run([sys.executable, "-m", "nbgrader", "submit", CHAPTER, "--course=distributed-training",
              f"--student={student}"], home, dict(env, HOME=str(home)))
    once = _run([*cli, "once", "--workers", "2"], root, env)
    assert "graded 3 submission(s)" in once.stdout and "3 submission(s) to grade, 2 worker(s)" in once.stdout
    entries = sorted(_queue(root).values(), key=lambda e: e["submitted"])
    assert sorted(e["state"] for e in entries) == ["released", "released", "released", "superseded"]
    assert entries[0]["student"] == "s_ada" and entries[0]["state"] == "superseded"
    released = [e for e in entries if e["state"] == "released"]
    assert all(e["waited"] is not None and e["seconds"] > 0 and e["released_at"] > e["graded_at"] for e in released)
    # two workers: the second submission started before the first was graded
    by_start = sorted(released, key=lambda e: e["started"])
    assert by_start[1]["started"] < by_start[0]["graded_at"], by_start
    grades = json.loads((root / "grades" / CHAPTER / "grades.json").read_text())
    finals = {r["student"]: (r["score"], r["late"]["final_score"]) for r in grades["students"]}
    assert finals == {s: (8.0, 5.6) for s in ("s_ada", "s_bo", "s_cy")}  # years late: the 30 % cap
    canvas = (root / "grades" / CHAPTER / "canvas.csv").read_text().splitlines()
    assert sorted(line.split(",")[-1] for line in canvas[2:]) == ["5.6", "5.6", "5.6"]
    listing = _run([*cli, "queue", CHAPTER], root, env).stdout
    assert "queue depth 0 (0 queued, 0 grading)" in listing and "3 released, 1 superseded" in listing
    assert "waited" in listing.splitlines()[0] and "to feedback" in listing.splitlines()[0]


@pytest.mark.parametrize("polls", [3])
def test_a_running_service_hands_each_submission_to_the_workers_once(tmp_path, monkeypatch, polls):
    """The service looks at the exchange every second while its workers grade: a submission already
    handed to a worker is never handed again (each is graded once), whatever the number of looks."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.submit import ExchangeSubmit
    from traitlets.config import Config

    from autograder.engines import on_submit

    root = make_course(tmp_path / "course")
    exchange = tmp_path / "exchange"
    (exchange / "distributed-training" / "inbound").mkdir(parents=True)
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(exchange))
    _run([sys.executable, "-m", "nbgrader", "release_assignment", CHAPTER], root, dict(nbgrader_env()))
    on_submit.enable(root, CHAPTER)
    for student in ("s_ada", "s_bo", "s_cy"):  # nbgrader's own submit, as `nbgrader submit --student`
        folder = tmp_path / student / CHAPTER
        folder.mkdir(parents=True)
        nbformat.write(solution(root, student=student), str(folder / f"{CHAPTER}.ipynb"))
        config = Config()
        config.Exchange.root, config.Exchange.assignment_dir = str(exchange), str(tmp_path / student)
        config.Exchange.cache = str(tmp_path / student / ".cache")
        config.CourseDirectory.course_id, config.CourseDirectory.assignment_id = "distributed-training", CHAPTER
        config.CourseDirectory.student_id = student
        ExchangeSubmit(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                       config=config).start()
    service = on_submit.Service(root, workers=2, log=lambda msg: None)
    collected = []

    def slow_collect(assignment, student):  # a worker busy for a while: the service looks again meanwhile
        collected.append(student)
        time.sleep(0.5)
        return "stopped here by the test"

    monkeypatch.setattr(service.exchange, "collect", slow_collect)
    try:
        handed = [service.poll(wait=False) for _ in range(polls)]
        service.wait()
    finally:
        service.close()
    assert handed == [3] + [0] * (polls - 1) and sorted(collected) == ["s_ada", "s_bo", "s_cy"]
    assert sorted(e["state"] for e in on_submit.queue(root, CHAPTER).values()) == ["failed"] * 3
