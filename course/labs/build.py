"""Write source/<lab>/<lab>.ipynb for the labs from the cell lists in lab05, lab06 and tutorial."""

from __future__ import annotations

from pathlib import Path
from typing import List

import nbformat
from nbformat.v4 import new_notebook

from course.exercises.notebook import to_nb_cell
from course.exercises.spec import Cell

ROOT = Path(__file__).resolve().parents[2]


def build(name: str, cells: List[Cell]):
    nb = new_notebook(cells=[to_nb_cell(c) for c in cells])
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"{name[:5]}-{index:03d}"  # stable ids: regenerated notebooks stay diff-free
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def write_all(root: Path = ROOT) -> List[Path]:
    from . import lab05, lab06, tutorial
    written = []
    for name, cells in ((lab05.NAME, lab05.cells()), (lab06.NAME, lab06.cells()), (tutorial.NAME, tutorial.cells())):
        path = Path(root) / "source" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build(name, cells), str(path))
        written.append(path)
    return written
