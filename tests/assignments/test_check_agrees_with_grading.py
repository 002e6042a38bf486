"""The visible check is the grader's rule: Run All's checks and ``course-autograde`` agree on every part.

The same notebooks (honest, wrong, using the course package where grading runs without it) are run
headless as a student's Run All (with and without the server telling the kernel its notebook file)
and graded by ``course-autograde single``; for every exercise the check says *right* exactly when
grading gives all its points.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from . import student_notebooks as sn

pytestmark = pytest.mark.slow

NAME = "ch02_gradient_accumulation"
STUDENT = "ada"


def _graded(path, out):
    proc = subprocess.run([sys.executable, "-m", "autograder", "single", str(path), "--student", STUDENT,
                           "--assignment", NAME, "--out", str(out), "--seed", "3", "--course-root", str(sn.ROOT)],
                          capture_output=True, text=True, timeout=900, cwd=str(path.parent))
    assert proc.returncode == 0, proc.stderr[-2000:]
    parts = json.loads((out / "grades.json").read_text())["students"][0]["parts"]
    full = {}
    for p in parts:
        if p["exercise"] and p["points"] is not None:
            full[p["exercise"]] = full.get(p["exercise"], True) and p["points"] >= p["max_points"] - 1e-9
    return full


@pytest.mark.parametrize("kind,file_known", [("honest", False), ("wrong", False), ("package", False),
                                             ("package", True)])
def test_visible_checks_and_grading_agree_on_every_exercise(tmp_path, kind, file_known):
    nb = sn.notebook(NAME, STUDENT, kind)
    path = sn.write(nb, tmp_path / "work" / f"{NAME}.ipynb")
    env = sn.kernel_env(STUDENT, tmp_path / "ledger.json", path if file_known else None)
    said = sn.run_visible(nb, path.parent, env)
    graded = _graded(path, tmp_path / "out")
    assert set(said) == set(graded)
    assert {n: said[n] == "right" for n in said} == graded, (said, graded)
    if kind == "honest":
        assert all(graded.values())
    else:
        assert not any(graded.values()) if kind == "wrong" else graded["2.3"] and not graded["2.1"]
    if kind == "package":  # 2.1 imports course.core; 2.2 uses a name only that cell defines; 2.4 calls it
        assert [n for n, ok in graded.items() if not ok] == ["2.1", "2.2", "2.4"]
        out = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        assert "No module named 'course.core'" in out and "without the course package" in out
