"""The README's instructor walk-through on a local exchange with two fake students.

generate -> release to the exchange -> each student fetches, works, submits -> collect ->
autograde with this autograder -> release feedback -> students fetch it -> export grades.
"""

from __future__ import annotations

import csv
import subprocess
import sys

import nbformat
import pytest

from .course_dir import CHAPTER, make_course, nbgrader_env, run_nbgrader, solution

pytestmark = pytest.mark.slow
COURSE = "distributed-training"


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    base = tmp_path_factory.mktemp("cycle")
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)
    env = dict(nbgrader_env(), NBGRADER_EXCHANGE=str(exchange))  # read by nbgrader_config.py
    root = base / "course"
    make_course(root)
    run_nbgrader(root, "release_assignment", CHAPTER, "--force", env=env)
    student_args = [f"--Exchange.root={exchange}", f"--course={COURSE}"]
    homes = {}
    answers = {"alice": solution(root, student="alice"), "bob": None}  # bob submits what he fetched
    for student, nb in answers.items():
        home = base / student
        home.mkdir()
        homes[student] = dict(env, HOME=str(home))  # each student's own nbgrader submission cache
        run_nbgrader(home, "fetch_assignment", CHAPTER, *student_args, env=homes[student])
        if nb is not None:
            nbformat.write(nb, str(home / CHAPTER / f"{CHAPTER}.ipynb"))
        run_nbgrader(home, "submit", CHAPTER, *student_args, f"--student={student}", env=homes[student])
    run_nbgrader(root, "collect", CHAPTER, env=env)
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root),
                           "--out", str(root), "--no-progress", "--seed", "5"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_nbgrader(root, "release_feedback", CHAPTER, env=env)
    for student in answers:
        run_nbgrader(base / student, "fetch_feedback", CHAPTER, *student_args, f"--student={student}",
                     env=homes[student])
    run_nbgrader(root, "export", "--to=nbgrader_grades.csv", env=env)
    return base, root


def test_autograder_grades_what_was_collected(cycle):
    _, root = cycle
    with open(root / "grades.csv") as fh:
        totals = {}
        for row in csv.DictReader(fh):
            totals[row["student"]] = totals.get(row["student"], 0.0) + float(row["points"] or 0)
    assert totals == {"alice": 8.0, "bob": 0.0}


def test_students_fetch_feedback_with_derivations(cycle):
    base, _ = cycle
    for student in ("alice", "bob"):
        pages = list((base / student / CHAPTER / "feedback").rglob(f"{CHAPTER}.html"))
        assert len(pages) == 1, student
        html = pages[0].read_text()
        assert "Worked derivation" in html and "BEGIN HIDDEN TESTS" not in html


def test_nbgrader_export_sees_the_trusted_scores(cycle):
    _, root = cycle
    with open(root / "nbgrader_grades.csv") as fh:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(fh)
                  if row["assignment"] == CHAPTER}
    assert scores == {"alice": 8.0, "bob": 0.0}
