"""A term of assignments on one course root: where each assignment's grades live, extensions, and
the term's gradebook.

* :func:`grades_dir`: each assignment's grades in their own folder, ``grades/<assignment>/``
  (``grades.json``, ``grades.csv``, ``canvas.csv``), so grading one assignment never touches
  another's files. ``course-autograde class``, ``refresh``, ``canvas``, ``merge``, ``report`` and
  the formgrader's Autograde all find them there without flags.
* Extensions: ``grades/extensions.csv`` (``assignment,student,extra_days,due,note``), written by
  ``course-autograde extend`` or by hand; the late policy, the report and the Canvas export use the
  student's own due date, and the feedback tells the student.
* :func:`term_table`: ``course-autograde term`` writes ``grades/term.csv`` (one row per student,
  one column per assignment) and ``grades/term-canvas.csv`` (a Canvas import with one column per
  assignment) from every assignment's ``grades.json``.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Dict, Iterator, List, Optional

GRADES = "grades"
EXTENSIONS = "extensions.csv"
EXTENSION_COLUMNS = ["assignment", "student", "extra_days", "due", "note"]
_NAME = re.compile(r"^[A-Za-z0-9_.@+-]{1,100}$")


def grades_dir(root, assignment: str) -> Path:
    """``<root>/grades/<assignment>``: the one place for this assignment's grades.

    >>> grades_dir("/course", "ch02").as_posix()
    '/course/grades/ch02'
    """
    if not _NAME.match(assignment or "") or assignment in (".", ".."):
        raise ValueError(f"assignment must be letters, digits or _.@+- , got {assignment!r}")
    return Path(root) / GRADES / assignment


def runtime_dir(root) -> Path:
    """``<root>/grades``, made if need be, with a ``.gitignore`` that keeps its student data out of git
    even in a course repository whose own ``.gitignore`` does not list it."""
    folder = Path(root) / GRADES
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# student data (grades, feedback, reports): never committed\n*\n")
    return folder


def find_grades_json(root, assignment: str) -> Optional[Path]:
    """The ``grades.json`` of ``assignment``: ``grades/<assignment>/``, else one an older version
    wrote to the course root (if it holds that assignment's class: the grades an older ``single``
    left there are one notebook's, never the class's); ``None`` if neither."""
    own = grades_dir(root, assignment) / "grades.json"
    if own.is_file():
        return own
    legacy = Path(root) / "grades.json"
    if legacy.is_file():
        try:
            data = json.loads(legacy.read_text())
            if data.get("assignment") == assignment and data.get("shard") != "single":
                return legacy
        except (ValueError, OSError):
            pass
    return None


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """One writer at a time for a grades folder (the formgrader may autograde two students at once)."""
    if folder.parent.name == GRADES:  # grades/<assignment>/: the runtime folder is git-ignored
        runtime_dir(folder.parent.parent)
    elif folder.name == GRADES:
        runtime_dir(folder.parent)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def record_rows(root, assignment: str, rows: List[dict], meta: dict) -> Path:
    """Put ``rows`` into the assignment's ``grades.json``/``grades.csv``/``canvas.csv``, keeping every
    other student's row (the formgrader and grading on submit grade one student at a time)."""
    from . import grades as report

    folder = grades_dir(root, assignment)
    with locked(folder):
        path = folder / "grades.json"
        previous = json.loads(path.read_text()) if path.is_file() else {}
        kept = {r["student"]: r for r in previous.get("students", [])}
        kept.update({r["student"]: r for r in rows})
        merged_meta = {**{k: v for k, v in previous.items() if k != "students"}, **meta}
        report.write(list(kept.values()), folder, merged_meta)
        from .lms import write_canvas

        write_canvas(list(kept.values()), folder / "canvas.csv", assignment)
    return path


