"""A grade's policy lives with its assignment: due date, late rule and extensions, set once.

``grades/<assignment>/policy.json`` holds the assignment's due date and :class:`~autograder.records.late.LatePolicy`;
``grades/extensions.csv`` its students' own due dates (:mod:`autograder.records.term`); a due date not set
here is the one nbgrader's gradebook has. Every route that grades reads the policy from here
(:func:`load`) and applies it the same way (:func:`apply`): ``course-autograde class`` with or without
``--student``, ``single --record``, ``refresh``, the formgrader's Autograde button and ``nbgrader
autograde`` (:class:`autograder.engines.formgrader.SandboxedAutograde`), and grading on submit. Nothing that
grades again forgets it, since no flag has to be repeated.

The policy changes only by a command that says what it changes (:func:`change`):
``course-autograde policy ASSIGNMENT --late-per-day 0.1 ...`` or the same flags given to ``class`` /
``refresh``; each change is printed and kept in the file's ``history``. A due date set here is
written into the gradebook too, so the formgrader and nbgrader show the same one.

A regrade that would change a score already exported (``canvas.csv``) or already released to a
student (nbgrader's ``release_feedback``) says so: :func:`changed_exports`.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from ..grading.course_settings import CourseSettings
from . import late, term

FILE = "policy.json"
SETTINGS = ("per_day", "grace_minutes", "cap")


@dataclass(frozen=True)
class AssignmentPolicy:
    """What a grade of ``assignment`` owes to time: its due date (``None``: none) and late rule;
    ``due_from`` says where the due date came from (``policy``, ``gradebook`` or ``none``)."""

    assignment: str
    due: Optional[datetime]
    late: late.LatePolicy
    due_from: str = "none"

    def record(self) -> dict:
        """The ``late_policy`` block of a ``grades.json`` (what this run applied)."""
        return {"policy": asdict(self.late), "due": self.due.isoformat() if self.due else None}

    def describe(self) -> str:
        due = (f"due {self.due.strftime('%Y-%m-%d %H:%M UTC')} (from the {self.due_from})" if self.due
               else "no due date")
        rule = (f"{self.late.per_day:.0%} per started day late, grace {self.late.grace_minutes:g} min, "
                f"at most {self.late.cap:.0%}" if self.late.per_day else "no late penalty")
        return f"{due}; {rule}"


def path(root, assignment: str) -> Path:
    return term.grades_dir(root, assignment) / FILE


def _read(root, assignment: str) -> dict:
    file = path(root, assignment)
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text())
    except ValueError as exc:
        raise ValueError(f"{file} is not readable JSON ({exc}): fix it or run `course-autograde policy "
                         f"{assignment}` with the settings to write it again") from None
    return data if isinstance(data, dict) else {}


def _legacy(root, assignment: str) -> dict:
    """The policy an earlier version kept only in the class run's ``grades.json`` (``late_policy``)."""
    found = term.find_grades_json(root, assignment)
    if found is None:
        return {}
    try:
        recorded = json.loads(found.read_text()).get("late_policy") or {}
    except (ValueError, OSError):
        return {}
    return {"late": recorded.get("policy") or {}, "due": recorded.get("due")}


def gradebook_due(root, assignment: str) -> Optional[datetime]:
    """The due date nbgrader's gradebook has for ``assignment`` (``None`` if no gradebook or none set)."""
    course = CourseSettings(root)
    if course.gradebook_file is not None and not course.gradebook_file.is_file():
        return None
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url) as gb:
        try:
            duedate = gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None
    return late.parse_time(duedate.isoformat()) if duedate else None


def load(root, assignment: str) -> AssignmentPolicy:
    """The assignment's policy: ``policy.json``, else what an older run recorded in ``grades.json``;
    a due date from the gradebook when the policy sets none."""
    data = _read(root, assignment) or _legacy(root, assignment)
    settings = {k: v for k, v in (data.get("late") or {}).items() if k in SETTINGS}
    rule = late.LatePolicy(**settings)
    if data.get("due"):
        return AssignmentPolicy(assignment, late.parse_time(data["due"]), rule, "policy")
    due = gradebook_due(root, assignment)
    return AssignmentPolicy(assignment, due, rule, "gradebook" if due else "none")


