"""A part waiting for the instructor reads "Waiting for your instructor" in the student's feedback, with
no 0, and the total counts only what was graded (issue 45). The feedback is the one every route renders
(``course-autograde class``, grading on submit, ``nbgrader generate_feedback``: one list of steps)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from .course_dir import make_course, nbgrader_env, run_nbgrader, solution, submit

WRITTEN = "ch03_lr_scaling"  # a workbook chapter with two written answers graded by hand
pytestmark = pytest.mark.slow


def test_feedback_says_waiting_for_your_instructor_not_zero(tmp_path):
    root = make_course(tmp_path / "course", WRITTEN)
    submit(root, "ada", solution(root, WRITTEN, student="ada"), assignment=WRITTEN)
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", WRITTEN, "--course-root", str(root),
                           "--no-progress", "--seed", "3", "--cell-timeout", "20", "--timeout", "90"],
                          cwd=root, env=nbgrader_env(), capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads((root / "grades" / WRITTEN / "grades.json").read_text())["students"][0]
    waiting = {p["part"]: p["max_points"] for p in row["parts"] if p["status"] == "manual"}
    assert len(waiting) == 2
    graded_max = row["max_score"] - sum(waiting.values())

    def check(page: str) -> None:
        assert page.count("Waiting for your instructor") == len(waiting) + 1  # each part, and the note on top
        assert "Written response (Score: 0" not in page and not re.search(r"Score: 0\.0 / 2\.0", page)
        assert f"(Score: {row['score']:.1f} / {graded_max:.1f})" in page
        assert f"worth {sum(waiting.values()):g} points" in page

    check((root / "feedback" / "ada" / WRITTEN / f"{WRITTEN}.html").read_text())
    # nbgrader's own Generate Feedback (the formgrader's button) says the same
    run_nbgrader(root, "generate_feedback", WRITTEN, "--force")
    check((root / "feedback" / "ada" / WRITTEN / f"{WRITTEN}.html").read_text())