# ---------------------------------------------------------------------------- extensions
@dataclass(frozen=True)
class Extension:
    """A student's own due date for one assignment: ``due`` (absolute) or ``extra_days`` past the
    assignment's due date."""

    student: str
    extra_days: float = 0.0
    due: Optional[datetime] = None
    note: str = ""

    def due_for(self, assignment_due: Optional[datetime]) -> Optional[datetime]:
        """The student's due date (``None``: no due date at all)."""
        if self.due is not None:
            return self.due
        if assignment_due is None:
            return None
        return assignment_due + timedelta(days=self.extra_days)

    def describe(self, assignment_due: Optional[datetime]) -> str:
        due = self.due_for(assignment_due)
        extra = f"{self.extra_days:g} extra day(s)" if self.due is None else "a new due date"
        when = (f"due {due.strftime('%Y-%m-%d %H:%M UTC')}" if due
                else "past the assignment's due date, which is not set yet")
        return f"extension ({extra}): {when}" + (f" ({self.note})" if self.note else "")


def extensions_path(root) -> Path:
    return Path(root) / GRADES / EXTENSIONS


def read_extensions(root, assignment: str) -> Dict[str, Extension]:
    """``{student: Extension}`` of ``assignment`` from ``grades/extensions.csv`` (empty if none)."""
    from .late import parse_time

    path = extensions_path(root)
    if not path.is_file():
        return {}
    out = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for number, row in enumerate(csv.DictReader(fh), start=2):
            if (row.get("assignment") or "").strip() != assignment:
                continue
            student = (row.get("student") or "").strip()
            days, due = (row.get("extra_days") or "").strip(), (row.get("due") or "").strip()
            try:
                ext = Extension(student, float(days) if days else 0.0, parse_time(due) if due else None,
                                (row.get("note") or "").strip())
            except ValueError as exc:
                raise ValueError(f"{path} line {number}: {exc}") from None
            if not student or (ext.due is None and ext.extra_days <= 0):
                raise ValueError(f"{path} line {number}: needs a student and extra_days > 0 or a due date")
            out[student] = ext
    return out


def set_extension(root, assignment: str, student: str, *, extra_days: Optional[float] = None,
                  due: Optional[str] = None, note: str = "", remove: bool = False) -> Path:
    """Add, replace or (``remove``) remove one student's extension in ``grades/extensions.csv``."""
    from .late import parse_time

    grades_dir(root, assignment)  # checks the name
    if not _NAME.match(student or ""):
        raise ValueError(f"student must be letters, digits or _.@+- , got {student!r}")
    if not remove:
        if (extra_days is None) == (due is None):
            raise ValueError("give exactly one of --days and --due")
        if extra_days is not None and not 0 < extra_days <= 365:
            raise ValueError(f"days must be in (0, 365], got {extra_days!r}")
        if due is not None:
            due = parse_time(due).strftime("%Y-%m-%d %H:%M:%S UTC")
    path = extensions_path(root)
    with locked(path.parent):
        rows = []
        if path.is_file():
            with open(path, newline="", encoding="utf-8") as fh:
                rows = [r for r in csv.DictReader(fh)
                        if (r.get("assignment"), r.get("student")) != (assignment, student)]
        if not remove:
            rows.append({"assignment": assignment, "student": student,
                         "extra_days": "" if extra_days is None else f"{extra_days:g}", "due": due or "",
                         "note": note})
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=EXTENSION_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(sorted(rows, key=lambda r: (r["assignment"], r["student"])))
    return path


# ---------------------------------------------------------------------------- the term
def all_graded(root) -> List[str]:
    """Every assignment with a ``grades/<assignment>/grades.json``, by name."""
    folder = Path(root) / GRADES
    return sorted(p.parent.name for p in folder.glob("*/grades.json")) if folder.is_dir() else []


def term_table(root, assignments: List[str]) -> dict:
    """``{"assignments": [{name, possible}], "students": {student: {assignment: final score}}}``
    from each assignment's ``grades.json`` (late policy and extensions applied)."""
    from .lms import final_score

    columns, students = [], {}
    for name in assignments:
        path = find_grades_json(root, name)
        if path is None:
            raise ValueError(f"no grades of {name!r} in {grades_dir(root, name)}: run "
                             f"`course-autograde class {name}` first")
        data = json.loads(path.read_text())
        rows = data.get("students", [])
        possible = max((r["max_score"] for r in rows), default=0.0)
        columns.append({"assignment": name, "possible": possible})
        for row in rows:
            students.setdefault(row["student"], {})[name] = final_score(row)
    return {"assignments": columns, "students": students}


def _fmt(value) -> str:
    return "" if value is None else f"{value:g}"