def change(root, assignment: str, *, due: Optional[str] = None, clear_due: bool = False,
           by: str = "course-autograde policy", **settings) -> List[str]:
    """Change the settings given (``per_day``, ``grace_minutes``, ``cap``; ``None`` leaves one as it
    is), the due date (``due``) or remove it (``clear_due``); returns what changed, in words
    (empty: nothing did, nothing is written). Bad values raise ``ValueError`` naming the setting."""
    given = {k: v for k, v in settings.items() if v is not None}
    unknown = set(given) - set(SETTINGS)
    if unknown:
        raise ValueError(f"unknown late setting {sorted(unknown)[0]!r}: the settings are {', '.join(SETTINGS)}")
    if due is not None and clear_due:
        raise ValueError("give --due or --no-due, not both")
    with term.locked(term.grades_dir(root, assignment)):
        current = load(root, assignment)
        stored = _read(root, assignment)
        new_rule = late.LatePolicy(**{**asdict(current.late), **given})
        new_due = late.parse_time(due) if due is not None else (None if clear_due else current.due)
        changes = [f"{name.replace('_', ' ')}: {getattr(current.late, name):g} -> {getattr(new_rule, name):g}"
                   for name in SETTINGS if getattr(current.late, name) != getattr(new_rule, name)]
        if new_due != current.due or (due is not None and current.due_from != "policy"):
            old = current.due.strftime("%Y-%m-%d %H:%M UTC") if current.due else "none"
            new = new_due.strftime("%Y-%m-%d %H:%M UTC") if new_due else "none"
            if old != new:
                changes.append(f"due date: {old} -> {new}")
        adopting = not path(root, assignment).is_file() and bool(stored or _legacy(root, assignment))
        if not changes and not adopting:
            return []
        history = list(stored.get("history", []))
        history.append({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "by": by,
                        "changed": changes or ["kept the policy an earlier run recorded in grades.json"]})
        record = {"assignment": assignment, "due": new_due.isoformat() if new_due else None,
                  "late": asdict(new_rule), "history": history[-50:]}
        file = path(root, assignment)
        tmp = file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, file)
    if due is not None or clear_due:
        _due_into_gradebook(root, assignment, new_due)
    return changes


def _due_into_gradebook(root, assignment: str, due: Optional[datetime]) -> None:
    """The formgrader and nbgrader show the policy's due date (when the assignment is in the gradebook)."""
    course = CourseSettings(root)
    if course.gradebook_file is not None and not course.gradebook_file.is_file():
        return
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(course.db_url) as gb:
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            return
        gb.update_or_create_assignment(assignment, duedate=due.replace(tzinfo=None) if due else None)


def adopt(root, assignment: str, log=print) -> AssignmentPolicy:
    """:func:`load`, and an older run's policy (kept only in its ``grades.json``) written to
    ``policy.json`` so that every route reads it from now on."""
    if not path(root, assignment).is_file() and _legacy(root, assignment).get("late"):
        change(root, assignment, by="adopted from grades.json")
        log(f"{assignment}: the late policy an earlier run recorded is now kept in {path(root, assignment)}")
    return load(root, assignment)


def change_from_args(args, root, assignment: str, log=print) -> AssignmentPolicy:
    """The ``--due``/``--late-*`` flags of ``class``, ``refresh`` and ``policy``: each given one changes
    the stored policy, said in the output; none given: the stored policy as it is."""
    changes = change(root, assignment, due=getattr(args, "due", None), clear_due=getattr(args, "no_due", False),
                     by=f"course-autograde {getattr(args, 'mode', 'policy')}",
                     per_day=getattr(args, "late_per_day", None),
                     grace_minutes=getattr(args, "late_grace_minutes", None), cap=getattr(args, "late_cap", None))
    if changes:
        log(f"{assignment}: the grade policy changed ({'; '.join(changes)}); kept in {path(root, assignment)}, "
            "every route that grades applies it")
    return adopt(root, assignment, log)


