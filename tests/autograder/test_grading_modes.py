"""Grading never damages the course (issue 26): each grading mode, then the guide's next commands.

One course root and a local exchange; ``ada`` submits through nbgrader's exchange and is
collected as the guide says. Then every grading mode runs, each followed by the guide's
``nbgrader release_feedback`` and ``nbgrader export``: both must work, and the export lists
only students who were collected or whose grades were recorded on purpose (``--record``).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .course_dir import CHAPTER, make_course, nbgrader_env, run_nbgrader, solution

pytestmark = pytest.mark.slow
LIMITS = ["--cell-timeout", "20", "--timeout", "120", "--seed", "5"]


def _autograde(root: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args, "--course-root", str(root), *LIMITS],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)


def _guide_next_steps(root: Path, env: dict) -> set:
    """The guide's commands after grading; returns the students `nbgrader export` lists."""
    run_nbgrader(root, "release_feedback", CHAPTER, env=env)
    run_nbgrader(root, "export", "--to=nbgrader_grades.csv", env=env)
    with open(root / "nbgrader_grades.csv") as fh:
        return {row["student_id"] for row in csv.DictReader(fh)}


def _score(root: Path, student: str) -> float:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return gb.find_submission(CHAPTER, student).score


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    base = tmp_path_factory.mktemp("modes")
    root = make_course(base / "course")
    env = {k: v for k, v in nbgrader_env().items() if k != "COURSE_STUDENT"}
    env["NBGRADER_EXCHANGE"] = str(base / "exchange")
    run_nbgrader(root, "release_assignment", CHAPTER, env=env)
    home = base / "ada-home"
    home.mkdir()
    student_env = dict(env, HOME=str(home))
    run_nbgrader(home, "fetch_assignment", CHAPTER, "--course=distributed-training",
                 "--CourseDirectory.student_id=ada", env=student_env)
    nbformat.write(solution(root, student="ada"), str(home / CHAPTER / f"{CHAPTER}.ipynb"))
    run_nbgrader(home, "submit", CHAPTER, "--course=distributed-training",
                 "--CourseDirectory.student_id=ada", env=student_env)
    run_nbgrader(root, "collect", CHAPTER, env=env)
    downloads = base / "downloads"
    downloads.mkdir()
    for student in ("zed", "cy"):
        nbformat.write(solution(root, student=student), str(downloads / f"{student}.ipynb"))
    nbformat.write(solution(root, student="ada"), str(downloads / "ada.ipynb"))
    return root, env, downloads


def test_each_grading_mode_leaves_the_course_working(course, tmp_path):
    root, env, downloads = course
    proc = _autograde(root, "class", CHAPTER, "--out", str(tmp_path / "class"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _guide_next_steps(root, env) == {"ada"}
    ada = _score(root, "ada")
    assert ada == 8.0

    # a folder of notebooks (say, downloaded from the LMS): graded, gradebook untouched
    only_zed = tmp_path / "only-zed"
    only_zed.mkdir()
    (only_zed / "zed.ipynb").write_bytes((downloads / "zed.ipynb").read_bytes())
    out = tmp_path / "folder"
    proc = _autograde(root, "class", CHAPTER, str(only_zed), "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "without touching the course's gradebook" in proc.stdout
    assert (out / "feedback" / "zed" / CHAPTER / f"{CHAPTER}.html").is_file()
    assert not (root / "feedback" / "zed").exists() and not (root / "autograded" / "zed").exists()
    assert _guide_next_steps(root, env) == {"ada"}

    # one notebook: the student comes from the file name, and the output says so
    out = tmp_path / "single"
    proc = _autograde(root, "single", str(downloads / "zed.ipynb"), "--assignment", CHAPTER, "--out", str(out),
                      env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "as student zed (from the file name zed.ipynb)" in proc.stdout
    assert "zed / ch02_gradient_accumulation: graded - 8 of 8 points" in proc.stdout  # zed's own numbers
    assert _guide_next_steps(root, env) == {"ada"}

    # a notebook that names nobody is not graded as somebody made up
    nameless = tmp_path / f"{CHAPTER}.ipynb"
    nameless.write_bytes((downloads / "zed.ipynb").read_bytes())
    proc = _autograde(root, "single", str(nameless), "--out", str(tmp_path / "nameless"), env=env)
    assert proc.returncode == 2 and "names no student" in proc.stderr, proc.stderr[-2000:]

    # recording on purpose: never over another run's student without --replace
    proc = _autograde(root, "single", str(downloads / "ada.ipynb"), "--assignment", CHAPTER, "--record",
                      "--out", str(tmp_path / "ada-again"), env=env)
    assert proc.returncode == 2 and "ada already has grades" in proc.stderr, proc.stderr[-2000:]
    assert _score(root, "ada") == ada

    proc = _autograde(root, "single", str(downloads / "zed.ipynb"), "--assignment", CHAPTER, "--record",
                      "--out", str(tmp_path / "zed-recorded"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (root / "feedback" / "zed" / CHAPTER / "timestamp.txt").is_file()
    assert _guide_next_steps(root, env) == {"ada", "zed"}

    proc = _autograde(root, "class", CHAPTER, str(downloads), "--record", "--out", str(tmp_path / "f2"), env=env)
    assert proc.returncode == 2 and "already has grades" in proc.stderr  # ada and zed are recorded
    only_cy = tmp_path / "only-cy"
    only_cy.mkdir()
    (only_cy / "cy.ipynb").write_bytes((downloads / "cy.ipynb").read_bytes())
    proc = _autograde(root, "class", CHAPTER, str(only_cy), "--record", "--out", str(tmp_path / "f3"), env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _guide_next_steps(root, env) == {"ada", "zed", "cy"}
    assert _score(root, "cy") == 8.0 and _score(root, "ada") == ada
