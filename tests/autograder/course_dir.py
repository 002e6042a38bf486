"""A throw-away nbgrader course root for the autograder tests (one chapter, generated once)."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
#: the smallest real workbook chapter: 5 Derive/Choice parts and 2 Build parts
CHAPTER = "ch02_gradient_accumulation"


def nbgrader_env() -> dict:
    # nbgrader runs `alembic` from PATH when it creates the gradebook
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return dict(os.environ, PATH=path, PYTHONHASHSEED="0")


def run_nbgrader(root: Path, *args: str, env=None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], cwd=root,
                            env=env or nbgrader_env(), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"nbgrader {args} failed:\n{result.stdout}\n{result.stderr}"
    return result


def make_course(root: Path, assignment: str = CHAPTER) -> Path:
    """Copy the config and one source assignment into ``root`` and generate it (gradebook included)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(ROOT / "source" / assignment, root / "source" / assignment)
    run_nbgrader(root, "generate_assignment", assignment, "--force")
    return root


def solution(root: Path, assignment: str = CHAPTER, student: str = "student"):
    """The instructor's notebook with outputs cleared: a fully correct submission by ``student``
    (answers written with that student's numbers, their variant)."""
    from tests.assignments.nbgrader_course import honest_answers

    nb = nbformat.read(str(root / "source" / assignment / f"{assignment}.ipynb"), 4)
    answers = honest_answers(assignment, student)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.source = answers.get(grade_id(cell), cell.source)
    return nb


def release(root: Path, assignment: str = CHAPTER):
    """What students receive: no answers, so every point an attack earns on it is undeserved."""
    return nbformat.read(str(root / "release" / assignment / f"{assignment}.ipynb"), 4)


def grade_id(cell) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def with_first_answer(nb, code: str):
    """``nb`` with the first answer cell's source replaced by ``code``."""
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if grade_id(cell).endswith("_answer"):
            cell.source = code
            return nb
    raise AssertionError("no answer cell")


def with_wrong_first_answer(nb):
    """``nb`` with its first answer (ch02's accumulation steps) multiplied by the 8 data-parallel
    GPUs a student forgot to divide by: wrong whatever the student's numbers are."""
    first = next(c.source for c in nb.cells if grade_id(c).endswith("_answer"))
    return with_first_answer(nb, first + "\naccum_steps *= 8  # forgot the 8 data-parallel GPUs")


def submit(root: Path, student: str, nb=None, raw: bytes = None, assignment: str = CHAPTER) -> None:
    folder = root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        (folder / f"{assignment}.ipynb").write_bytes(raw)
    elif nb is not None:
        nbformat.write(nb, str(folder / f"{assignment}.ipynb"))
    else:
        (folder / "notes.txt").write_text("I forgot the notebook")