def apply(root, assignment: str, rows: Iterable[dict], timestamps: Dict[str, Optional[str]],
          policy: Optional[AssignmentPolicy] = None) -> List[dict]:
    """``rows`` with ``late`` (:func:`autograder.records.late.apply`) under the assignment's policy and extensions."""
    policy = policy or load(root, assignment)
    return late.apply(rows, timestamps, policy.due, policy.late, term.read_extensions(root, assignment))


# ---------------------------------------------------------------------------- exported and released
def exported_scores(canvas_csv) -> Dict[str, str]:
    """``{student: score}`` of a Canvas CSV :mod:`autograder.lms` wrote (empty if none)."""
    file = Path(canvas_csv)
    if not file.is_file():
        return {}
    with open(file, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    return {row[3]: row[-1] for row in rows[2:] if len(row) >= 6}


_SCORE = re.compile(r"\(Score: ([0-9]+(?:\.[0-9]+)?) / ")
_FINAL = re.compile(r"final score ([0-9]+(?:\.[0-9]+)?)")


def released_score(root, assignment: str, student: str) -> Optional[float]:
    """The score of the feedback ``nbgrader release_feedback`` released to ``student`` (its late
    block's final score, else its total), ``None`` if none was released or it cannot be found."""
    folder = CourseSettings(root).folder("feedback", student, assignment)
    secret = folder / "submission_secret.txt"
    if not secret.is_file():
        return None
    try:
        from nbgrader.utils import notebook_hash

        from .exchange import exchange_course

        outbound = exchange_course(root) / "feedback"
        for page in folder.glob("*.html"):
            released = outbound / f"{notebook_hash(secret=secret.read_text(), notebook_id=page.stem)}.html"
            if released.is_file():
                text = released.read_text(encoding="utf-8", errors="replace")
                found = _FINAL.search(text) or _SCORE.search(text)
                return float(found.group(1)) if found else None
    except (ValueError, OSError):
        return None
    return None


def changed_exports(root, assignment: str, out_dir, rows: Iterable[dict], extra_csv=None) -> List[str]:
    """One line per student whose new final score differs from the one in ``canvas.csv`` (in ``out_dir``
    and at ``extra_csv``) or in feedback already released to them: call before writing."""
    from .lms import final_score

    lines = []
    exported = {}
    for file in [Path(out_dir) / "canvas.csv"] + ([Path(extra_csv)] if extra_csv else []):
        for student, value in exported_scores(file).items():
            exported.setdefault(student, (value, file))
    for row in rows:
        new = final_score(row)
        old = exported.get(row["student"])
        if old is not None:
            try:
                differs = abs(float(old[0]) - new) > 1e-9
            except ValueError:
                differs = True
            if differs:
                lines.append(f"{row['student']}: {old[0]} in {old[1]} (already exported?), now {new:g}: "
                             "import the new canvas.csv into Canvas")
        released = released_score(root, assignment, row["student"])
        if released is not None and abs(released - new) > 1e-9:
            lines.append(f"{row['student']}: released feedback says {released:g}, now {new:g}: run "
                         f"`nbgrader release_feedback {assignment} --student {row['student']}` to send the new one")
    return lines


def warn_changes(lines: List[str], log=print) -> None:
    if lines:
        log(f"WARNING: this grading changes {len(lines)} score(s) already exported or released:")
        for line in lines:
            log(f"  {line}")


def record(root, assignment: str, rows: List[dict], timestamps: Dict[str, Optional[str]], meta: dict,
           log=print) -> List[dict]:
    """The routes that grade one student at a time (the formgrader, ``single --record``, grading on
    submit): the policy applied, a changed export said, the rows put into the assignment's grades."""
    current = load(root, assignment)
    rows = apply(root, assignment, rows, timestamps, current)
    warn_changes(changed_exports(root, assignment, term.grades_dir(root, assignment), rows), log)
    term.record_rows(root, assignment, rows, {**meta, "late_policy": current.record()})
    return rows
