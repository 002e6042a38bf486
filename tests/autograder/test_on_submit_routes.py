"""Grading on submit through its Python entry (``autograder.engines.on_submit.Service``), off the hub: a
real nbgrader release, fetch and submit through a local exchange, then one pass of the service.

* an assignment with parts graded by hand: the student's feedback (in the course and as released to
  them) says "Waiting for your instructor" for each, with no 0, and its total leaves them out (issue 45);
* chapter 11, whose Build parts run on real MPI ranks: a submission graded on submit gets its row in
  ``grades.json`` with a reason, and the queue says what happened to it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.engines import on_submit

from .course_dir import CHAPTER, grade_id, make_course, nbgrader_env, solution

pytestmark = pytest.mark.slow
COURSE_ID = "distributed-training"
WRITTEN = "ch03_lr_scaling"  # a workbook chapter with two written answers graded by hand
RANKS = "ch11_collectives_by_hand"


def _run(args, cwd, env) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def _submitted_and_graded(tmp_path, monkeypatch, assignment: str, config=(), answer=None):
    """The assignment released, fetched, answered honestly (``answer``: then changed by it) and submitted by
    a student, then one pass of grading on submit (one worker), in a course whose ``nbgrader_config.py``
    ends with the lines ``config``; returns the course root, the student and their fetched feedback."""
    root = make_course(tmp_path / "course", assignment)
    if config:
        with open(root / "nbgrader_config.py", "a") as fh:
            fh.write("\n" + "\n".join(config) + "\n")
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    env = dict(nbgrader_env(), NBGRADER_EXCHANGE=str(exchange))
    home = tmp_path / "student"
    home.mkdir()
    student_env = dict(env, HOME=str(home))
    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "release_assignment", assignment], root, env)
    _run([*nbgrader, "fetch_assignment", assignment, f"--course={COURSE_ID}"], home, student_env)
    who = _run([sys.executable, "-c", "import getpass; print(getpass.getuser())"], home, student_env).stdout.strip()
    nb = solution(root, assignment, student=who)
    if answer is not None:
        answer(nb)
    nbformat.write(nb, str(home / assignment / f"{assignment}.ipynb"))
    _run([*nbgrader, "submit", assignment, f"--course={COURSE_ID}"], home, student_env)

    monkeypatch.setenv("NBGRADER_EXCHANGE", str(exchange))  # the course's nbgrader_config.py reads it
    on_submit.enable(root, assignment, hold=False)
    service = on_submit.Service(root, workers=1, log=lambda message: None)
    try:
        service.recover()
        assert service.poll() == 1
    finally:
        service.close()
    _run([*nbgrader, "fetch_feedback", assignment, f"--course={COURSE_ID}"], home, student_env)
    fetched = sorted((home / assignment / "feedback").rglob("*.html"))
    return root, who, fetched


def test_on_submit_a_part_waiting_for_the_instructor_is_no_zero(tmp_path, monkeypatch):
    root, who, fetched = _submitted_and_graded(tmp_path, monkeypatch, WRITTEN)
    row = json.loads((root / "grades" / WRITTEN / "grades.json").read_text())["students"][0]
    waiting = {p["part"]: p["max_points"] for p in row["parts"] if p["status"] == "manual"}
    assert row["student"] == who and len(waiting) == 2, row
    graded_max = row["max_score"] - sum(waiting.values())
    (entry,) = on_submit.queue(root, WRITTEN).values()
    assert entry["state"] == "released" and entry["waiting_parts"] == 2, entry
    assert "(2 part(s) waiting for the instructor)" in "\n".join(on_submit.queue_lines({"k": entry}))

    course_page = (root / "feedback" / who / WRITTEN / f"{WRITTEN}.html").read_text()
    assert len(fetched) == 1
    for page in (course_page, fetched[0].read_text()):  # what the course keeps, what the student fetched
        assert page.count("Waiting for your instructor") == len(waiting) + 1  # each part, and the note on top
        assert "Written response (Score: 0" not in page and not re.search(r"Score: 0\.0 / 2\.0", page)
        assert f"(Score: {row['score']:.1f} / {graded_max:.1f})" in page  # the total leaves them out
        assert f"worth {sum(waiting.values()):g} points" in page


def test_on_submit_grades_chapter_11_on_real_ranks_into_a_row_with_a_reason(tmp_path, monkeypatch):
    root, who, fetched = _submitted_and_graded(tmp_path, monkeypatch, RANKS)
    data = json.loads((root / "grades" / RANKS / "grades.json").read_text())
    (row,) = data["students"]
    assert row["student"] == who and row["reason"] and row["status"] in ("graded", "error"), row
    (entry,) = on_submit.queue(root, RANKS).values()
    assert entry["state"] in ("released", "failed") and entry["score"] == row["score"], entry
    assert all(p.get("reason") for p in row["parts"]), row["parts"]
    # an honest submission: every part earns its points, the Builds judged on ranks included
    assert row["status"] == "graded" and row["score"] == row["max_score"], json.dumps(row, indent=1)[:3000]
    assert entry["state"] == "released" and len(fetched) == 1
    assert data["shard"] == "on-submit" and Path(root / "feedback" / who / RANKS / f"{RANKS}.html").is_file()


def test_on_submit_reads_the_courses_folders_and_steps(tmp_path, monkeypatch):
    """An ``nbgrader_config.py`` that renames the submitted, autograded and feedback folders and limits
    outputs: grading on submit collects, grades, writes and releases where it says, with its limit."""
    def chatty(nb):
        cell = next(c for c in nb.cells if grade_id(c).endswith("_answer"))
        cell.source += "\nfor line in range(10):\n    print('line', line)\n"

    renamed = ("c.CourseDirectory.submitted_directory = 'handins'",
               "c.CourseDirectory.autograded_directory = 'graded_copies'",
               "c.CourseDirectory.feedback_directory = 'returned'", "c.LimitOutput.max_lines = 2")
    root, who, fetched = _submitted_and_graded(tmp_path, monkeypatch, CHAPTER, renamed, chatty)
    (entry,) = on_submit.queue(root, CHAPTER).values()
    assert entry["state"] == "released" and entry["score"] == entry["max_score"], entry
    assert (root / "handins" / who / CHAPTER / f"{CHAPTER}.ipynb").is_file()
    graded = nbformat.read(str(root / "graded_copies" / who / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    printed = "".join(o.get("text", "") for c in graded.cells if c.cell_type == "code" for o in c.outputs
                      if o.get("output_type") == "stream")
    assert "line 0" in printed and "line 9" not in printed  # c.LimitOutput.max_lines
    assert (root / "returned" / who / CHAPTER / f"{CHAPTER}.html").is_file() and len(fetched) == 1
    assert not [name for name in ("submitted", "autograded", "feedback") if (root / name).exists()]