def write_term(root, assignments: List[str], out_dir, canvas_columns: Dict[str, str],
               roster_path=None) -> Dict[str, Path]:
    """``term.csv`` and ``term-canvas.csv`` in ``out_dir``; a student without grades of an
    assignment gets an empty cell (nothing to import), never a made-up 0."""
    from .lms import IDENTITY, read_roster

    table = term_table(root, assignments)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = [c["assignment"] for c in table["assignments"]]
    total_possible = sum(c["possible"] for c in table["assignments"])
    with open(out / "term.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", *names, "total", "possible"])
        writer.writerow(["(points possible)", *[_fmt(c["possible"]) for c in table["assignments"]],
                         _fmt(total_possible), _fmt(total_possible)])
        for student in sorted(table["students"]):
            scores = table["students"][student]
            writer.writerow([student, *[_fmt(scores.get(n)) for n in names],
                             _fmt(round(sum(scores.values()), 6)), _fmt(total_possible)])
    roster = read_roster(roster_path) if roster_path else {}
    with open(out / "term-canvas.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(IDENTITY + [canvas_columns.get(n, n) for n in names])
        writer.writerow(["Points Possible", "", "", "", ""] + [_fmt(c["possible"]) for c in table["assignments"]])
        for student in sorted(table["students"]):
            person = roster.get(student, {})
            scores = table["students"][student]
            writer.writerow([person.get("Student", student), person.get("ID", ""), person.get("SIS User ID", ""),
                             student, person.get("Section", "")] + [_fmt(scores.get(n)) for n in names])
    return {"term": out / "term.csv", "canvas": out / "term-canvas.csv"}


# ---------------------------------------------------------------------------- feedback
_LATE_START, _LATE_END = "<!-- course-late -->", "<!-- /course-late -->"


def late_html(late: dict) -> str:
    """What the late policy did for one student, as a short HTML block (their due date, extension,
    submission time, deduction)."""
    import html

    if not late.get("due") and not late.get("extension"):
        return ""  # no due date: nothing to say about lateness
    lines = []
    if late.get("extension"):
        lines.append(f"You have an {late['extension']}.")
    elif late.get("due"):
        lines.append(f"Due: {late['due'].replace('T', ' ').replace('+00:00', ' UTC')}.")
    if late.get("submitted"):
        lines.append(f"Submitted: {late['submitted'].replace('T', ' ').replace('+00:00', ' UTC')}.")
    if late.get("days_charged"):
        lines.append(f"Late by {late['days_charged']} started day(s): {late['points_deducted']:g} points "
                     f"({late['fraction']:.0%}) taken; final score {late['final_score']:g}.")
    elif late.get("due") and late.get("submitted"):
        lines.append("On time: no late penalty.")
    if not lines:
        return ""
    return (f"{_LATE_START}<div class='course-late' role='note'><strong>Late policy.</strong> "
            + " ".join(html.escape(line) for line in lines) + f"</div>{_LATE_END}")


def add_late_notes(root, assignment: str, rows: List[dict], feedback_root=None) -> int:
    """Put each student's late-policy block at the top of their feedback page(s) (replacing an older
    one): in the course root's feedback folder (``c.CourseDirectory.feedback_directory`` of its
    ``nbgrader_config.py``), or under ``feedback_root/<student>/<assignment>/`` for feedback graded
    outside the course (``course-autograde class --out``); returns pages changed."""
    from ..grading.course_settings import CourseSettings

    course = CourseSettings(root) if feedback_root is None else None
    changed = 0
    for row in rows:
        block = late_html(row.get("late") or {})
        folder = (course.folder("feedback", row["student"], assignment) if course is not None
                  else Path(feedback_root) / row["student"] / assignment)
        for page in sorted(folder.glob("*.html")) if folder.is_dir() else []:
            text = page.read_text(encoding="utf-8")
            start, end = text.find(_LATE_START), text.find(_LATE_END)
            if start != -1 and end != -1:
                text = text[:start] + text[end + len(_LATE_END):]
            if block:
                body = re.search(r"<body[^>]*>", text)
                at = body.end() if body else 0
                text = text[:at] + block + text[at:]
            page.write_text(text, encoding="utf-8")
            changed += 1
    return changed
