"""Workbook chapters 0-4 as nbgrader assignments: notebooks, keys, release, grading end to end."""

from __future__ import annotations

import math
import os
from pathlib import Path

import nbformat
import pytest

from course.notebook_api import REGISTRY, Verdict
from course.notebook_api.feedback import insert_derivations
from course.activities import ACTIVITIES, EXERCISES
from course.assess.spec import spec_for

from .conftest import WORKBOOK_0_4

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_EXERCISES = {"ch00": 6, "ch01": 6, "ch02": 5, "ch03": 5, "ch04": 5}

# The corrected key, from ../shared/reference/workbook-answers.md (typed here on purpose: the keys
# of the exercises are computed by course.core, and this table checks them independently).
CORRECTED_KEY = {
    ("0.1", "volume_gb"): 1.75, ("0.2", "time_ms"): 70.0, ("0.3", "utilization_pct"): 77.8,
    ("0.4", "ring_ms"): 140.0, ("0.4", "tree_ms"): 480.0,
    ("1.1", "memory_zero0_gb"): 112.0, ("1.2", "memory_zero1_gb"): 29.3, ("1.3", "memory_zero2_gb"): 15.5,
    ("1.4", "memory_zero3_gb"): 1.75, ("1.5", "traffic_gb"): 41.3,
    ("2.1", "accum_steps"): 64, ("2.2", "saved_ms"): 3150.0, ("2.3", "throughput_seq_s"): 265.0,
    ("3.1", "lr_linear"): 2.4e-3, ("3.2", "lr_sqrt"): 8.49e-4, ("3.3", "warmup_steps"): 8000,
    ("4.1", "allreduce_ms"): 65.6, ("4.2", "overlap_pct"): 97.5, ("4.3", "cross_node_ms"): 350.0,
    ("4.4", "ratio"): 1.45,
}
# Trace answers with a single value, worked out by hand from the workbook's inputs.
HAND_KEY = {("0.4", "faster"): "ring", ("1.6", "min_stage"): 3, ("1.6", "headroom_gb"): 5.0,
            ("2.5", "faster"): "no_checkpointing",
            ("2.5", "slowdown"): 1.33, ("2.3", "step_time_s"): 7.731, ("3.5", "decay_steps"): 50_000}


def _source(name):
    return nbformat.read(str(ROOT / "source" / name / f"{name}.ipynb"), 4)


def _key(number, name):
    ex = EXERCISES[number]
    for part in ex.parts:
        if name in part.names and part.value is not None:
            return part.value.key(spec_for(ex))[name]
    raise KeyError(name)


@pytest.mark.parametrize("number,name", sorted(CORRECTED_KEY))
def test_derive_keys_equal_the_corrected_key(number, name):
    assert math.isclose(_key(number, name), CORRECTED_KEY[number, name], rel_tol=0.01)


@pytest.mark.parametrize("number,name", sorted(HAND_KEY))
def test_trace_keys_equal_hand_answers(number, name):
    expected = HAND_KEY[number, name]
    got = _key(number, name)
    assert got == expected if isinstance(expected, str) else math.isclose(got, expected, rel_tol=0.01)


def test_every_exercise_of_chapters_0_to_4_is_defined_in_order():
    for chapter, count in CHAPTER_EXERCISES.items():
        numbers = [n for n, ex in EXERCISES.items() if ex.chapter == chapter]
        assert sorted(numbers) == [f"{int(chapter[2:])}.{i}" for i in range(1, count + 1)]


@pytest.mark.parametrize("name", [a.name for a in ACTIVITIES])
def test_every_source_notebook_is_generated_from_the_activity_list(name):
    from course.activities import activity
    from course.assess.notebook import build_notebook

    built = build_notebook(activity(name))
    committed = _source(name)
    assert [(c.cell_type, c.source, c.metadata, c.get("id")) for c in committed.cells] == \
           [(c.cell_type, c.source, c.metadata, c.get("id")) for c in built.cells], \
        "run: course build-sources " + name


