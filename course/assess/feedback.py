"""Worked answers in feedback, computed from the declarations, never in the release.

``insert_derivations(nb, syllabus, student)`` puts, after the last cell of every
graded item it finds in ``nb``, a markdown cell with that item's worked answer
for the student's numbers (``Activity.worked_markdown``: a workbook
exercise's derivation, a lab answer's reference solution and key). What a cell
is comes from one helper, :meth:`Syllabus.role_of` (the cell's nbgrader grade id
looked up in the declarations). It is idempotent and adds nothing else: hidden
tests are not touched here (the graded notebook's hidden-test cells contain only
a call to the trusted judge, no test data).

Two ways to use it:

* nbgrader: ``nbgrader_config.py`` puts ``course.notebook_api.feedback.InsertDerivations``
  (this module's preprocessor bound to the activity list) into
  ``GenerateFeedback.preprocessors``, so ``nbgrader generate_feedback`` includes them.
* the autograder calls the same preprocessor on the autograded notebook before it
  renders feedback HTML.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Tuple

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_markdown_cell, new_output
from traitlets import Bool

from .checks import NO_STUDENT
from .variants import variant_of

MARK = "derivation"
#: what :func:`course.assess.checks.whoami` prints when it knows the student
_RAN_FOR = re.compile(r"numbers for student '([^']*)'")


def render_prompts(nb, syllabus, student: Optional[str]):
    """Give every prompt cell the output it has in ``student``'s own kernel (in place).

    The autograder's sandboxed kernel does not know the student, so the outputs it
    recorded show the default numbers; feedback must show the student's.
    """
    roles = [syllabus.role_of(cell) for cell in nb.cells]
    setup_text = "".join(str(o.get("text", "")) for c, r in zip(nb.cells, roles) if r.role == "setup"
                         for o in c.get("outputs", []))
    ran_for = _RAN_FOR.search(setup_text)
    # outputs computed without the student's id, or for another id (e.g. a kernel's Unix user)
    ran_for_nobody = NO_STUDENT in setup_text or (ran_for is not None and ran_for.group(1) != student)
    for cell, role in zip(nb.cells, roles):
        if cell.get("cell_type") != "code" or role.activity is None:
            continue
        if role.role == "prompt":
            text = role.activity.prompt_markdown(role.item, variant_of(role.activity.name, student))
            cell.outputs = [new_output("display_data", data={"text/markdown": text, "text/plain": text})]
        elif role.role == "check" and not ran_for_nobody:
            # a check shows the derivation after a right answer; feedback inserts it once, after the item
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") in ("stream", "error")]
        elif ran_for_nobody and role.role in ("check", "setup"):
            # these outputs were computed without the student's id (the default numbers)
            cell.outputs = [new_output("stream", name="stdout", text=(
                "(output removed: the grader ran this cell without your student id; "
                "your graded result for your own numbers is below)\n"))]
    return nb


def insert_derivations(nb, syllabus, student: Optional[str] = None):
    """Insert a worked answer after the last cell of each graded item in ``nb`` (in place); return ``nb``.

    ``student`` (the nbgrader student id) picks the numbers of that student's variant;
    with a student the prompt cells are re-rendered for them too (:func:`render_prompts`).
    """
    if student is not None:
        render_prompts(nb, syllabus, student)
    already = {c.get("metadata", {}).get("course", {}).get(MARK) for c in nb.cells
               if isinstance(c.get("metadata", {}).get("course"), dict)}
    last: Dict[Tuple[str, str], int] = {}
    for index, cell in enumerate(nb.cells):
        role = syllabus.role_of(cell)
        if role.activity is not None and role.item:
            last[(role.activity.name, role.item)] = index
    for (name, item), index in sorted(last.items(), key=lambda kv: -kv[1]):
        activity = syllabus.by_name[name]
        mark = activity.worked_mark(item)
        if mark in already:
            continue
        try:
            text = activity.worked_markdown(item, variant_of(name, student))
        except Exception as exc:  # feedback must still render
            text = f"(the worked answer could not be computed: {type(exc).__name__})"
        if not text:  # an item without a worked answer (a lab's reflection)
            continue
        cell = new_markdown_cell(text)
        cell.metadata["course"] = {MARK: mark}
        nb.cells.insert(index + 1, cell)
    return nb


class InsertDerivationsFor(Preprocessor):
    """nbconvert/nbgrader preprocessor wrapping :func:`insert_derivations`; a subclass sets ``syllabus``."""

    # nbconvert registers configured preprocessors disabled unless the class enables itself
    enabled = Bool(True).tag(config=True)
    syllabus = None

    def preprocess(self, nb, resources):
        student = (resources or {}).get("nbgrader", {}).get("student")
        return insert_derivations(nb, self.syllabus, student if isinstance(student, str) else None), resources
