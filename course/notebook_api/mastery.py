"""Mastery of the listed workbook exercises (the index notebook's panel):
:mod:`course.assess.mastery` bound to :data:`course.activities.SYLLABUS`."""

from __future__ import annotations

from typing import Optional

from course.activities import REGISTRY, SYLLABUS
from course.assess import mastery as _engine


def mastery(ledger=None, today=None, student_variant=None) -> dict:
    return _engine.mastery(SYLLABUS, ledger, today, student_variant)


def show_mastery(ledger=None) -> None:
    _engine.show_mastery(SYLLABUS, ledger)


def record_points(grades, ledger=None) -> dict:
    return _engine.record_points(grades, REGISTRY, ledger)


def import_grades(path: str, student: Optional[str] = None, ledger=None) -> dict:
    return _engine.import_grades(path, REGISTRY, student, ledger)
