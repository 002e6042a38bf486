"""Workbook chapters 5-9 as nbgrader assignments: notebooks, release, grading end to end.

Slow tests share one course directory: the five assignments generated once, three students
(reference solution, untouched release, wrong-but-well-formed answers) submitted and
autograded with one ``nbgrader autograde`` per assignment.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

import pytest

from course.notebook_api import REGISTRY
from course.notebook_api.feedback import insert_derivations

from .conftest import WORKBOOK_5_9, wrong_submission
from .nbgrader_course import NbgraderCourse, solution_submission

ROOT = Path(__file__).resolve().parents[2]
EXERCISE_COUNT = {"ch05": 6, "ch06": 5, "ch07": 5, "ch08": 6, "ch09": 9}


def _source(name):
    return nbformat.read(str(ROOT / "source" / name / f"{name}.ipynb"), 4)


@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_every_exercise_is_headed_with_number_and_kind_and_graded_cells_are_registered(name):
    nb = _source(name)
    headings = [c.source.splitlines()[0] for c in nb.cells if c.source.startswith("### Exercise")]
    assert len(headings) == EXERCISE_COUNT[name[:4]]
    for i, heading in enumerate(headings, 1):
        assert f"Exercise {int(name[2:4])}.{i} " in heading
        assert any(kind in heading for kind in ("Derive", "Trace", "Build", "Debug", "Design"))
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    assert graded == {gid: p.points for gid, p in REGISTRY.items() if p.assignment == name}


@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_release_hides_solutions_hidden_tests_and_mark_schemes(name):
    text = (ROOT / "release" / name / f"{name}.ipynb").read_text()
    for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grade_in_kernel", "Mark scheme", "Model answer",
                   "Worked derivation"):
        assert secret not in text


@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_feedback_derivations_follow_each_exercise(name):
    nb = insert_derivations(_source(name))
    derivations = [c for c in nb.cells if c.metadata.get("course", {}).get("derivation")]
    assert len(derivations) == EXERCISE_COUNT[name[:4]]
    for cell in derivations:
        assert "could not be computed" not in cell.source


# --- slow: real kernels and real nbgrader ----------------------------------------------------

@pytest.fixture(scope="module")
def graded_5_9(tmp_path_factory):
    """One course dir: chapters 5-9 generated, three students submitted and autograded once each."""
    root = tmp_path_factory.mktemp("course59")
    course = NbgraderCourse(root, WORKBOOK_5_9, ledger=root / "ledger.json")
    course.mutated = {}
    for name in WORKBOOK_5_9:
        course.submit("reference", name, solution_submission(course, name, "reference"))
        course.submit("untouched", name, course.release_notebook(name))
        nb, course.mutated[name] = wrong_submission(course, name)
        course.submit("wrong", name, nb)
    course.autograde()  # every chapter and student in one nbgrader process
    return course


@pytest.mark.slow
def test_release_is_in_sync_with_source(tmp_path):
    from course.cli import fresh_release
    from course.assess.release import release_differences

    assert release_differences(WORKBOOK_5_9, fresh_release(WORKBOOK_5_9, tmp_path)) == [], \
        "run: course build-release " + " ".join(WORKBOOK_5_9)


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_source_notebook_executes_headless_without_errors(graded_5_9, name):
    # autograde ran the instructor's notebook (solutions and hidden tests) in a fresh kernel
    path = graded_5_9.root / "autograded" / "reference" / name / f"{name}.ipynb"
    nb = nbformat.read(str(path), 4)
    errors = [(c.metadata.get("nbgrader", {}).get("grade_id"), o.get("ename"))
              for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
    assert sum(1 for c in nb.cells if c.cell_type == "code" and c.execution_count) > 10


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_reference_solution_scores_full_points(graded_5_9, name):
    grades = graded_5_9.grades(name, "reference")
    auto = {gid: g for gid, g in grades.items() if gid in REGISTRY}
    assert len(auto) == sum(1 for p in REGISTRY.values() if p.assignment == name)
    assert all(score == max_score for score, max_score in auto.values()), auto


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_untouched_release_scores_zero(graded_5_9, name):
    grades = graded_5_9.grades(name, "untouched")
    assert grades and all(score == 0 for score, _ in grades.values()), grades


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_5_9)
def test_wrong_answers_lose_exactly_their_points(graded_5_9, name):
    grades = graded_5_9.grades(name, "wrong")
    mutated = graded_5_9.mutated[name]
    kinds = {REGISTRY[gid].kind for gid in mutated}
    assert kinds <= {"derive", "build"} and mutated
    for gid, (score, max_score) in grades.items():
        if gid in REGISTRY:
            assert score == (0 if gid in mutated else max_score), (gid, score)


@pytest.mark.slow
def test_generated_feedback_has_derivations_and_no_hidden_tests(graded_5_9):
    name = "ch05_pipeline"
    graded_5_9.generate_feedback(name)
    for student in ("reference", "wrong"):
        html = (graded_5_9.root / "feedback" / student / name / f"{name}.html").read_text()
        # 5.5's worked answer names the line of this student's own listing (line numbers vary)
        assert "Worked derivation, exercise 5.1" in html
        assert re.search(r"Line \d+ \(<code>bubble_slots = pp</code>\) is the bug", html), student
    reference = (graded_5_9.root / "feedback" / "reference" / name / f"{name}.html").read_text()
    assert "grade_in_kernel" not in reference and "BEGIN HIDDEN TESTS" not in reference
    # a failed hidden test shows its traceback (the judge call only, no keys or probe inputs)
    # and the judge's reason, which names the wrong answer without the expected value
    wrong = (graded_5_9.root / "feedback" / "wrong" / name / f"{name}.html").read_text()
    assert "does not match the expected value" in wrong
