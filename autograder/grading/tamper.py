"""Which locked cells a student changed: named in the submission's notes, the grading log and the report.

nbgrader restores a locked cell (a test cell, a locked instruction) from the gradebook before grading,
so a change earns nothing; but it reports it only as a log warning about a checksum, and that warning
fires for every honest submission of this course, whose test cells hold hidden tests the checksum was
computed with (nbgrader #1961; :func:`autograder.compat.restore_cells_class` silences it). Here a
locked cell counts as changed when its text differs both from what students received (the
gradebook's source with the hidden-test regions removed, as nbgrader's ``ClearHiddenTests`` removes
them on release) and from the instructor's own source; blank lines and trailing spaces do not count.
"""

from __future__ import annotations

from typing import List


def _normal(text) -> str:
    text = "".join(text) if isinstance(text, list) else str(text or "")
    return "\n".join(line.rstrip() for line in text.splitlines() if line.strip())


def released_source(source: str) -> str:
    """``source`` as students receive it: nbgrader's ``ClearHiddenTests`` applied (its configured delimiters)."""
    from nbformat.v4 import new_code_cell
    from nbgrader.preprocessors import ClearHiddenTests

    cell = new_code_cell(source)
    try:
        ClearHiddenTests()._remove_hidden_test_region(cell)
    except RuntimeError:  # unbalanced markers in the instructor's source: compare with it as it is
        return source
    return cell.source


def changed_locked_cells(nb, gradebook, notebook: str, assignment: str) -> List[str]:
    """The grade ids of the locked cells in ``nb`` whose text the student changed, in notebook order."""
    from nbgrader.api import MissingEntry

    try:
        source_nb = gradebook.find_notebook(notebook, assignment)
    except MissingEntry:
        return []
    locked = {c.name: c.source for c in source_nb.source_cells if c.locked}
    changed = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        if gid not in locked or gid in changed:
            continue
        mine = _normal(cell.get("source", ""))
        if mine not in (_normal(released_source(locked[gid])), _normal(locked[gid])):
            changed.append(gid)
    return changed
