"""Single-submission mode (CI in a student's repository): exit 0 whenever grading ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import nbformat
import pytest

from .course_dir import CHAPTER, ROOT, solution

pytestmark = pytest.mark.slow


def _single(*args, cwd):
    """Run single mode with a temporary folder of its own under ``cwd``, which it must leave empty (the
    throw-away course made from source/ is removed)."""
    tmp = cwd / "tmp"
    tmp.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "autograder", "single", *args, "--course-root", str(ROOT)],
                          capture_output=True, text=True, timeout=900, cwd=cwd,
                          env=dict(os.environ, TMPDIR=str(tmp)))
    assert list(tmp.iterdir()) == [], f"left in the temporary folder: {list(tmp.iterdir())}"
    return proc


def test_single_notebook_from_a_clean_checkout(tmp_path):
    """No gradebook in the repository: the grader makes a temporary one from source/."""
    nb = solution(ROOT)
    next(c for c in nb.cells if c.cell_type == "code" and "BEGIN SOLUTION" in c.source).source = "accum_steps = 7"
    path = tmp_path / f"{CHAPTER}.ipynb"
    nbformat.write(nb, str(path))
    proc = _single(str(path), "--out", str(tmp_path / "out"), "--seed", "1", "--student", "student", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "as student student (from --student)" in proc.stdout
    assert "student / ch02_gradient_accumulation: graded - 7 of 8 points" in proc.stdout
    assert "ch02_ex2_1" in proc.stdout and "does not match" in proc.stdout
    data = json.loads((tmp_path / "out" / "grades.json").read_text())
    assert data["students"][0]["score"] == 7.0 and data["isolation"] in ("bwrap+rlimits", "rlimits")
    assert "Worked derivation" in (tmp_path / "out" / "feedback.html").read_text()


def test_grader_that_cannot_run_exits_non_zero(tmp_path):
    proc = _single(str(tmp_path / "x.ipynb"), "--assignment", "no_such_assignment", cwd=tmp_path)
    assert proc.returncode == 2 and "no_such_assignment" in proc.stderr


def test_a_blank_release_notebook_scores_zero_with_a_reason_per_part(tmp_path):
    """The release as handed out (its stubs: ``pass``, a Build function returning None) earns nothing, and
    every part says why (issue 24: the stub no longer raises NotImplementedError)."""
    release = ROOT / "release" / CHAPTER / f"{CHAPTER}.ipynb"
    assert "raise NotImplementedError" not in release.read_text()
    path = tmp_path / f"{CHAPTER}.ipynb"
    path.write_bytes(release.read_bytes())
    proc = _single(str(path), "--out", str(tmp_path / "out"), "--seed", "1", "--student", "student", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((tmp_path / "out" / "grades.json").read_text())
    student = data["students"][0]
    assert student["score"] == 0.0 and student["max_score"] > 0, student
    parts = student["parts"]
    assert {p["kind"] for p in parts} >= {"derive", "build"}, parts
    assert all(p["points"] == 0 and p["reason"] for p in parts), parts
    # a blank value answer says so, not "not defined ... without the course package" (that is for a name
    # some cell assigns that is lost when the notebook runs again without the package)
    values = [p for p in parts if p["kind"] != "build"]
    assert values and all("is not answered: no cell of your notebook assigns it" in p["reason"]
                          and "course package" not in p["reason"] for p in values), values
    assert all("is not written yet" in p["reason"] for p in parts if p["kind"] == "build"), parts
