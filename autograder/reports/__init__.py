"""The instructor's class report: what the class predicted, where it struggled, item analysis.

``course-autograde report ASSIGNMENT...`` (after grading) writes ``report.json`` and a
self-contained ``report.html``; ``notebooks/instructor_report.ipynb`` draws the same figures
from ``report.json``. Modules:

* :mod:`.catalog` -- the only place that reads the course's declarations (locks, parts, acts,
  kinds, the feedback hints' classes of wrong answers);
* :mod:`.stats` -- item statistics on plain numbers (discrimination as PrairieLearn defines it);
* :mod:`.build` -- the report as plain data from ``grades.json``, ``predictions.json`` and
  shared ledgers;
* :mod:`.anonymise` -- the opt-in export for teaching research;
* :mod:`.render` -- the HTML page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, List, Optional

from .anonymise import anonymise
from .build import build_report, find_grades
from .render import render

__all__ = ["make_report", "build_report", "find_grades", "anonymise", "render"]


def make_report(assignments: List[str], *, course_root=".", grades: Optional[Iterable] = None,
                submissions=None, ledgers=None, out_dir=".", salt: Optional[str] = None) -> dict:
    """Build the report of ``assignments`` and write ``report.json`` and ``report.html`` into ``out_dir``.

    ``grades``: grades.json files or folders to look in (default: the course root and its
    subfolders, e.g. ``merged/`` after ``course-autograde merge``). ``salt``: write the
    anonymised export instead (:func:`.anonymise.anonymise`). Returns the report written.
    """
    if not assignments:
        raise ValueError("assignments must name at least one graded assignment")
    root = Path(course_root)
    found = find_grades(list(dict.fromkeys(assignments)), list(grades) if grades else [root])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(found, course_root=root, submissions=submissions, ledgers=ledgers, out_dir=out)
    if salt is not None:
        report = anonymise(report, salt)
    for name, text in (("report.json", json.dumps(report, indent=1) + "\n"), ("report.html", render(report))):
        path = out / name
        path.write_text(text)
        if salt is None:
            path.chmod(0o600)  # it names students and their scores: the instructor's eyes only
    return report
