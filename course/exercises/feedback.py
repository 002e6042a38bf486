"""Derivations in feedback: worked solutions computed from the spec, never in the release.

``insert_derivations(nb)`` puts, after the last cell of every exercise it
finds in ``nb``, a markdown cell with that exercise's worked derivation
(numbers from ``course.core``). It finds exercises through
``cell.metadata.course.exercise`` (written by the notebook builder) or, if a
student's editor dropped that, through the nbgrader ``grade_id`` of the cell
(looked up in the registry). For a lab it puts, after each graded answer,
the worked answer for the student's numbers (:meth:`Lab.worked_markdown`).
It is idempotent and adds nothing else: hidden
tests are not touched here (the graded notebook's hidden-test cells contain
only a call to the trusted judge, no test data).

Two ways to use it:

* nbgrader: ``nbgrader_config.py`` puts :class:`InsertDerivations` into
  ``GenerateFeedback.preprocessors``, so ``nbgrader generate_feedback``
  includes the derivations.
* the autograder calls ``insert_derivations(nb)`` on the autograded notebook
  before it renders feedback HTML.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool
from nbformat.v4 import new_markdown_cell

from .registry import REGISTRY
from .spec import EXERCISES, derivation_markdown

MARK = "derivation"


def _exercise_of(cell) -> Optional[str]:
    course_meta = cell.get("metadata", {}).get("course", {})
    number = course_meta.get("exercise") if isinstance(course_meta, dict) else None
    if isinstance(number, str) and number in EXERCISES:
        return number
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
    if isinstance(grade_id, str):
        part = REGISTRY.get(grade_id)
        if part is not None:
            return part.exercise if part.exercise in EXERCISES else None  # a lab part is no exercise
        match = re.fullmatch(r"ch\d+_ex(\d+)_(\d+)(_.*)?", grade_id)
        if match and f"{match[1]}.{match[2]}" in EXERCISES:
            return f"{match[1]}.{match[2]}"
    return None


def _variant(number: str, student: Optional[str]) -> Optional[int]:
    from .chapters import ASSIGNMENTS
    from .variants import variant_of

    return variant_of(ASSIGNMENTS.get(EXERCISES[number].chapter, ""), student)


def _lab_answer(grade_id: str):
    """``(lab, answer id)`` of a lab answer's prompt or graded cell, else ``None``."""
    from course.labs.activity import labs

    for lab in labs().values():
        for act in lab.acts:
            for answer in act.answers:
                if grade_id in (lab.grade_id(answer.id), lab.prompt_grade_id(answer.id)):
                    return lab, answer.id
    return None


def _lab_spec(lab, student: Optional[str]):
    from .variants import variant_of

    return lab.spec_for(variant_of(lab.name, student))


def render_prompts(nb, student: Optional[str]):
    """Give every prompt cell (``show('0.1')``) the output it has in ``student``'s own kernel (in place).

    The autograder's sandboxed kernel does not know the student, so the outputs it
    recorded show the workbook's numbers; feedback must show the student's.
    """
    from nbformat.v4 import new_output

    from .checks import NO_STUDENT, prompt_text

    def grade_id(cell) -> str:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        return gid if isinstance(gid, str) else ""

    ran_for_nobody = any(NO_STUDENT in str(o.get("text", "")) for c in nb.cells if grade_id(c).endswith("_setup")
                         for o in c.get("outputs", []))
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        number = _exercise_of(cell)
        in_lab = _lab_answer(grade_id(cell)) if grade_id(cell).endswith("_prompt") else None
        if number is not None and grade_id(cell).endswith("_prompt"):
            text = prompt_text(number, _variant(number, student))
            cell.outputs = [new_output("display_data", data={"text/markdown": text, "text/plain": text})]
        elif in_lab is not None:
            lab, answer_id = in_lab
            text = lab.prompt_markdown(answer_id, _lab_spec(lab, student))
            cell.outputs = [new_output("display_data", data={"text/markdown": text, "text/plain": text})]
        elif ran_for_nobody and (grade_id(cell).endswith("_check") or grade_id(cell).endswith("_setup")):
            # these outputs were computed without the student's id (the workbook's numbers)
            cell.outputs = [new_output("stream", name="stdout", text=(
                "(output removed: the grader ran this cell without your student id; "
                "your graded result for your own numbers is below)\n"))]
    return nb


def insert_derivations(nb, student: Optional[str] = None):
    """Insert a derivation cell after the last cell of each exercise in ``nb`` (in place); return ``nb``.

    ``student`` (the nbgrader student id) picks the numbers of that student's variant;
    with a student the prompt cells are re-rendered for them too (:func:`render_prompts`).
    """
    if student is not None:
        render_prompts(nb, student)
    already = {c.get("metadata", {}).get("course", {}).get(MARK) for c in nb.cells
               if isinstance(c.get("metadata", {}).get("course"), dict)}
    last: Dict[str, int] = {}
    for index, cell in enumerate(nb.cells):
        number = _exercise_of(cell)
        if number is not None:
            last[number] = index
    lab_tests: Dict[str, int] = {}
    for index, cell in enumerate(nb.cells):
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if isinstance(gid, str) and not gid.endswith("_prompt") and _lab_answer(gid) is not None:
            lab_tests[gid] = index
    inserts = [(index, number, None) for number, index in last.items()]
    inserts += [(index, gid, _lab_answer(gid)) for gid, index in lab_tests.items()]
    for index, mark, in_lab in sorted(inserts, key=lambda item: -item[0]):
        if mark in already:
            continue
        if in_lab is None:
            text = derivation_markdown(mark, _variant(mark, student))
        else:
            lab, answer_id = in_lab
            text = lab.worked_markdown(answer_id, _lab_spec(lab, student))
        cell = new_markdown_cell(text)
        cell.metadata["course"] = {MARK: mark}
        nb.cells.insert(index + 1, cell)
    return nb


class InsertDerivations(Preprocessor):
    """nbconvert/nbgrader preprocessor wrapping :func:`insert_derivations` (for generate_feedback)."""

    # nbconvert registers configured preprocessors disabled unless the class enables itself
    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb, resources):
        student = (resources or {}).get("nbgrader", {}).get("student")
        return insert_derivations(nb, student if isinstance(student, str) else None), resources
