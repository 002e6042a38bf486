"""Build nbgrader source notebooks from chapter modules (plain data in, .ipynb out).

``build_source(chapter)`` returns the source notebook of a chapter (with
solutions and hidden tests, in nbgrader's cell metadata);
``write_sources(root)`` writes ``source/<assignment>/<assignment>.ipynb`` for
every chapter with a module. Every cell of an exercise carries
``metadata.course.exercise`` so feedback can put derivations back after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, List, Optional

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from .spec import Cell, chapter_exercises, spec_for

SETUP = ("# Run this cell first: it loads the visible checks and shows whose numbers this notebook uses.\n"
         "from course.exercises import check, show, whoami\n"
         "whoami({assignment!r})")


def _nbgrader(grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False,
              points: Optional[float] = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def to_nb_cell(cell: Cell, exercise: Optional[str] = None):
    course_meta = {"exercise": exercise} if exercise else {}
    if cell.role == "markdown":
        nb_cell = new_markdown_cell(cell.source)
    elif cell.role == "code":
        nb_cell = new_code_cell(cell.source)
        if cell.grade_id:
            nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, locked=True)
    elif cell.role == "answer":
        nb_cell = new_code_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, solution=True)
    elif cell.role == "check":
        nb_cell = new_code_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, locked=True)
    elif cell.role == "test":
        nb_cell = new_code_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, grade=True, locked=True, points=cell.points)
    elif cell.role == "manual":
        nb_cell = new_markdown_cell(cell.source)
        nb_cell.metadata["nbgrader"] = _nbgrader(cell.grade_id, grade=True, solution=True, points=cell.points)
    else:
        raise ValueError(f"role must be markdown/code/answer/check/test/manual, got {cell.role!r}")
    if course_meta:
        nb_cell.metadata["course"] = course_meta
    return nb_cell


def build_source(chapter: str):
    """The nbgrader source notebook of ``chapter`` (e.g. ``"ch00"``)."""
    from .chapters import MODULES

    module = MODULES[chapter]
    info = module.CHAPTER
    cells: List = [new_markdown_cell(f"# {info['title']}\n\n{info['intro']}")]
    cells += [new_markdown_cell(text) for text in info["concept"]]
    from .chapters import ASSIGNMENTS

    cells.append(to_nb_cell(Cell("code", SETUP.format(assignment=ASSIGNMENTS[chapter]), f"{chapter}_setup")))
    for ex in chapter_exercises(chapter):
        for cell in ex.cells(spec_for(ex)):
            cells.append(to_nb_cell(cell, ex.number))
    for index, cell in enumerate(cells):
        # stable ids keep regenerated notebooks diff-free (nbformat would draw random ones)
        cell["id"] = f"{chapter}-{index:03d}"
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def write_sources(root: Path, chapters: Optional[Iterable[str]] = None) -> List[Path]:
    """Write the source notebooks of ``chapters`` (default: all with a module) under ``root/source``."""
    from .chapters import ASSIGNMENTS, MODULES

    written = []
    for chapter in chapters or sorted(MODULES):
        name = ASSIGNMENTS[chapter]
        path = Path(root) / "source" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build_source(chapter), str(path))
        written.append(path)
    return written
