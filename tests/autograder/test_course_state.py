"""Course state in one place (issue 45): every command writes student data under the course's runtime
folder ``grades/`` (ignored by git even where the course's own ``.gitignore`` does not list it);
``single`` never writes where a class's grades are read, and a stray ``grades.json`` of one notebook in
the course root is not taken for the class by ``report``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from .course_dir import CHAPTER, make_course, nbgrader_env, solution, submit, with_wrong_first_answer

LIMITS = ["--cell-timeout", "20", "--timeout", "90", "--max-processes", "64"]
pytestmark = pytest.mark.slow


def _cli(root, *args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=root, env=nbgrader_env(),
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def test_student_data_stays_in_the_runtime_folder_and_one_notebook_is_never_the_class(tmp_path):
    root = make_course(tmp_path / "course")
    submit(root, "ada", solution(root, student="ada"))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("submitted/\nautograded/\nfeedback/\ngradebook.db\n")  # no grades/ line
    before = set(p.name for p in root.iterdir())
    _cli(root, "class", CHAPTER, "--no-progress", "--seed", "3", *LIMITS)

    single = _cli(root, "single", f"submitted/ada/{CHAPTER}/{CHAPTER}.ipynb", "--seed", "3", *LIMITS)
    out = root / "grades" / "single" / CHAPTER / "ada"
    assert f"writing grades.json and feedback.html to {out}" in single.stdout
    assert (out / "grades.json").is_file() and (out / "feedback.html").is_file()
    assert set(p.name for p in root.iterdir()) == before | {"grades", "autograded", "feedback", ".git"}

    # an older version's `single` wrote into the course root: one notebook's grades (a wrong answer of bo's)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    nbformat.write(with_wrong_first_answer(solution(root, student="bo")), str(downloads / "bo.ipynb"))
    _cli(root, "single", str(downloads / "bo.ipynb"), "--assignment", CHAPTER, "--out", str(root), *LIMITS)
    assert json.loads((root / "grades.json").read_text())["shard"] == "single"

    report = _cli(root, "report", CHAPTER)
    assert f"wrote {root / 'grades' / 'report' / 'report.html'}" in report.stdout
    assert not (root / "report.html").exists() and not (root / "report.json").exists()
    data = json.loads((root / "grades" / "report" / "report.json").read_text())
    assert data["assignments"][0]["students_total"] == 1  # ada's class, not bo's stray notebook

    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    assert "grades/" not in status, status  # grades/.gitignore keeps the runtime folder out of git
