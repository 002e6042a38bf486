"""Build nbgrader source notebooks from activities (plain data in, .ipynb out).

``build_notebook(activity)`` returns the source notebook of any
:class:`~course.assess.activity.Activity` (with solutions and hidden tests, in
nbgrader's cell metadata); ``write_sources(activities, root)`` writes
``source/<assignment>/<assignment>.ipynb`` for each. Cell ids are stable
(``<prefix>-<index>``), so a regenerated notebook is diff-free; a workbook
exercise's cells carry ``metadata.course.exercise``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Optional

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from .spec import Cell

ROOT = Path(__file__).resolve().parents[2]


def _nbgrader(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
              points: Optional[float] = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def to_nb_cell(cell: Cell, exercise: Optional[str] = None):
    """The nbformat cell of ``cell``; ``exercise`` adds ``metadata.course.exercise``."""
    if cell.role == "markdown":
        nb_cell = new_markdown_cell(cell.source)
    elif cell.role in ("code", "prompt", "setup", "check"):  # read-only code
        nb_cell = new_code_cell(cell.source)
        if cell.grade_id:
            nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, locked=True)
    elif cell.role == "answer":
        nb_cell = new_code_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, solution=True)
    elif cell.role == "test":
        nb_cell = new_code_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, grade=True, locked=True, points=cell.points)
    else:  # manual: Cell checks the role
        nb_cell = new_markdown_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, grade=True, solution=True, points=cell.points)
    if exercise:
        nb_cell.metadata["course"] = {"exercise": exercise}
    return nb_cell


def build_notebook(activity):
    """The nbgrader source notebook of ``activity``."""
    cells = [to_nb_cell(c, c.item if activity.marks_items else None) for c in activity.cells()]
    for index, cell in enumerate(cells):
        # stable ids keep regenerated notebooks diff-free (nbformat would draw random ones)
        cell["id"] = f"{activity.cell_id_prefix()}-{index:03d}"
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def write_sources(activities: Iterable, root: Path = ROOT) -> List[Path]:
    """Write the source notebook of each of ``activities`` under ``root/source``."""
    written = []
    for activity in activities:
        path = Path(root) / "source" / activity.name / f"{activity.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build_notebook(activity), str(path))
        written.append(path)
    return written
