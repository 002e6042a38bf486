"""Hidden tests stay hidden whichever button made the feedback (issue 26).

Feedback is rendered every way an instructor can make it, for an honest and a wrong
submission: ``course-autograde`` itself, plain ``nbgrader generate_feedback`` (the guide's
command), the formgrader's "Generate Feedback" button (nbgrader's ``NbGraderAPI``, which the
button calls), and the formgrader's "Autograde" button (plain ``nbgrader autograde``) followed by
its feedback. None may show hidden-test code, the grader's paths or the judge's call.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .course_dir import CHAPTER, ROOT, make_course, nbgrader_env, run_nbgrader, solution, submit, \
    with_wrong_first_answer

pytestmark = pytest.mark.slow
STUDENTS = ("ada", "bo")  # honest, and one wrong answer


def _html(root: Path, student: str) -> str:
    return (root / "feedback" / student / CHAPTER / f"{CHAPTER}.html").read_text()


def _leaks(html: str, root: Path) -> list:
    needles = ["HIDDEN TESTS", "grade_in_kernel", "_grade(", "judge_json", "safe_judge", "REGISTRY",
               "most recent call last", "Cell In[", "site-packages", "/scratch", str(root), str(ROOT)]
    return [n for n in needles if n in html]


def _api_generate_feedback(root: Path, student: str) -> None:
    """What the formgrader's Generate Feedback button does: NbGraderAPI.generate_feedback."""
    code = ("import sys\nfrom nbgrader.apps import NbGrader\nfrom nbgrader.apps.api import NbGraderAPI\n"
            "from nbgrader.coursedir import CourseDirectory\n"
            "app = NbGrader()\napp.load_config_file()\n"
            "api = NbGraderAPI(CourseDirectory(config=app.config), config=app.config)\n"
            "result = api.generate_feedback(sys.argv[1], sys.argv[2])\n"
            "assert result['success'], result\n")
    proc = subprocess.run([sys.executable, "-c", code, CHAPTER, student], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("feedback") / "course")
    submit(root, "ada", solution(root, student="ada"))
    submit(root, "bo", with_wrong_first_answer(solution(root, student="bo")))
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root),
                           "--out", str(root / "out"), "--no-progress", "--seed", "4", "--cell-timeout", "20"],
                          cwd=root, env=nbgrader_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def test_every_feedback_path_hides_the_hidden_tests(course):
    root = course
    made = {}
    made["course-autograde"] = {s: _html(root, s) for s in STUDENTS}
    run_nbgrader(root, "generate_feedback", CHAPTER, "--force")
    made["nbgrader generate_feedback"] = {s: _html(root, s) for s in STUDENTS}
    for student in STUDENTS:
        _api_generate_feedback(root, student)
    made["formgrader Generate Feedback"] = {s: _html(root, s) for s in STUDENTS}
    leaks = {(path, s): _leaks(html, root) for path, by in made.items() for s, html in by.items()}
    assert not any(leaks.values()), leaks
    for path, by in made.items():
        # the same trusted summary every way: bo's wrong first answer and its reason
        assert "does not match" in by["bo"] and "does not match" not in by["ada"], path
        assert "Worked derivation" in by["ada"], path
        for html in by.values():  # maths reads offline: MathML, and nothing loaded from another site
            assert "<math" in html and not re.search(r'(src|href)="(https?:)?//', html), path


def test_formgrader_autograde_then_feedback_hides_them_too(course):
    """The formgrader's Autograde button (plain ``nbgrader autograde``, which nbgrader_config.py
    makes grade in the sandbox with the trusted judge), then its feedback: the judge's reason."""
    root = course
    run_nbgrader(root, "autograde", CHAPTER, "--force")
    run_nbgrader(root, "generate_feedback", CHAPTER, "--force")
    for student in STUDENTS:
        html = _html(root, student)
        assert not _leaks(html, root), (student, _leaks(html, root))
    assert "does not match" in _html(root, "bo") and "does not match" not in _html(root, "ada")


def test_a_notebook_file_that_is_not_a_notebook_still_gets_a_feedback_page(tmp_path):
    """A corrupted file earns 0 with a reason in grades.json; the student, who reads only feedback,
    gets a page that says why and what to do (before, no feedback was written for them at all)."""
    root = make_course(tmp_path / "course")
    inbox = root / "inbox"
    inbox.mkdir()
    (inbox / "hank.ipynb").write_text('{\n "cells": [\n  {\n   "cell_type": "mark')  # cut half-way
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", CHAPTER, str(inbox), "--course-root",
                           str(root), "--out", str(root / "out"), "--seed", "1", "--workers", "1",
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = root / "out" / "feedback" / "hank" / CHAPTER / f"{CHAPTER}.html"
    assert page.is_file()
    text = page.read_text()
    assert "could not be read as a notebook" in text and "submit again" in text and "Score: 0 /" in text
    assert _leaks(text, root) == []
