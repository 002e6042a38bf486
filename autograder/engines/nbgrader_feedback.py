"""nbgrader's own Generate Feedback (the formgrader's button, ``nbgrader generate_feedback``) finished
as the course's feedback is: with the student's late-policy note, and a Content-Security-Policy that
allows the page's own styles only (:func:`autograder.grading.sanitize.pin_page_styles`).

``course-autograde`` and grading on submit put a short block at the top of each feedback page saying
what the assignment's grade policy (``grades/<assignment>/policy.json``, extensions) did to the
student's score (:func:`autograder.records.term.add_late_notes`). nbgrader's converter renders the
page itself, so ``nbgrader_config.py`` gives it :func:`after_feedback` as
``c.GenerateFeedback.post_convert_hook``: after each student's pages are written it works out the same
note the way ``course-autograde refresh`` does (the gradebook's scores, hand grades included, and the
submission's time, under the stored policy) and puts it on the pages. A button press and a command
line therefore show a student the same note, and a policy changed since the last grading shows at once.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterable, List


def late_rows(root: Path, assignment: str, students: Iterable[str]) -> List[dict]:
    """``students``' rows of ``assignment`` with their ``late`` block: the assignment's grades.json row
    (else one made from the gradebook) with the gradebook's current scores, under the stored policy."""
    from ..grading import handgrading
    from ..grading.course_settings import CourseSettings
    from ..records import policy, term

    wanted = set(students)
    scores = handgrading.gradebook_scores(CourseSettings(root).db_url, assignment)
    found = term.find_grades_json(root, assignment)
    previous = json.loads(found.read_text()).get("students", []) if found is not None else []
    rows = [r for r in previous if r.get("student") in wanted]
    known = {r["student"] for r in rows}
    rows += handgrading.rows_from_gradebook(root, assignment, {s: v for s, v in scores.items()
                                                               if s in wanted and s not in known})
    rows = handgrading.refreshed_rows(rows, scores)
    stamps = {s: (scores.get(s) or {}).get("timestamp") for s in wanted}
    return policy.apply(root, assignment, rows, stamps)


def after_feedback(assignment=None, student=None, notebooks=()) -> None:
    """``c.GenerateFeedback.post_convert_hook``: the feedback pages just written get the late-policy note,
    and their Content-Security-Policy allows only their own styles (by hash), as the course's pages do.

    nbgrader calls it with its own ids (``"*"`` for every student) and the notebooks it converted
    (``<autograded>/<student>/<assignment>/<notebook>.ipynb``), from the course root it converts in.
    A failure is said on stderr (nbgrader logs a failed hook only at INFO) and never stops the pages."""
    from ..grading.course_settings import CourseSettings
    from ..grading.sanitize import pin_page_styles
    from ..records import term

    root = Path(os.getcwd()).resolve()  # nbgrader's converters run in their course root
    pairs = {(Path(nb).parent.name, Path(nb).parent.parent.name) for nb in notebooks}
    try:
        course = CourseSettings(root)
        for name, who in pairs:  # the pages' own styles by hash, as the course's feedback has them
            for page in course.folder("feedback", who, name).glob("*.html"):
                page.write_text(pin_page_styles(page.read_text(encoding="utf-8")), encoding="utf-8")
        for name in sorted({a for a, _ in pairs}):
            term.add_late_notes(root, name, late_rows(root, name, [s for a, s in pairs if a == name]))
    except Exception as exc:  # noqa: BLE001 -- the feedback itself was written; say what is missing
        print(f"course-autograde: the late-policy note was not added to the feedback of {student} "
              f"({assignment}): {type(exc).__name__}: {exc}", file=sys.stderr)
