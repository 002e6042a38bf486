"""Progress and mastery from the design ledger, for the course index notebook.

``summary()`` turns ledger entries into plain data; ``show()`` renders it as
an HTML table (one row per lab and per workbook chapter).

Which ledger fields count
-------------------------
Lab acts (keys ``lab05/act1``, ``lab06/act2``, ``tutorial_3d/act1``...):
    ``prediction`` present -> prediction locked; ``correct`` -> prediction right;
    the act is *completed* when ``completed`` is true, or when it holds both a
    prediction and a saved ``configuration`` (what :meth:`Instrument.record`
    writes at the end of an act).
Workbook exercises (keys ``ch00/ex0_1``...):
    any entry -> attempted; ``passed`` (or ``visible_passed``) true -> its
    visible checks passed; ``points`` and ``max_points`` once graded.

Example
-------
>>> import tempfile, os
>>> from course.ledger import Ledger
>>> ledger = Ledger(os.path.join(tempfile.mkdtemp(), "l.json"))
>>> ledger.record("lab06/act1", {"prediction": "C", "correct": True, "completed": True})
>>> ledger.record("ch00/ex0_1", {"attempted": 1, "passed": True})
>>> s = summary(ledger)
>>> s["labs"]["lab06"]["acts_completed"], s["chapters"]["ch00"]["visible_passed"]
(1, 1)
"""

from __future__ import annotations

import html
import re

__all__ = ["summary", "show", "to_html", "LABS", "CHAPTERS"]

#: lab key prefix -> (title, number of acts)
LABS = {
    "lab05": ("Lab 05 · The Parallelism Paradox", 2),
    "lab06": ("Lab 06 · The Bandwidth Invariant", 2),
    "tutorial_3d": ("Tutorial · 3D parallelism solver", 2),
}
#: chapter key prefix -> title
CHAPTERS = {
    "ch00": "Ring all-reduce",
    "ch01": "ZeRO",
    "ch02": "Gradient accumulation",
    "ch03": "Learning-rate scaling",
    "ch04": "Communication overhead",
    "ch05": "Pipeline parallelism",
    "ch06": "Tensor parallelism",
    "ch07": "Checkpointing",
    "ch08": "Mixed precision",
    "ch09": "Capstone",
}
_CHAPTER_KEY = re.compile(r"^(ch\d\d)/")


def _exercise_counts() -> dict[str, int]:
    """Exercises per chapter from the workbook registry, when it is importable."""
    try:
        from .exercises.spec import EXERCISES  # filled when chapter modules import
        import course.exercises  # noqa: F401  (registers the chapters)
    except Exception:  # progress must render even if the workbook package is mid-change
        return {}
    counts: dict[str, int] = {}
    for exercise in EXERCISES.values():
        chapter = getattr(exercise, "chapter", None)
        if chapter:
            counts[chapter] = counts.get(chapter, 0) + 1
    return counts


def summary(ledger=None) -> dict:
    """Progress as plain data: ``{"labs": {...}, "chapters": {...}}``."""
    from .ledger import Ledger

    entries = (ledger if ledger is not None else Ledger()).entries()
    labs = {}
    for prefix, (title, n_acts) in LABS.items():
        acts = {k.split("/", 1)[1]: e for k, e in entries.items() if k.startswith(prefix + "/")}
        done = [a for a, e in acts.items() if e.get("completed") is True or ("prediction" in e and "configuration" in e)]
        labs[prefix] = {
            "title": title,
            "acts_total": max(n_acts, len(acts)),
            "acts_completed": len(done),
            "predictions_locked": sum("prediction" in e for e in acts.values()),
            "predictions_correct": sum(e.get("correct") is True for e in acts.values()),
            "failures_hit": sorted({f for e in acts.values() for f in e.get("failures_hit", [])}),
        }
    totals = _exercise_counts()
    chapters = {}
    for prefix, title in CHAPTERS.items():
        ex = {k: e for k, e in entries.items() if _CHAPTER_KEY.match(k) and k.startswith(prefix + "/")}
        graded = [e for e in ex.values() if isinstance(e.get("points"), (int, float))]
        chapters[prefix] = {
            "title": title,
            "exercises_total": totals.get(prefix),
            "attempted": len(ex),
            "visible_passed": sum(e.get("passed") is True or e.get("visible_passed") is True for e in ex.values()),
            "points": float(sum(e["points"] for e in graded)) if graded else None,
            "max_points": float(sum(e.get("max_points", 0) for e in graded)) if graded else None,
        }
    return {"labs": labs, "chapters": chapters}


def _bar(done: int, total: int | None) -> str:
    if not total:
        return f"{done}"
    share = min(done / total, 1.0)
    return (f"<div style='display:flex;align-items:center;gap:6px'><div style='width:90px;height:8px;"
            f"background:#e2e8f0;border-radius:4px'><div style='width:{100 * share:.0f}%;height:8px;"
            f"background:#4f46e5;border-radius:4px'></div></div>{done}/{total}</div>")


def to_html(data: dict) -> str:
    rows = []
    for lab in data["labs"].values():
        rows.append(
            f"<tr><td>{html.escape(lab['title'])}</td><td>{_bar(lab['acts_completed'], lab['acts_total'])}</td>"
            f"<td>{lab['predictions_locked']} locked, {lab['predictions_correct']} right</td>"
            f"<td>{html.escape(', '.join(lab['failures_hit']) or '–')}</td></tr>"
        )
    lab_table = ("<table class='course-progress'><tr><th>Lab</th><th>Acts</th><th>Predictions</th>"
                 "<th>Failure states met</th></tr>" + "".join(rows) + "</table>")
    rows = []
    for key, ch in data["chapters"].items():
        points = "–" if ch["points"] is None else f"{ch['points']:g} / {ch['max_points']:g}"
        rows.append(
            f"<tr><td>{key} · {html.escape(ch['title'])}</td><td>{_bar(ch['attempted'], ch['exercises_total'])}</td>"
            f"<td>{ch['visible_passed']}</td><td>{points}</td></tr>"
        )
    chapter_table = ("<table class='course-progress'><tr><th>Chapter</th><th>Attempted</th>"
                     "<th>Visible checks passed</th><th>Points</th></tr>" + "".join(rows) + "</table>")
    return f"<div><h4>Labs</h4>{lab_table}<h4>Workbook</h4>{chapter_table}</div>"


def show(ledger=None) -> None:
    """Display progress in a notebook.

    It displays by itself (rather than returning something to display), so it
    also works inside ``try``/``else`` blocks, where IPython shows no value.
    """
    from IPython.display import HTML, display

    display(HTML(to_html(summary(ledger))))
