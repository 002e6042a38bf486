"""Hand grading completes the cycle (issue 26), through nbgrader's own API.

Lab 05 has three reflections graded by hand (2 points each). After ``course-autograde class``,
a grader scores them as the formgrader does (nbgrader's gradebook: manual score, comment); then
the guide's one command, ``course-autograde refresh``, must bring those points to grades.json,
the late policy and the Canvas CSV, and remake the feedback, without marking anything as
needing grading again. The formgrader's page shows each reflection's model answer and
marking guide; feedback does not, says "not answered" for a blank answer, and shows widgets as
a short note.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .course_dir import formgrader_page, grade_id, make_course, nbgrader_env, solution, submit

pytestmark = pytest.mark.slow
LAB = "lab05_parallelism_paradox"
REFLECTIONS = ("lab05_act1_why", "lab05_act2_why", "lab05_part3_why")
HAND = {("ada", "lab05_act1_why"): (2.0, "Clear and complete."), ("ada", "lab05_act2_why"): (1.5, ""),
        ("ada", "lab05_part3_why"): (2.0, ""),
        ("bo", "lab05_act2_why"): (1.0, "Names NVLink only."), ("bo", "lab05_part3_why"): (2.0, "")}
#: bo left it as released: nbgrader scores an unchanged answer 0 and asks nobody to grade it
BLANK = ("bo", "lab05_act1_why")


def _expected(student: str, gid: str) -> float:
    return 0.0 if (student, gid) == BLANK else HAND[(student, gid)][0]


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "autograder", *args, "--course-root", str(root)], cwd=root,
                          env=nbgrader_env(), capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _grade_by_hand(root: Path) -> None:
    """What the formgrader's grade and comment boxes do (its GradeHandler/CommentHandler)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for (student, gid), (points, comment) in HAND.items():
            grade = gb.find_grade(gid, LAB, LAB, student)
            assert grade.needs_manual_grade  # autograding left it for a person
            grade.manual_score = points
            grade.needs_manual_grade = False
            gb.find_comment(gid, LAB, LAB, student).manual_comment = comment
        gb.db.commit()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("hand") / "course", LAB)
    submit(root, "ada", solution(root, LAB, student="ada"), assignment=LAB)
    blank = solution(root, LAB, student="bo")
    next(c for c in blank.cells if grade_id(c) == "lab05_act1_why").source = "YOUR ANSWER HERE"
    submit(root, "bo", blank, assignment=LAB)
    # nbgrader's collect writes timestamp.txt in this format; bo is a day and a half late
    (root / "submitted" / "ada" / LAB / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    (root / "submitted" / "bo" / LAB / "timestamp.txt").write_text("2026-12-02 10:00:00.000000 UTC")
    _cli(root, "class", LAB, "--out", str(root / "out"), "--no-progress", "--seed", "2", "--cell-timeout", "60",
         "--due", "2026-11-30 23:59 UTC", "--late-per-day", "0.1")
    before = json.loads((root / "out" / "grades.json").read_text())
    _grade_by_hand(root)
    proc = _cli(root, "refresh", LAB, "--out", str(root / "out"), "--canvas-csv", str(root / "canvas.csv"),
                "--canvas-assignment", "Lab 5 (777)")
    return root, before, proc


def _rows(data):
    return {r["student"]: r for r in data["students"]}


def test_refresh_brings_hand_grades_to_grades_late_policy_and_canvas(course):
    root, before, proc = course
    assert "0 parts still wait for grading by hand" in proc.stdout
    after = _rows(json.loads((root / "out" / "grades.json").read_text()))
    for student, row in _rows(before).items():
        parts = {p["part"]: p for p in row["parts"]}
        assert all(parts[g]["status"] == "manual" and parts[g]["points"] is None
                   for g in REFLECTIONS if (student, g) != BLANK)
        new = {p["part"]: p for p in after[student]["parts"]}
        for gid in REFLECTIONS:
            assert new[gid]["points"] == _expected(student, gid) and new[gid]["status"] == "hand", new[gid]
        hand = sum(_expected(student, g) for g in REFLECTIONS)
        assert after[student]["score"] == pytest.approx(row["score"] + hand)  # the judged parts stay
    assert {p["part"]: p for p in after["bo"]["parts"]}["lab05_act1_why"]["reason"] == "not answered"
    assert "Names NVLink only." in {p["part"]: p for p in after["bo"]["parts"]}["lab05_act2_why"]["reason"]
    assert after["ada"]["late"]["final_score"] == after["ada"]["score"]
    assert after["bo"]["late"]["days_charged"] == 2  # the class run's policy, kept
    assert after["bo"]["late"]["final_score"] == pytest.approx(after["bo"]["score"] * 0.8, abs=1e-3)
    canvas = {row[3]: row[-1] for row in list(csv.reader((root / "canvas.csv").open()))[2:]}
    assert canvas == {s: f"{after[s]['late']['final_score']:g}" for s in ("ada", "bo")}
    with open(root / "out" / "grades.csv") as fh:
        hand_rows = [r for r in csv.DictReader(fh) if r["part"] in REFLECTIONS]
    assert all(r["status"] == "hand" and r["points"] != "" for r in hand_rows)


def test_refresh_marks_nothing_as_needing_grading_again(course):
    root, _, _ = course
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for (student, gid), (points, _) in HAND.items():
            grade = gb.find_grade(gid, LAB, LAB, student)
            assert not grade.needs_manual_grade and grade.manual_score == points
        assert not gb.find_grade(BLANK[1], LAB, LAB, BLANK[0]).needs_manual_grade


def test_feedback_shows_hand_grades_comments_and_not_answered(course):
    root, _, _ = course
    ada = (root / "feedback" / "ada" / LAB / f"{LAB}.html").read_text()
    bo = (root / "feedback" / "bo" / LAB / f"{LAB}.html").read_text()
    assert "Clear and complete." in ada and "Names NVLink only." in bo
    assert "not answered" in bo and "YOUR ANSWER HERE" not in bo
    source = nbformat.read(str(root / "source" / LAB / f"{LAB}.ipynb"), 4)
    guide = next(c.source for c in source.cells if grade_id(c) == BLANK[1])
    assert " ".join(guide.replace("**Model answer.**", "").split()[:5]) not in bo  # bo left it blank
    for html in (ada, bo):
        assert "VBox(children=" not in html and "ToggleButtons(" not in html
        assert "model answer and marking guide" not in html  # the guide is for graders only
        assert not re.search(r'(src|href)="(https?:)?//', html)  # reads offline: nothing from another site
        assert "HIDDEN TESTS" not in html and "grade_in_kernel" not in html


def test_formgrader_shows_the_model_answer_and_marking_guide(course):
    """The formgrader's submission page: its HTMLExporter, configured by nbgrader_config.py."""
    root, _, _ = course
    html = formgrader_page(root, LAB, root / "autograded" / "bo" / LAB / f"{LAB}.ipynb")
    source = nbformat.read(str(root / "source" / LAB / f"{LAB}.ipynb"), 4)
    guide = next(c.source for c in source.cells if grade_id(c) == "lab05_act1_why")
    # bo left this reflection blank, so its model answer on his page can only come from the guide
    words = " ".join(guide.replace("**Model answer.**", "").split()[:5])
    assert words in html and "Mark scheme" in html, words
    assert html.count("model answer and marking guide") == 3
    assert "VBox(children=" not in html
