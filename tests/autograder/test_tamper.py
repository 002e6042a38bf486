"""A changed locked cell is named (issue 45): what students received and the instructor's own source
pass; a rewritten test cell or locked instruction is named, also when only its hidden-test-free text
is compared; the grade itself is unaffected (nbgrader restores the cell)."""

from __future__ import annotations

import copy

from nbgrader.api import Gradebook

from autograder.grading.tamper import changed_locked_cells, released_source

from .course_dir import CHAPTER, grade_id, make_course, release, solution


def _changed(root, nb):
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        return changed_locked_cells(nb, gb, CHAPTER, CHAPTER)


def test_released_and_source_notebooks_are_untouched_and_a_rewritten_test_cell_is_named(tmp_path):
    root = make_course(tmp_path / "course")
    assert _changed(root, release(root)) == []
    assert _changed(root, solution(root, student="ada")) == []  # hidden tests present: the instructor's copy
    nb = copy.deepcopy(release(root))
    test_cells = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("locked")
                  and c.cell_type == "code"]
    test_cells[0].source = "assert True  # the student's own 'test'"
    test_cells[1].source = test_cells[1].source + "\n\n   \n"  # blank lines only: not a change
    assert _changed(root, nb) == [grade_id(test_cells[0])]


def test_released_source_drops_the_hidden_test_region():
    source = "assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(3) == 6\n### END HIDDEN TESTS\n"
    assert released_source(source).strip() == "assert f(1) == 2"
