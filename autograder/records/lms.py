"""Grades an LMS takes: a CSV for Canvas's gradebook import.

Canvas's importer reads the layout of its own gradebook export: the identity columns
``Student, ID, SIS User ID, SIS Login ID, Section`` (it matches a student by ID, SIS User
ID or SIS Login ID), then one column per assignment headed ``Name (Canvas assignment id)``;
a header without ``(id)`` makes Canvas create a new assignment. The second row,
``Points Possible``, is the one Canvas's export writes. The score is the one after the late
policy (``grades.json``'s ``late.final_score``) when there is one.

Give the course's Canvas export as the roster to fill ``ID``, ``SIS User ID`` and
``Section``: its rows are matched on ``SIS Login ID`` (the login the hub uses).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Dict, Iterable, List, Optional

IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def read_roster(path) -> Dict[str, dict]:
    """A Canvas gradebook export as ``{SIS Login ID: row}`` (rows without a login are skipped)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    missing = [c for c in IDENTITY if rows and c not in rows[0]]
    if missing:
        raise ValueError(f"roster {str(path)!r} is not a Canvas gradebook export: no column {missing[0]!r}")
    return {row["SIS Login ID"].strip(): row for row in rows if row.get("SIS Login ID", "").strip()}


def final_score(res: dict) -> float:
    return (res.get("late") or {}).get("final_score", res["score"])


def canvas_rows(results: Iterable[dict], column: str, roster: Optional[Dict[str, dict]] = None) -> List[List[str]]:
    """Header, ``Points Possible`` row and one row per student of ``column`` (``"Name (id)"``)."""
    results = sorted(results, key=lambda r: r["student"])
    if not column.strip():
        raise ValueError("column must name the Canvas assignment, e.g. 'Chapter 2 (12345)'")
    possible = max((r["max_score"] for r in results), default=0)
    rows = [IDENTITY + [column], ["Points Possible", "", "", "", "", f"{possible:g}"]]
    for res in results:
        person = (roster or {}).get(res["student"], {})
        rows.append([person.get("Student", res["student"]), person.get("ID", ""), person.get("SIS User ID", ""),
                     res["student"], person.get("Section", ""), f"{final_score(res):g}"])
    return rows


def write_canvas(results: Iterable[dict], path, column: str, roster_path=None) -> Path:
    """Write the Canvas import CSV to ``path``; return it."""
    roster = read_roster(roster_path) if roster_path else None
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(canvas_rows(results, column, roster))
    return path