@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_grade_cells_are_registered_with_their_points(name):
    nb = _source(name)
    graded = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"}
    registered = {gid: p.points for gid, p in REGISTRY.items() if p.assignment == name}
    assert graded == registered
    headings = [c.source.splitlines()[0] for c in nb.cells if c.source.startswith("### Exercise")]
    assert len(headings) == CHAPTER_EXERCISES[name[:4]]
    assert all(any(k in h for k in ("Derive", "Trace", "Build", "Debug", "Design")) for h in headings)


@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_answer_names_are_unique_within_an_assignment(name):
    """The autograder harvests after the whole notebook ran: a reused name would clobber an answer."""
    names = [n for p in REGISTRY.values() if p.assignment == name for n in p.names]
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_reference_solutions_grade_full_in_process(name):
    """Exec the solution cells, harvest and judge every part (fast, no kernel)."""
    namespace = {}
    for cell in _source(name).cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            exec(compile(cell.source, f"<{name}>", "exec"), namespace)
    for gid, part in REGISTRY.items():
        if part.assignment == name:
            verdict = part.grade(namespace)
            assert type(verdict) is Verdict and verdict.passed, (gid, verdict)


@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_feedback_derivations_follow_each_exercise(name):
    nb = insert_derivations(_source(name))
    derivations = [c for c in nb.cells if c.metadata.get("course", {}).get("derivation")]
    assert len(derivations) == CHAPTER_EXERCISES[name[:4]]
    assert insert_derivations(nb).cells == nb.cells  # idempotent
    for cell in derivations:
        assert "could not be computed" not in cell.source


@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_release_hides_solutions_hidden_tests_and_mark_schemes(name):
    text = (ROOT / "release" / name / f"{name}.ipynb").read_text()
    for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grade_in_kernel", "Mark scheme", "Model answer",
                   "Worked derivation"):
        assert secret not in text


# --- slow: real kernels and real nbgrader -------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_source_notebook_executes_headless(name, tmp_path):
    from nbclient import NotebookClient

    os.environ.setdefault("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    nb = _source(name)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


@pytest.mark.slow
def test_release_is_in_sync_with_source(tmp_path):
    from course.cli import fresh_release
    from course.assess.release import release_differences

    assert release_differences(WORKBOOK_0_4, fresh_release(WORKBOOK_0_4, tmp_path)) == [], \
        "run: course build-release " + " ".join(WORKBOOK_0_4)


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_reference_solution_scores_full_points(graded_workbook, name):
    grades = graded_workbook.grades(name, "reference")
    auto = {gid: g for gid, g in grades.items() if gid in REGISTRY}
    assert auto and all(score == max_score for score, max_score in auto.values()), auto


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_untouched_release_scores_zero(graded_workbook, name):
    grades = graded_workbook.grades(name, "untouched")
    assert grades and all(score == 0 for score, _ in grades.values()), grades


@pytest.mark.slow
@pytest.mark.parametrize("name", WORKBOOK_0_4)
def test_wrong_answers_lose_exactly_their_points(graded_workbook, name):
    grades = graded_workbook.grades(name, "wrong")
    mutated = graded_workbook.mutated[name]
    assert mutated
    for gid, (score, max_score) in grades.items():
        if gid not in REGISTRY:
            continue
        assert score == (0 if gid in mutated else max_score), (gid, score)


@pytest.mark.slow
def test_generated_feedback_has_derivations_and_no_hidden_tests(graded_workbook):
    name = "ch02_gradient_accumulation"
    graded_workbook.generate_feedback(name)
    html = (graded_workbook.root / "feedback" / "reference" / name / f"{name}.html").read_text()
    assert "Worked derivation, exercise 2.1" in html
    assert "grade_in_kernel" not in html and "BEGIN HIDDEN TESTS" not in html
