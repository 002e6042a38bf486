"""Chapter 11 through the grading routes: `course-autograde class`, `single` and the Gradescope bundle
give the same points, the collectives graded on real MPI ranks; a deadlocking ring gets 0 and a reason
for its part while the rest of the notebook is graded (issue 47)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.assignments.nbgrader_course import honest_answers

from . import attacks
from .course_dir import grade_id, make_course, solution, submit

pytestmark = pytest.mark.slow

ASSIGNMENT = "ch11_collectives_by_hand"
LIMITS = ["--cell-timeout", "60", "--timeout", "400"]


def _deadlocking(root, student):
    """``student``'s honest notebook with 11.3's reduce-scatter replaced by one where every rank sends first."""
    nb = solution(root, ASSIGNMENT, student)
    next(c for c in nb.cells if grade_id(c) == "ch11_ex11_3_answer").source = attacks.DEADLOCK_BOTH_SEND_FIRST
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("ranks") / "course", ASSIGNMENT)
    submit(root, "ada", solution(root, ASSIGNMENT, "ada"), assignment=ASSIGNMENT)
    submit(root, "bob", _deadlocking(root, "bob"), assignment=ASSIGNMENT)
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "class", ASSIGNMENT, "--course-root", str(root),
                           "--out", str(out), "--workers", "1", "--seed", "3", *LIMITS],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r["student"]: r for r in json.loads((out / "grades.json").read_text())["students"]}
    return {"root": root, "rows": rows}


def _points(row):
    return {p["part"]: p["points"] for p in row["parts"]}


def test_honest_collectives_earn_full_points_on_real_ranks(graded):
    row = graded["rows"]["ada"]
    assert row["status"] == "graded" and row["score"] == row["max_score"], row
    assert honest_answers(ASSIGNMENT, "ada")  # the key exists for this student's numbers


def test_a_deadlock_costs_its_part_only_with_a_reason(graded):
    row = graded["rows"]["bob"]
    parts = {p["part"]: p for p in row["parts"]}
    assert parts["ch11_ex11_3"]["points"] == 0
    assert "did not finish" in parts["ch11_ex11_3"]["reason"] and "deadlock" in parts["ch11_ex11_3"]["reason"]
    assert row["score"] == row["max_score"] - parts["ch11_ex11_3"]["max_points"], row


def test_single_mode_gives_the_same_points_as_class_mode(graded, tmp_path):
    root = graded["root"]
    notebook = root / "submitted" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    out = tmp_path / "single"
    proc = subprocess.run([sys.executable, "-m", "autograder", "single", str(notebook), "--course-root", str(root),
                           "--student", "bob", "--out", str(out), "--seed", "3", *LIMITS],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads((out / "grades.json").read_text())["students"][0]
    assert _points(row) == _points(graded["rows"]["bob"])


def test_gradescope_gives_the_same_points_as_class_mode(graded, tmp_path):
    """The Gradescope bundle grades the deadlocking notebook to the same points, part by part."""
    import shutil
    import zipfile
    from pathlib import Path

    root = graded["root"]
    bundle = tmp_path / "autograder.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", ASSIGNMENT, "--course-root", str(root),
                           "--out", str(bundle), "--seed", "3", *LIMITS], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    gs = tmp_path / "gs"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(gs / "source")
    shutil.copy(gs / "source" / "run_autograder", gs / "run_autograder")
    (gs / "run_autograder").chmod(0o755)
    (gs / "submission").mkdir()
    shutil.copy(root / "submitted" / "bob" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", gs / "submission")
    (gs / "submission_metadata.json").write_text(json.dumps({
        "id": 1, "created_at": "2026-11-20T14:22:32.365935-07:00",
        "assignment": {"id": 2, "title": "Chapter 11", "total_points": "1"},
        "users": [{"email": "bob", "id": 1003, "name": "Bob"}], "previous_submissions": []}))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(gs),
           "AUTOGRADER_PYTHON": sys.executable, "HOME": str(gs)}
    run = subprocess.run([str(gs / "run_autograder")], cwd=gs, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    data = json.loads((gs / "results" / "results.json").read_text())
    by_part = {t["name"].split()[-1]: t["score"] for t in data["tests"]}
    assert by_part == pytest.approx(_points(graded["rows"]["bob"])), by_part
