"""A throw-away nbgrader course directory shared by the assignment tests.

``NbgraderCourse(tmp)`` copies ``nbgrader_config.py`` and the wanted
``source/<assignment>/`` folders, runs one ``nbgrader generate_assignment`` for
all of them (with a gradebook), drops submissions in
``submitted/<student>/<assignment>/`` and runs one ``nbgrader autograde`` for
every assignment and student at once (or one per assignment), with nbgrader's own
in-kernel steps (plain nbgrader). Grades are read
back from the gradebook as ``{grade_id: (score, max_score)}``.

Reusable by other assignment tests (labs, chapters 5-9): build submissions
with :func:`solution_submission`, :func:`release_submission` or your own
notebook, then call :meth:`autograde`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import nbformat

from autograder.engines.formgrader import PLAIN_NBGRADER_CONFIG

ROOT = Path(__file__).resolve().parents[2]


class NbgraderCourse:
    def __init__(self, path: Path, assignments, ledger: Path):
        self.root = Path(path)
        self.assignments = list(assignments)
        # nbgrader runs `alembic` from PATH when it creates the gradebook
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        self.env = dict(os.environ, COURSE_LEDGER=str(ledger), PYTHONHASHSEED="0", PATH=path)
        shutil.copy(ROOT / "nbgrader_config.py", self.root / "nbgrader_config.py")
        with open(self.root / "nbgrader_config.py", "a") as fh:
            # these tests check the hidden test cells themselves, run by nbgrader's own Execute
            # step (what kernel_points reports); the course's configuration grades in the sandbox
            fh.write(PLAIN_NBGRADER_CONFIG)
        for name in self.assignments:
            shutil.copytree(ROOT / "source" / name, self.root / "source" / name)
        # one nbgrader process for every assignment (its assignment id is a glob; source/ holds only
        # ours): each process costs about 2.5 s of CPU in imports before it does anything
        self._nbgrader("generate_assignment", "*" if len(self.assignments) > 1 else self.assignments[0], "--force")

    def _nbgrader(self, *args: str) -> subprocess.CompletedProcess:
        result = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"], cwd=self.root,
                                env=self.env, capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def release_notebook(self, name: str):
        return nbformat.read(str(self.root / "release" / name / f"{name}.ipynb"), 4)

    def source_notebook(self, name: str):
        return nbformat.read(str(self.root / "source" / name / f"{name}.ipynb"), 4)

    def submit(self, student: str, name: str, nb) -> None:
        folder = self.root / "submitted" / student / name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(folder / f"{name}.ipynb"))

    def autograde(self, name: str = "*") -> None:
        """``nbgrader autograde`` of ``name`` for every student who submitted it; ``"*"`` (default):
        every assignment, in one process (each process costs about 2.5 s of CPU in imports)."""
        self._nbgrader("autograde", name, "--force")

    def generate_feedback(self, name: str) -> None:
        self._nbgrader("generate_feedback", name, "--force")

    def grades(self, name: str, student: str) -> Dict[str, Tuple[float, float]]:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.root / 'gradebook.db'}") as gb:
            nb = gb.find_submission_notebook(name, name, student)
            return {g.name: (g.score, g.max_score) for g in nb.grades}


def solution_submission(course: NbgraderCourse, name: str, student: str = "reference"):
    """The instructor's notebook as ``student``'s honest submission: outputs cleared, and every answer
    cell the reference solution written with that student's numbers (their variant)."""
    nb = course.source_notebook(name)
    answers = honest_answers(name, student)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if gid in answers:
                cell.source = answers[gid]
    return nb


def honest_answers(name: str, student: str) -> Dict[str, str]:
    """``{answer grade_id: source}``: the chapter's solution code for ``student``'s numbers (the
    chapter module's hand-written formulas with that student's spec); ``{}`` for a lab, whose
    source notebook's answers stand as they are."""
    from course.activities import answer_sources

    return answer_sources(name, student)
