"""A part that waits for the instructor reads "waiting for your instructor" in feedback, never 0.

nbgrader's feedback shows every graded cell as "Score: 0.0 / 2.0" until a person grades it, and the
total counts it as 0, so a student read a written answer nobody had read yet as a wrong one. This
feedback step (in :data:`autograder.grading.feedback.FEEDBACK_PREPROCESSORS`, so ``course-autograde``, grading
on submit, ``nbgrader generate_feedback`` and the formgrader's button all run it) reads from the
gradebook which parts still need grading by hand; each such cell then shows no score and says it waits
for the instructor, and the total counts only what has been graded, with a note at the top naming
the parts and points still to come.
"""

from __future__ import annotations

from nbformat.v4 import new_markdown_cell

from ..compat import NbGraderStep

WAITING = "Waiting for your instructor"
#: marks the note this step puts at the top, so a second run replaces it
NOTE_KEY = "course_awaiting"


def pending_parts(db_url: str, notebook: str, assignment: str, student: str) -> dict:
    """``{grade id: max points}`` of the parts of ``student``'s submission that still need grading by hand."""
    from nbgrader.api import MissingEntry

    from ..compat import open_gradebook

    with open_gradebook(db_url) as gb:
        try:
            sub = gb.find_submission_notebook(notebook, assignment, student)
        except MissingEntry:
            return {}
        return {g.name: float(g.max_score) for g in sub.grades if g.needs_manual_grade}


class AwaitingInstructor(NbGraderStep):
    """Feedback step: parts waiting for grading by hand show no score, the total leaves them out."""

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        nb.cells = [c for c in nb.cells if NOTE_KEY not in c.get("metadata", {})]
        pending = pending_parts(info["db_url"], info["notebook"], info["assignment"], info["student"])
        if not pending:
            return nb, resources
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if meta.get("grade_id") not in pending or not meta.get("grade"):
                continue
            points = pending[meta["grade_id"]]
            meta["grade"] = False  # nbgrader's template shows no "Score: 0.0" for it then
            meta["comment"] = (f"{WAITING}: this answer is graded by hand ({points:g} points); its score "
                               "appears here once it is graded.")
            meta["solution"] = meta.get("solution", False) or cell.cell_type == "markdown"  # the comment is shown
        waiting = sum(pending.values())
        if "max_score" in info:
            info["max_score"] = max(0.0, float(info["max_score"]) - waiting)
        parts = ", ".join(sorted(pending))
        note = new_markdown_cell(
            f"**{WAITING}:** {len(pending)} part(s) worth {waiting:g} points ({parts}) are graded by hand and "
            f"not yet graded. The score above counts only the parts graded so far; these are added when "
            "your instructor has graded them.")
        note.metadata[NOTE_KEY] = True
        nb.cells.insert(0, note)
        return nb, resources
