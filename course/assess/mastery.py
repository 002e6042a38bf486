"""Mastery of the workbook from the design ledger, and graded points back into it.

Mastery (:func:`mastery`, shown on the index by :func:`show_mastery`)
---------------------------------------------------------------------
An exercise is **mastered** when a visible check found every part right for
the *current* student on their *current* variant (:mod:`course.assess.attempts`) (the check runs the hidden tests' own judge,
so this is hidden-test-equivalent, never "plausible magnitude"), or when it
was graded with full points. Counted out of all workbook exercises (65), per
chapter and per kind, with the day streak (consecutive local dates with a
check, current and best), the last activity and the points once graded.

Points
------
Visible checks record ``attempts``/``passed`` per student and variant (see
:mod:`course.assess.checks`). After grading, :func:`record_points` adds
``points`` and ``max_points`` per exercise (its parts summed), which
:mod:`course.progress` shows per chapter. ``course import-grades FILE`` reads
any JSON that holds rows with a grade id and points (the autograder's
``grades.json`` or a plain ``{grade_id: {"points": p, "max_points": m}}``).
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import Any, Dict, Iterable, List, Optional, Tuple

from .registry import Part

_ID_KEYS = ("grade_id", "name", "cell", "part")
_POINT_KEYS = ("points", "score")
_MAX_KEYS = ("max_points", "max_score")


def _first(row: dict, keys: Tuple[str, ...]) -> Any:
    for key in keys:
        if key in row:
            return row[key]
    return None


def rows_from_json(data: Any, registry: Dict[str, Part],
                   student: Optional[str] = None) -> Dict[str, Tuple[float, float]]:
    """``{grade_id: (points, max_points)}`` of the parts in ``registry``, from any nesting of dicts and lists.

    >>> known = {"ch02_ex2_1": None, "ch02_ex2_2": None}
    >>> rows_from_json({"ch02_ex2_1": {"points": 1, "max_points": 1}}, known)
    {'ch02_ex2_1': (1.0, 1.0)}
    >>> rows_from_json([{"student": "a", "grade_id": "ch02_ex2_2", "score": 0, "max_score": 1},
    ...                 {"student": "b", "grade_id": "ch02_ex2_2", "score": 1, "max_score": 1}], known, student="b")
    {'ch02_ex2_2': (1.0, 1.0)}
    """
    found: Dict[str, Tuple[float, float]] = {}

    def visit(node: Any, key_hint: Optional[str], who: Optional[str]) -> None:
        if isinstance(node, dict):
            who = node.get("student", who) if isinstance(node.get("student", who), str) else who
            gid = _first(node, _ID_KEYS) or key_hint
            pts, top = _first(node, _POINT_KEYS), _first(node, _MAX_KEYS)
            if gid in registry and isinstance(pts, (int, float)) and isinstance(top, (int, float)):
                if student is None or who in (None, student):
                    found[gid] = (float(pts), float(top))
                return
            for k, v in node.items():
                visit(v, k if isinstance(k, str) else None, k if isinstance(k, str) and k == student else who)
        elif isinstance(node, list):
            for item in node:
                visit(item, None, who)

    visit(data, None, None)
    return found


def record_points(grades: Dict[str, Tuple[float, float]], registry: Dict[str, Part], ledger=None) -> Dict[str, dict]:
    """Sum part points per exercise and merge them into the ledger; return what was recorded."""
    from course.ledger import Ledger

    per_exercise: Dict[str, dict] = {}
    for gid, (points, max_points) in grades.items():
        part = registry.get(gid)
        if part is None or not part.ledger_key:
            continue
        entry = per_exercise.setdefault(part.ledger_key, {"points": 0.0, "max_points": 0.0})
        entry["points"] += points
        entry["max_points"] += max_points
    ledger = ledger if ledger is not None else Ledger()
    for key, entry in per_exercise.items():
        ledger.record(key, dict(entry, graded=True))
    return per_exercise


def import_grades(path: str, registry: Dict[str, Part], student: Optional[str] = None,
                  ledger=None) -> Dict[str, dict]:
    import json
    from pathlib import Path

    return record_points(rows_from_json(json.loads(Path(path).read_text()), registry, student), registry, ledger)


def _is_mastered(entry: dict, who: str) -> bool:
    """Right in a visible check for this student on these numbers (``who``:
    :func:`course.assess.attempts.identity`), or graded with full points."""
    from .attempts import record_of

    if record_of(entry, who).get("passed") is True:
        return True
    points, top = entry.get("points"), entry.get("max_points")
    return entry.get("graded") is True and isinstance(points, (int, float)) and isinstance(top, (int, float)) \
        and top > 0 and points >= top


def streaks(days: Iterable[str], today: _dt.date) -> Tuple[int, int]:
    """``(current, best)`` runs of consecutive dates; the current run may end today or yesterday.

    >>> d = _dt.date(2026, 3, 10)
    >>> streaks(["2026-03-07", "2026-03-08", "2026-03-09", "2026-03-05"], d)
    (3, 3)
    >>> streaks(["2026-03-01", "2026-03-02"], d)
    (0, 2)
    >>> streaks([], d)
    (0, 0)
    """
    dates = sorted({_dt.date.fromisoformat(x) for x in days if isinstance(x, str) and len(x) == 10
                    and x[4] == "-" and x[:4].isdigit()})
    best = run = 0
    previous = None
    for date in dates:
        run = run + 1 if previous is not None and (date - previous).days == 1 else 1
        best = max(best, run)
        previous = date
    current = run if previous is not None and (today - previous).days <= 1 else 0
    return current, best


def mastery(syllabus, ledger=None, today: Optional[_dt.date] = None, student_variant=None) -> dict:
    """Mastery of the exercises of ``syllabus`` from the ledger (see the module docstring).

    ``student_variant(assignment) -> variant`` defaults to the variant of whoever
    runs this kernel (:func:`course.assess.variants.current_variant`).
    """
    from course.ledger import Ledger

    from .spec import DISPLAY_KINDS
    from .attempts import identity
    from .variants import current_student, current_variant

    ledger = ledger if ledger is not None else Ledger()
    today = today or _dt.date.today()
    variant_of = student_variant or current_variant
    entries = ledger.entries()
    exercises = [ex for activity in syllabus.activities for ex in activity.exercises]
    student = current_student()[0]
    variants = {ex.assignment: None for ex in exercises}
    variants = {a: identity(student, variant_of(a)) for a in variants}
    chapters: Dict[str, Dict[str, int]] = {}
    kinds = {k: {"mastered": 0, "total": 0} for k in DISPLAY_KINDS}
    days: List[str] = []
    last = None
    points = max_points = 0.0
    mastered = 0
    for ex in exercises:
        entry = entries.get(ex.ledger_key, {})
        row = chapters.setdefault(ex.chapter, {"mastered": 0, "total": 0})
        row["total"] += 1
        kinds[ex.kind]["total"] += 1
        if entry and _is_mastered(entry, variants.get(ex.assignment)):
            mastered += 1
            row["mastered"] += 1
            kinds[ex.kind]["mastered"] += 1
        days += [d for d in entry.get("days", []) if isinstance(d, str)]
        if isinstance(entry.get("updated"), str) and (last is None or entry["updated"] > last):
            last = entry["updated"]
        if entry.get("graded") is True:
            points += float(entry.get("points", 0) or 0)
            max_points += float(entry.get("max_points", 0) or 0)
    current, best = streaks(days, today)
    return {"mastered": mastered, "total": len(exercises), "chapters": dict(sorted(chapters.items())),
            "kinds": kinds, "streak": current, "best_streak": best, "last_activity": last,
            "points": points if max_points else None, "max_points": max_points or None}


def mastery_html(data: dict) -> str:
    """The index's mastery panel for :func:`mastery`'s ``data``."""
    def cells(row: Dict[str, int]) -> str:
        return f"<td>{row['mastered']} / {row['total']}</td>"

    head = (f"<p><b>Mastered: {data['mastered']} / {data['total']}</b> exercises &middot; day streak "
            f"<b>{data['streak']}</b> (best {data['best_streak']}) &middot; last activity "
            f"{html.escape(str(data['last_activity'] or 'none yet'))}"
            + (f" &middot; points {data['points']:g} / {data['max_points']:g}" if data["points"] is not None else "")
            + "</p>")
    chapters = "".join(f"<tr><td>{html.escape(ch)}</td>{cells(row)}</tr>" for ch, row in data["chapters"].items())
    kinds = "".join(f"<tr><td>{html.escape(k)}</td>{cells(row)}</tr>" for k, row in data["kinds"].items())
    return (head + "<table style='display:inline-table;margin-right:2em'><tr><th>Chapter</th><th>Mastered</th></tr>"
            + chapters + "</table><table style='display:inline-table'><tr><th>Kind</th><th>Mastered</th></tr>"
            + kinds + "</table><p><small>Mastered = every part right for your own numbers in a visible "
            "check (the hidden tests' judge), or full points when graded.</small></p>")


def show_mastery(syllabus, ledger=None) -> None:
    """Display the mastery panel (the index notebook's mastery cell)."""
    data = mastery(syllabus, ledger)
    try:
        from IPython.display import HTML, display
        display(HTML(mastery_html(data)))
    except ImportError:  # pragma: no cover - outside Jupyter
        print(f"Mastered {data['mastered']} / {data['total']}; streak {data['streak']} (best {data['best_streak']})")


__all__: Iterable[str] = ["rows_from_json", "record_points", "import_grades", "mastery", "mastery_html",
                          "show_mastery", "streaks"]
