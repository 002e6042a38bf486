"""Write source/<lab>/<lab>.ipynb for every declared lab (:func:`course.labs.activity.labs`)."""

from __future__ import annotations

from pathlib import Path
from typing import List

import nbformat
from nbformat.v4 import new_notebook

from course.exercises.notebook import to_nb_cell

from .activity import Lab, labs

ROOT = Path(__file__).resolve().parents[2]


def build(lab: Lab):
    nb = new_notebook(cells=[to_nb_cell(c) for c in lab.cells()])
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"{lab.name[:5]}-{index:03d}"  # stable ids: regenerated notebooks stay diff-free
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def write_all(root: Path = ROOT) -> List[Path]:
    written = []
    for lab in labs().values():
        path = Path(root) / "source" / lab.name / f"{lab.name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build(lab), str(path))
        written.append(path)
    return written
