"""Points back into the design ledger, so the index notebook can show them next to attempts.

Visible checks record ``attempted``/``attempts``/``passed`` (see
:mod:`course.exercises.checks`). After grading, :func:`record_points` adds
``points`` and ``max_points`` per exercise (its parts summed), which
:mod:`course.progress` shows per chapter. ``course import-grades FILE`` reads
any JSON that holds rows with a grade id and points (the autograder's
``grades.json`` or a plain ``{grade_id: {"points": p, "max_points": m}}``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple

from .registry import REGISTRY

_ID_KEYS = ("grade_id", "name", "cell", "part")
_POINT_KEYS = ("points", "score")
_MAX_KEYS = ("max_points", "max_score")


def _first(row: dict, keys: Tuple[str, ...]) -> Any:
    for key in keys:
        if key in row:
            return row[key]
    return None


def rows_from_json(data: Any, student: Optional[str] = None) -> Dict[str, Tuple[float, float]]:
    """``{grade_id: (points, max_points)}`` from any nesting of dicts and lists.

    >>> rows_from_json({"ch02_ex2_1": {"points": 1, "max_points": 1}})
    {'ch02_ex2_1': (1.0, 1.0)}
    >>> rows_from_json([{"student": "a", "grade_id": "ch02_ex2_2", "score": 0, "max_score": 1},
    ...                 {"student": "b", "grade_id": "ch02_ex2_2", "score": 1, "max_score": 1}], student="b")
    {'ch02_ex2_2': (1.0, 1.0)}
    """
    found: Dict[str, Tuple[float, float]] = {}

    def visit(node: Any, key_hint: Optional[str], who: Optional[str]) -> None:
        if isinstance(node, dict):
            who = node.get("student", who) if isinstance(node.get("student", who), str) else who
            gid = _first(node, _ID_KEYS) or key_hint
            pts, top = _first(node, _POINT_KEYS), _first(node, _MAX_KEYS)
            if gid in REGISTRY and isinstance(pts, (int, float)) and isinstance(top, (int, float)):
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


def record_points(grades: Dict[str, Tuple[float, float]], ledger=None) -> Dict[str, dict]:
    """Sum part points per exercise and merge them into the ledger; return what was recorded."""
    from course.ledger import Ledger

    per_exercise: Dict[str, dict] = {}
    for gid, (points, max_points) in grades.items():
        part = REGISTRY.get(gid)
        if part is None or not part.ledger_key:
            continue
        entry = per_exercise.setdefault(part.ledger_key, {"points": 0.0, "max_points": 0.0})
        entry["points"] += points
        entry["max_points"] += max_points
    ledger = ledger if ledger is not None else Ledger()
    for key, entry in per_exercise.items():
        ledger.record(key, dict(entry, graded=True))
    return per_exercise


def import_grades(path: str, student: Optional[str] = None, ledger=None) -> Dict[str, dict]:
    import json
    from pathlib import Path

    return record_points(rows_from_json(json.loads(Path(path).read_text()), student), ledger)


__all__: Iterable[str] = ["rows_from_json", "record_points", "import_grades"]
