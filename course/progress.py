"""Progress from the design ledger, for the course index notebook.

What to show comes from the one activity list (:data:`course.activities.ACTIVITIES`):
each activity gives its own rows (``Activity.progress``:
a lab's acts, locks and graded parts, a chapter's exercises).
What is done comes only from ledger fields the package writes:

* a lab lock (key ``lab05/act1``...): ``prediction`` when the student locks
  (:meth:`PredictionLock.lock`), ``correct`` when the reveal runs
  (:meth:`PredictionLock.reveal`);
* a workbook exercise (key ``ch00/ex0_1``...): ``attempts`` and ``passed`` from
  its visible check (:func:`course.assess.checks.check_exercise`), for the current student on
  their own numbers (:mod:`course.assess.attempts`);
* any graded part's key: ``points`` and ``max_points`` after
  ``course import-grades`` (:func:`course.assess.mastery.record_points`).

``summary()`` returns plain data, ``to_html()`` renders it, ``show()`` displays it.
"""

from __future__ import annotations

import html
from typing import Optional

from .activities import ACTIVITIES
from .ledger import Ledger
from .theme import theme_css

__all__ = ["summary", "show", "to_html"]


def summary(ledger=None) -> dict:
    """Progress as plain data: ``{"labs": {prefix: ...}, "chapters": {"ch00": ...}}``."""
    entries = (ledger if ledger is not None else Ledger()).entries()
    rows = [(activity.prefix, activity.progress(entries)) for activity in ACTIVITIES]
    return {"labs": {key: row for key, row in rows if row["kind"] == "lab"},
            "chapters": {key: row for key, row in rows if row["kind"] == "chapter"}}


def _lock_text(lock: dict) -> str:
    if not lock["locked"]:
        return "not locked yet"
    if not lock["revealed"]:
        return "locked, not revealed"
    return "locked, revealed: prediction " + ("correct" if lock["correct"] else "wrong")


def _points_text(points: Optional[tuple], max_points: float) -> str:
    return f"– / {max_points:g}" if points is None else f"{points[0]:g} / {points[1]:g}"


def to_html(data: dict) -> str:
    esc = html.escape
    rows = []
    for lab in data["labs"].values():
        rows.append(f"<tr class='course-progress-lab'><th colspan='3'>{esc(lab['title'])} · "
                    f"{lab['locked']}/{lab['locks_total']} predictions locked, {lab['revealed']} revealed, "
                    f"{lab['correct']} correct</th></tr>")
        for act in lab["acts"]:
            lock = "–" if act["lock"] is None else _lock_text(act["lock"])
            parts = "; ".join(f"{esc(p['title'])}: {_points_text(p['points'], p['max_points'])}"
                              for p in act["parts"]) or "–"
            rows.append(f"<tr class='course-progress-act' data-key='{esc(lab['assignment'])}/{esc(act['id'])}'>"
                        f"<td>{esc(act['title'])}</td><td class='course-progress-lock'>{lock}</td>"
                        f"<td>{parts}</td></tr>")
    lab_table = ("<table class='course-progress course-ui'><tr><th>Act</th><th>Prediction</th>"
                 "<th>Graded parts (points after grading)</th></tr>" + "".join(rows) + "</table>")
    rows = []
    for key, ch in data["chapters"].items():
        points = "–" if ch["points"] is None else f"{ch['points']:g} / {ch['max_points']:g}"
        rows.append(f"<tr class='course-progress-chapter' data-key='{esc(key)}'><td>{esc(ch['title'])}</td>"
                    f"<td>{ch['attempted']}/{ch['exercises_total']} ({ch['attempts']} different answers checked)</td>"
                    f"<td>{ch['visible_passed']}</td><td>{points}</td></tr>")
    chapter_table = ("<table class='course-progress course-ui'><tr><th>Chapter</th><th>Exercises attempted</th>"
                     "<th>Visible checks passed</th><th>Points</th></tr>" + "".join(rows) + "</table>")
    return f"{theme_css()}<div class='course-ui'><h4>Labs</h4>{lab_table}<h4>Workbook</h4>{chapter_table}</div>"


def show(ledger=None) -> None:
    """Display progress in a notebook (displays by itself, so it also works inside blocks)."""
    from IPython.display import HTML, display

    display(HTML(to_html(summary(ledger))))
