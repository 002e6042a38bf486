"""The one list of activities: every workbook chapter and every lab, explicitly.

The registry (:data:`REGISTRY`), the ``source/`` notebooks (``course build-sources``), grading
(``autograder``), feedback, ``course variant`` and the progress view are all generated from
``ACTIVITIES``. Nothing is discovered and nothing registers itself when imported: adding an
activity is its declaration (a module with ``ACTIVITY``) plus one line here.
"""

from __future__ import annotations

from typing import Dict, Optional

from course.assess.activity import Activity, Syllabus
from course.assess.registry import Part
from course.assess.variants import variant_of
from course.chapters import ch00, ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09
from course.chapters import ch10, ch11
from course.labs import lab05, lab06, lab07, lab08, tutorial

#: Every workbook chapter and lab of the course, each declared once in its own module and listed here.
ACTIVITIES = (
    ch00.ACTIVITY,
    ch01.ACTIVITY,
    ch02.ACTIVITY,
    ch03.ACTIVITY,
    ch04.ACTIVITY,
    ch05.ACTIVITY,
    ch06.ACTIVITY,
    ch07.ACTIVITY,
    ch08.ACTIVITY,
    ch09.ACTIVITY,
    ch10.ACTIVITY,
    ch11.ACTIVITY,
    lab05.ACTIVITY,
    lab06.ACTIVITY,
    lab07.ACTIVITY,
    lab08.ACTIVITY,
    tutorial.ACTIVITY,
)

#: the index the engine works on (parts by grade id, activities by assignment, cell roles)
SYLLABUS = Syllabus(ACTIVITIES)

#: grade_id -> :class:`~course.assess.registry.Part`, every autograded cell of every activity
REGISTRY: Dict[str, Part] = SYLLABUS.parts


def activity(assignment: str) -> Activity:
    """The activity whose nbgrader assignment is ``assignment`` (``ValueError`` if none)."""
    return SYLLABUS.activity(assignment)


def answer_sources(assignment: str, student: Optional[str]) -> Dict[str, str]:
    """``{answer grade_id: source}``: the reference solutions of ``assignment`` written with
    ``student``'s numbers (their variant), for an instructor's key or a test's honest
    submission. Empty for an assignment that is not listed."""
    if assignment not in SYLLABUS.by_name:
        return {}
    return SYLLABUS.by_name[assignment].answer_sources(variant_of(assignment, student))


#: exercise number -> :class:`~course.assess.spec.Exercise`, every workbook exercise in the list
EXERCISES = {ex.number: ex for listed in ACTIVITIES for ex in listed.exercises}
