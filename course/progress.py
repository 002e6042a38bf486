"""Progress from the design ledger, for the course index notebook.

What to show comes from the declarations: the labs' acts, locks and graded
parts (:func:`course.labs.activity.labs`, :data:`course.exercises.REGISTRY`)
and the workbook's chapters and exercises (:data:`course.exercises.spec.EXERCISES`).
What is done comes only from ledger fields the package writes:

* a lab lock (key ``lab05/act1``...): ``prediction`` when the student locks
  (:meth:`PredictionLock.lock`), ``correct`` when the reveal runs
  (:meth:`PredictionLock.reveal`);
* a workbook exercise (key ``ch00/ex0_1``...): ``attempts`` and ``passed`` from
  its visible check (:func:`course.exercises.checks.check`);
* any graded part's key: ``points`` and ``max_points`` after
  ``course import-grades`` (:func:`course.exercises.mastery.record_points`).

``summary()`` returns plain data, ``to_html()`` renders it, ``show()`` displays it.
"""

from __future__ import annotations

import html
from typing import Optional

from .exercises.chapters import MODULES
from .exercises.registry import REGISTRY
from .exercises.spec import chapter_exercises
from .labs.activity import labs
from .ledger import Ledger
from .theme import theme_css

__all__ = ["summary", "show", "to_html"]


def _points(entry: dict) -> Optional[tuple]:
    if isinstance(entry.get("points"), (int, float)) and isinstance(entry.get("max_points"), (int, float)):
        return float(entry["points"]), float(entry["max_points"])
    return None


def _lab_rows(entries: dict) -> dict:
    out = {}
    for prefix, lab in labs().items():
        acts = []
        for act in lab.acts:
            lock = None
            if act.lock is not None:
                entry = entries.get(lab.lock_key(act.id), {})
                lock = {"key": lab.lock_key(act.id), "locked": "prediction" in entry,
                        "revealed": "correct" in entry, "correct": entry.get("correct") is True}
            parts = []
            for answer in act.answers:
                part = REGISTRY[lab.grade_id(answer.id)]
                parts.append({"grade_id": part.grade_id, "title": part.title, "max_points": part.points,
                              "points": _points(entries.get(part.ledger_key, {}))})
            acts.append({"id": act.id, "title": act.title, "lock": lock, "parts": parts})
        locks = [a["lock"] for a in acts if a["lock"]]
        out[prefix] = {"title": lab.title, "assignment": lab.name, "acts": acts,
                       "locks_total": len(locks), "locked": sum(x["locked"] for x in locks),
                       "revealed": sum(x["revealed"] for x in locks), "correct": sum(x["correct"] for x in locks)}
    return out


def _chapter_rows(entries: dict) -> dict:
    out = {}
    for chapter, module in MODULES.items():
        exercises = chapter_exercises(chapter)
        done = [entries.get(ex.ledger_key, {}) for ex in exercises]
        graded = [p for p in (_points(e) for e in done) if p is not None]
        out[chapter] = {
            "title": module.CHAPTER["title"],
            "exercises_total": len(exercises),
            "attempted": sum(int(e.get("attempts", 0)) > 0 for e in done),
            "attempts": sum(int(e.get("attempts", 0)) for e in done),
            "visible_passed": sum(e.get("passed") is True for e in done),
            "points": sum(p for p, _ in graded) if graded else None,
            "max_points": sum(m for _, m in graded) if graded else None,
        }
    return out


def summary(ledger=None) -> dict:
    """Progress as plain data: ``{"labs": {prefix: ...}, "chapters": {"ch00": ...}}``."""
    entries = (ledger if ledger is not None else Ledger()).entries()
    return {"labs": _lab_rows(entries), "chapters": _chapter_rows(entries)}


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
                    f"<td>{ch['attempted']}/{ch['exercises_total']} ({ch['attempts']} checks run)</td>"
                    f"<td>{ch['visible_passed']}</td><td>{points}</td></tr>")
    chapter_table = ("<table class='course-progress course-ui'><tr><th>Chapter</th><th>Exercises attempted</th>"
                     "<th>Visible checks passed</th><th>Points</th></tr>" + "".join(rows) + "</table>")
    return f"{theme_css()}<div class='course-ui'><h4>Labs</h4>{lab_table}<h4>Workbook</h4>{chapter_table}</div>"


def show(ledger=None) -> None:
    """Display progress in a notebook (displays by itself, so it also works inside blocks)."""
    from IPython.display import HTML, display

    display(HTML(to_html(summary(ledger))))
