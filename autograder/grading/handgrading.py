"""After grading by hand in the formgrader: what the grader sees there, and the refresh.

* :class:`ShowMarkingGuide` (an nbconvert preprocessor that ``nbgrader_config.py`` gives the
  formgrader's HTML exporter) puts each hand-graded answer's model answer and marking guide
  under the student's answer. The text is the instructor's own answer cell in ``source/``, as
  the generator wrote it from the activity's declaration, so nothing about it lives here. It acts only in the formgrader's
  ``formgrade`` template: feedback never shows it.
* :class:`WidgetNote` turns a widget's output (whose plain-text form is a repr such as
  ``VBox(children=(ToggleButtons(...``) into text, in the formgrader and in feedback: a lab's
  ``lab.ask(id)`` cell shows the reflection's question and ``lab.lock(act)`` the prediction's
  question, its options and the student's locked choice (both from the lab's declaration in the
  package, the choice from the submission's ``predictions.json``); any other widget a short note.
* :class:`NotAnswered` shows "not answered" for a hand-graded answer left blank, in feedback.
* :func:`refreshed_rows` (``course-autograde refresh``) brings the gradebook's scores (hand-graded ones included) into
  ``grades.json``, ``grades.csv``, the late policy and the Canvas CSV without grading anything
  again, so nothing is marked as needing grading again.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Dict, List, Optional

from nbformat.v4 import new_markdown_cell, new_output

from ..compat import NbGraderStep

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "[interactive widget: open the notebook in JupyterLab and run it to use it]"
#: what nbgrader's ClearSolutions leaves in a markdown answer cell of the release
STUB_ANSWER = "YOUR ANSWER HERE"
NOT_ANSWERED = "*not answered*"


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def is_hand_graded(cell) -> bool:
    """A cell nbgrader asks a person to grade: an answer cell with points (a reflection)."""
    meta = _nbgrader(cell)
    return bool(meta.get("grade")) and bool(meta.get("solution"))


class ShowMarkingGuide(NbGraderStep):
    """Formgrader only: the model answer and marking guide under each hand-graded answer."""

    def _guides(self, assignment: str, notebook: str) -> Dict[str, str]:
        """The instructor's answer cells (model answer, marking guide) by grade id, from source/."""
        import os

        import nbformat
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=self.config)
        path = os.path.join(coursedir.format_path(coursedir.source_directory, ".", assignment),
                            f"{notebook}.ipynb")
        try:
            source = nbformat.read(path, as_version=4)
        except (OSError, ValueError):
            return {}
        return {_nbgrader(c).get("grade_id"): c.source for c in source.cells if is_hand_graded(c)}

    def preprocess(self, nb, resources):
        if getattr(self.parent, "template_name", "") != "formgrade":
            return nb, resources  # feedback and every other export: students never see the guide
        guides = self._guides(resources.get("assignment_id", ""), resources.get("notebook_id", ""))
        cells = []
        for cell in nb.cells:
            cells.append(cell)
            guide = guides.get(_nbgrader(cell).get("grade_id")) if is_hand_graded(cell) else None
            if guide:
                cells.append(new_markdown_cell(
                    "> **For the grader: model answer and marking guide** (not shown to students)\n>\n"
                    + "\n".join("> " + line for line in guide.splitlines())))
        nb.cells = cells
        return nb, resources


#: a lab's cell that shows a reflection's question or a prediction lock (the whole cell, as generated)
_LAB_CALL = re.compile(r"""^\s*lab\.(ask|lock)\(\s*['"]([A-Za-z0-9_]+)['"]\s*\)\s*$""")


def _lab(assignment: str):
    """The lab declared for ``assignment`` (None for a chapter or an unknown name)."""
    try:
        from course.notebook_api.lab_session import labs
    except ImportError:
        return None
    return next((lab for lab in labs().values() if lab.name == assignment), None)


def _options(options) -> Dict[str, str]:
    """A lock's options as ``{key: label}`` (a plain sequence gets keys A, B, ... as the lock gives them)."""
    if isinstance(options, dict):
        return {str(k): str(v) for k, v in options.items()}
    return {chr(ord("A") + i): str(label) for i, label in enumerate(options)}


def lab_cell_text(lab, call: str, ident: str, predictions: Dict[str, dict]) -> Optional[str]:
    """Markdown of what a ``lab.ask``/``lab.lock`` cell shows, as text (None if not declared)."""
    try:
        if call == "ask":
            return lab.reflection_markdown(ident)
        spec = lab.lock_of(ident)
    except (KeyError, ValueError):
        return None
    options = _options(spec.options)
    # each student saw the options in their own order, lettered by place: name them by content only
    lines = [f"**Prediction (locked before exploring).** {spec.question}", ""]
    lines += [f"- {label}" for label in options.values()]
    chosen = predictions.get(lab.lock_key(ident), {}).get("value")
    if chosen is not None and hasattr(spec, "option_id"):
        chosen = spec.option_id(chosen) or chosen  # a letter an older predictions.json stored
    lines.append("")
    if chosen is None:
        lines.append("**The student's prediction:** none locked.")
    else:
        label = options.get(str(chosen))
        lines.append("**The student's prediction:** " + (f"“{label}”" if label else f"{chosen} (not an option)"))
    return "\n".join(lines)


def _predictions(resources) -> Dict[str, dict]:
    """The submission's locked predictions, from ``predictions.json`` beside the notebook."""
    folder = (resources.get("metadata") or {}).get("path")
    if not folder:
        return {}
    from course.predictions_file import read_predictions

    return read_predictions(Path(folder))


