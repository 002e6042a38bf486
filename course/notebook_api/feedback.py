"""Feedback's worked answers for the listed activities: :mod:`course.assess.feedback` bound to
:data:`course.activities.SYLLABUS` (``nbgrader_config.py`` and the autograder name
:class:`InsertDerivations`)."""

from __future__ import annotations

from typing import Optional

from course.activities import SYLLABUS
from course.assess import feedback as _engine


class InsertDerivations(_engine.InsertDerivationsFor):
    """Insert each graded item's worked answer for the student's numbers (``nbgrader generate_feedback``)."""

    syllabus = SYLLABUS


def insert_derivations(nb, student: Optional[str] = None):
    """:func:`course.assess.feedback.insert_derivations` for the listed activities."""
    return _engine.insert_derivations(nb, SYLLABUS, student)


def render_prompts(nb, student: Optional[str]):
    """:func:`course.assess.feedback.render_prompts` for the listed activities."""
    return _engine.render_prompts(nb, SYLLABUS, student)