class WidgetNote(NbGraderStep):
    """A widget's output becomes text instead of the widget's repr: a lab's question, or a note."""

    def preprocess(self, nb, resources):
        assignment = (resources.get("nbgrader") or {}).get("assignment") or resources.get("assignment_id") or ""
        lab = _lab(assignment)
        predictions = _predictions(resources) if lab is not None else {}
        for cell in nb.cells:
            if cell.get("cell_type") != "code":
                continue
            call = _LAB_CALL.match(cell.get("source", "")) if lab is not None else None
            text = lab_cell_text(lab, call.group(1), call.group(2), predictions) if call else None
            if text is not None:  # what the cell asked, whether or not its widget was rendered
                cell["outputs"] = [new_output("display_data", data={"text/markdown": text, "text/plain": text})]
                continue
            for output in cell.get("outputs", []):
                data = output.get("data") if isinstance(output, dict) else None
                if isinstance(data, dict) and WIDGET_MIME in data:
                    output["data"] = {"text/plain": WIDGET_NOTE}
        return nb, resources


class NotAnswered(NbGraderStep):
    """A hand-graded answer left as released (or blank) reads "not answered"."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if is_hand_graded(cell) and cell.get("source", "").strip() in ("", STUB_ANSWER):
                cell.source = NOT_ANSWERED
        return nb, resources


def settle_hand_grades(db_url: str, assignment: str) -> int:
    """Clear "needs manual grading" on every part that has a score a person gave; returns how many.

    nbgrader's own autograde flags a hand-graded part again when it regrades, and its formgrader
    saves a score only when the box's value changes, so typing the same score again never cleared
    that flag. A part with a manual score is graded by hand: this is the formgrader's own rule
    (``needs_manual_grade`` is false once a manual score is set)."""
    from nbgrader.api import Gradebook

    settled = 0
    with Gradebook(db_url) as gb:
        for sub in gb.find_assignment(assignment).submissions:
            for nb in sub.notebooks:
                for grade in nb.grades:
                    if grade.needs_manual_grade and grade.manual_score is not None:
                        grade.needs_manual_grade = False
                        settled += 1
        gb.db.commit()
    return settled


def gradebook_scores(db_url: str, assignment: str) -> Dict[str, dict]:
    """``{student: {"timestamp": str|None, "grades": {grade_id: {score, manual, needs_manual, hand,
    comment}}}}`` (``hand``: an answer cell graded by a person)."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(db_url) as gb:
        for sub in gb.find_assignment(assignment).submissions:
            grades, comments = {}, {}
            for nb in sub.notebooks:
                hand = {c.name for c in nb.notebook.solution_cells}
                for comment in nb.comments:
                    comments[comment.name] = comment.manual_comment or ""
                for grade in nb.grades:
                    grades[grade.name] = {"score": float(grade.score), "manual": grade.manual_score,
                                          "needs_manual": bool(grade.needs_manual_grade),
                                          "hand": grade.name in hand}
            for name, text in comments.items():
                if name in grades:
                    grades[name]["comment"] = text
            stamp = sub.timestamp
            out[sub.student.id] = {"timestamp": (stamp.strftime("%Y-%m-%d %H:%M:%S.%f") + " UTC") if stamp else None,
                                   "grades": grades}
    return out


def refreshed_rows(previous: List[dict], scores: Dict[str, dict]) -> List[dict]:
    """``previous`` grades.json rows with every part's points from the gradebook (hand grades too)."""
    from course.assess import codes

    rows = []
    for res in previous:
        res = copy.deepcopy(res)
        grades = scores.get(res["student"], {}).get("grades", {})
        for part in res["parts"]:
            grade = grades.get(part["part"])
            if grade is None:
                continue
            if grade["needs_manual"]:
                part.update(points=None, status="manual", reason="not graded by hand yet",
                            code=codes.AWAITING_HAND_GRADE, findings=[codes.AWAITING_HAND_GRADE])
                continue
            if grade["manual"] is not None:
                comment = (grade.get("comment") or "").strip()
                part.update(status="hand", reason="graded by hand" + (f": {comment}" if comment else ""),
                            code=codes.GRADED_BY_HAND, findings=[codes.GRADED_BY_HAND])
            elif grade.get("hand"):  # nbgrader scores an answer left as released 0, for nobody to grade
                part.update(status="hand", reason="not answered", code=codes.NOT_ANSWERED,
                            findings=[codes.NOT_ANSWERED])
            part["points"] = round(grade["score"], 6)
        res["score"] = round(sum(p["points"] or 0.0 for p in res["parts"]), 6)
        rows.append(res)
    return rows


def rows_from_gradebook(root, assignment: str, scores: Dict[str, dict], skip=()) -> List[dict]:
    """grades.json rows for the students of ``scores`` not in ``skip``, from the gradebook alone (a
    submission graded by the formgrader's Autograde before it wrote grades/, or by plain nbgrader)."""
    students = sorted(set(scores) - set(skip))
    if not students:
        return []
    from .grader import Grader

    grader = Grader(root, assignment, workers=1, feedback=False, isolate=False)
    rows = []
    for student in students:
        grades = scores[student]["grades"]
        row = grader._rows(student, "graded", "graded (scores from the gradebook)", {}, grades)
        rows.append(row)
    return rows


def previous_policy(previous: List[dict]) -> Optional[dict]:
    """The late policy and due date the class run recorded (``None`` if it had none)."""
    for res in previous:
        late = res.get("late")
        if isinstance(late, dict) and isinstance(late.get("policy"), dict):
            # a student with an extension has their own due date; the class's is class_due
            return {"policy": late["policy"], "due": late["class_due"] if "class_due" in late else late.get("due")}
    return None
