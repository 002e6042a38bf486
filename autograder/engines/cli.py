"""Command line: ``course-autograde {class,single,refresh,policy,extend,term,merge,canvas,report,gradescope,ci-template}`` (also ``python -m autograder``).

Each assignment's grades live in ``<course root>/grades/<assignment>/`` (``grades.json``,
``grades.csv``, ``canvas.csv``) unless ``--out`` names another folder; ``term`` joins them.

Exit status: 0 when grading ran (whatever the scores), 2 when the grader could
not run (bad arguments, no gradebook, unknown assignment, no sandbox and no
``--allow-unsandboxed``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Optional, Tuple

from ..grading.course_settings import CourseSettings
from ..records import lms, policy, grades as report, term
from .options import limit_options, limits, temporary_course
from ..grading.submissions import Submission, discover, in_shard, parse_shard


def _course_root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--course-root", default=".",
                   help="nbgrader course root (its nbgrader_config.py says where the gradebook and folders are)")


def _common(p: argparse.ArgumentParser) -> None:
    _course_root(p)
    p.add_argument("--out", default=None,
                   help="folder for grades.json, grades.csv and canvas.csv (default: <course-root>/grades/<assignment>)")
    limit_options(p)
    p.add_argument("--no-feedback", action="store_true", help="skip feedback HTML")
    p.add_argument("--allow-unsandboxed", action="store_true",
                   help="grade with rlimits only where bubblewrap cannot isolate the student's code (UNSAFE: "
                        "it runs in this account); by default nothing is graded then (autograder/isolation/unsandboxed.py)")
    p.add_argument("--require-sandbox", action="store_true",
                   help="retired, changes nothing (refusing without bubblewrap is the default); accepted "
                        "for older CI files")


def _record(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--record", action="store_true",
                   help=f"write the grades into the course's gradebook, autograded/ and feedback/ ({default})")
    p.add_argument("--replace", action="store_true",
                   help="with --record: replace a student's grades that another run recorded")
    p.add_argument("--reset-hand-grades", action="store_true",
                   help="clear the scores and comments a person gave (default: a hand grade is kept when "
                        "its submission is graded again)")


@contextlib.contextmanager
def _grading_root(root: Path, assignment: str, record: bool) -> Iterator[Tuple[Path, Optional[Path]]]:
    """``(course root to grade in, scratch course or None)``: the course itself when recording,
    else a throw-away copy (its gradebook copied, or made from the source folder), removed on exit.
    The copy is configured as the course (:meth:`CourseSettings.scratch`: folder names, nbgrader's
    steps) with a gradebook of its own."""
    course = CourseSettings(root)
    if record:
        if not course.has_assignment(assignment):
            raise ValueError(f"--record needs the course's gradebook ({course.db_url}) with {assignment!r}: "
                             f"run `nbgrader generate_assignment {assignment}` in {root} first")
        yield root, None
        return
    if course.gradebook_file is None or not course.has_assignment(assignment):  # no SQLite file to copy
        with temporary_course(root, assignment) as scratch:
            yield scratch, scratch
        return
    import sqlite3

    with tempfile.TemporaryDirectory(prefix="autograder-course-") as tmp:
        scratch = course.scratch(tmp)
        source = course.folder("source", ".", assignment)
        if source.is_dir():  # the instructor's data files travel into the sandbox as under nbgrader
            shutil.copytree(source, scratch.folder("source", ".", assignment))
        with contextlib.closing(sqlite3.connect(course.gradebook_file)) as live, \
                contextlib.closing(sqlite3.connect(scratch.gradebook_file)) as copy:
            live.backup(copy)  # consistent even while another grader writes
        yield scratch.root, scratch.root


def nbgrader_timestamp(seconds: float) -> str:
    """``seconds`` since the epoch in nbgrader's ``timestamp.txt`` format (UTC)."""
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _prepare_record(root: Path, assignment: str, subs, *, replace: bool, from_collected: bool) -> None:
    """Make ``subs`` complete for nbgrader (a submission time for each) and refuse to overwrite a
    student whose grades another run recorded, unless ``replace``.

    Submissions collected by nbgrader (``submitted/``) are the gradebook's own: regrading them is
    the normal cycle. Anything else (a folder, one notebook) that names a student who already has
    a submission in the gradebook would replace that student's grades; that needs ``--replace``.
    """
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(CourseSettings(root).db_url) as gb:
        for sub in subs:
            if not from_collected and not replace:
                try:
                    existing = gb.find_submission(assignment, sub.student)
                except MissingEntry:
                    existing = None
                if existing is not None:
                    raise ValueError(f"{sub.student} already has grades for {assignment} in the gradebook "
                                     f"(submitted {existing.timestamp or 'at an unknown time'}); grading "
                                     f"{sub.notebook or sub.folder} would replace them: give --replace to "
                                     "do that, or another --student")
            if sub.timestamp is None and sub.notebook is not None:
                sub.timestamp = nbgrader_timestamp(sub.notebook.stat().st_mtime)


def _copy_feedback(scratch: Path, assignment: str, dest: Path) -> None:
    """Feedback HTML graded in a scratch course, to ``dest/<student>/<assignment>/``."""
    for html in sorted(CourseSettings(scratch).step_root("feedback").glob(f"*/{assignment}/*.html")):
        target = dest / html.parent.parent.name / assignment
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(html, target / html.name)


def single_student(notebook: Path, assignment: str, given: str = None, steps=("submitted", "autograded")):
    """``(student id, where it came from)`` for ``single``: ``--student``, else the nbgrader folder
    ``.../<student>/<assignment>/`` the notebook sits in (under one of the course's ``steps`` folders,
    as its ``nbgrader_config.py`` names them), else the file name ``<student>.ipynb``, else
    ``COURSE_STUDENT``; ``(None, why not)`` if none names one.

    >>> single_student(Path("/c/submitted/ada/ch02/ch02.ipynb"), "ch02")
    ('ada', 'the folder submitted/ada/ch02')
    >>> single_student(Path("/downloads/bob.ipynb"), "ch02")
    ('bob', 'the file name bob.ipynb')
    """
    from ..grading.submissions import STUDENT_ID

    if given is not None:
        if not STUDENT_ID.match(given):
            raise ValueError(f"--student must be letters, digits or _.@+- (at most 100), got {given!r}")
        return given, "--student"
    if notebook.parent.name == assignment and STUDENT_ID.match(notebook.parent.parent.name) \
            and notebook.parent.parent.parent.name in steps:
        return notebook.parent.parent.name, (f"the folder {notebook.parent.parent.parent.name}/"
                                             f"{notebook.parent.parent.name}/{assignment}")
    if notebook.stem != assignment and STUDENT_ID.match(notebook.stem):
        return notebook.stem, f"the file name {notebook.name}"
    env = os.environ.get("COURSE_STUDENT", "").strip()
    if env and STUDENT_ID.match(env):
        return env, "COURSE_STUDENT"
    return None, (f"{notebook.name} names no student: give --student ID (the numbers of a student's "
                  "variant depend on who they are), name the file <student>.ipynb, or set COURSE_STUDENT")


def _policy_flags(p: argparse.ArgumentParser) -> None:
    """The assignment's grade policy (:mod:`autograder.records.policy`): a flag given changes the stored
    policy for every route that grades, and the output says so; none given, the stored one applies."""
    kept = " (kept in grades/<assignment>/policy.json for every route; default: as stored)"
    p.add_argument("--due", default=None,
                   help="set the due date, e.g. '2026-11-30 23:59 UTC'" + kept + ", else the gradebook's")
    p.add_argument("--late-per-day", type=float, default=None,
                   help="set the fraction of the score lost per started day late" + kept + ", else 0")
    p.add_argument("--late-grace-minutes", type=float, default=None,
                   help="set how late still counts as on time" + kept + ", else 0")
    p.add_argument("--late-cap", type=float, default=None,
                   help="set the largest fraction the late policy takes" + kept + ", else 1")


def _late_and_lms(p: argparse.ArgumentParser) -> None:
    _policy_flags(p)
    p.add_argument("--canvas-csv", default=None, help="also write a Canvas gradebook-import CSV here")
    p.add_argument("--canvas-assignment", default=None, help="its column header 'Name (Canvas id)'")
    p.add_argument("--canvas-roster", default=None, help="the course's Canvas gradebook export (IDs, sections)")


def _out(args, root: Path, assignment: str) -> Path:
    """``--out``, else the assignment's own folder ``<course-root>/grades/<assignment>``."""
    return Path(args.out) if args.out else term.grades_dir(root, assignment)


def _previous(out_dir, assignment: str, root: Optional[Path] = None) -> dict:
    """The grades.json already in ``out_dir`` for ``assignment`` (empty if none): what a regrade keeps.
    With ``root`` (no ``--out`` given), one an older version left in the course root counts too."""
    path = Path(out_dir) / "grades.json"
    if not path.is_file() and root is not None:
        path = term.find_grades_json(root, assignment) or path
    if not path.is_file():
        return {}
    import json

    data = json.loads(path.read_text())
    if data.get("assignment") != assignment:
        raise ValueError(f"{path} holds grades of {data.get('assignment')!r}, not {assignment!r}: "
                         f"give --out another folder")
    return data


def _class(args, root: Path) -> int:
    shard, shards = parse_shard(args.shard)
    course = CourseSettings(root)
    folder = Path(args.submissions) if args.submissions else course.step_root("submitted")
    # the course's own submitted folder is what nbgrader collected: its grades belong in the gradebook;
    # any other folder is recorded only when asked (--record), never by surprise
    from_collected = course.is_step_folder(folder, "submitted")
    out = _out(args, root, args.assignment)
    if not args.out and not args.record and not from_collected:
        # a folder graded without the gradebook never replaces the class's grades of the assignment
        out = out / f"unrecorded-{folder.resolve().name}"
    previous = _previous(out, args.assignment, None if args.out else root) if args.student else {}
    if args.student and args.seed is None and previous.get("seed") is not None:
        args.seed = previous["seed"]  # the same probe inputs as the rest of the class
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2**31)
    current = policy.change_from_args(args, root, args.assignment)
    # zipped submissions are unpacked into a folder that lives as long as their grading
    with tempfile.TemporaryDirectory(prefix="autograder-unzip-") as unzip:
        subs = [s for s in discover(folder, args.assignment, Path(unzip)) if in_shard(s.student, shard, shards)]
        if args.student:
            unknown = sorted(set(args.student) - {s.student for s in subs})
            if unknown:
                raise ValueError(f"student {unknown[0]!r} has no submission of {args.assignment} in {folder}")
            subs = [s for s in subs if s.student in set(args.student)]
        record = args.record or from_collected
        submitted_at = {s.student: s.timestamp for s in subs}  # the late policy counts real timestamps only
        with _grading_root(root, args.assignment, record) as (grading_root, scratch):
            if record:
                _prepare_record(grading_root, args.assignment, subs, replace=args.replace,
                                from_collected=from_collected)
            grader = _make_grader(args, grading_root, args.assignment, args.workers)
            started = time.monotonic()
            results = grader.grade_all(subs, progress=not args.no_progress)
            if scratch is not None and not args.no_feedback:
                _copy_feedback(scratch, args.assignment, out / "feedback")
        if not record:
            print(f"graded {folder} without touching the course's gradebook (--record to enter these "
                  f"students there); feedback in {out / 'feedback'}")
        results = policy.apply(root, args.assignment, results, submitted_at, current)
        if not args.no_feedback:
            term.add_late_notes(root, args.assignment, results, feedback_root=None if record else out / "feedback")
        failed = sum(r["status"] != "graded" for r in results)
        extra = {"shard": f"{shard}/{shards}", "late_policy": current.record()}
        if args.student:
            kept = {r["student"]: r for r in previous.get("students", [])}
            kept.update({r["student"]: r for r in results})
            results, extra = list(kept.values()), {"shard": previous.get("shard", extra["shard"]),
                                                   "regraded": sorted(args.student),
                                                   "late_policy": extra["late_policy"]}
        with term.locked(out):
            policy.warn_changes(policy.changed_exports(root, args.assignment, out, results, args.canvas_csv))
            report.write(results, out, _meta(grader, args, extra))
            _write_canvas(args, results, out)
        log = report.write_log(results, out / "grading.log", grader.isolation, grader.seed)
        for row in results:  # one line each; the parts' details are in the log file
            print(report.summary_line(row, grader.isolation, grader.seed))
        print(f"details of each part: {log}")
        print(f"graded {len(subs)} submissions of {args.assignment} in "
              f"{time.monotonic() - started:.1f} s ({grader.workers} workers, {grader.isolation}); "
              f"{failed} with a problem; wrote {out / 'grades.csv'} and {out / 'canvas.csv'}")
        return 0


def _write_canvas(args, results, out: Path) -> None:
    """``canvas.csv`` beside grades.json, and at ``--canvas-csv`` too when given."""
    column = args.canvas_assignment or args.assignment
    lms.write_canvas(results, out / "canvas.csv", column, args.canvas_roster)
    if args.canvas_csv:
        lms.write_canvas(results, args.canvas_csv, column, args.canvas_roster)


def _refresh(args, root: Path) -> int:
    """Grades from the gradebook after hand grading: nothing is graded again, so nothing is marked
    as needing grading again; feedback is made by nbgrader with the course's preprocessors."""
    from ..grading import handgrading

    course = CourseSettings(root)
    if not course.has_assignment(args.assignment):
        raise ValueError(f"course_root {str(root)!r} has no gradebook ({course.db_url}) with {args.assignment!r}")
    out = _out(args, root, args.assignment)
    previous = _previous(out, args.assignment, None if args.out else root)
    db_url = course.db_url
    settled = handgrading.settle_hand_grades(db_url, args.assignment)
    if settled:
        print(f"{settled} part(s) graded by hand were still flagged as needing grading (an earlier regrade "
              "by plain nbgrader): their hand scores stand")
    scores = handgrading.gradebook_scores(db_url, args.assignment)
    if args.out and not previous:
        raise ValueError(f"{out / 'grades.json'} does not exist: run `course-autograde class "
                         f"{args.assignment}` first (or give --out the folder it wrote to)")
    # graded in the formgrader only, or a student no run of `class` saw: rows from the gradebook
    known = {r["student"] for r in previous.get("students", [])}
    extra_rows = handgrading.rows_from_gradebook(root, args.assignment, scores, skip=known)
    if not previous:
        previous = {"assignment": args.assignment, "seed": None, "isolation": None, "shard": "gradebook"}
    rows = handgrading.refreshed_rows(previous.get("students", []) + extra_rows, scores)
    current = policy.change_from_args(args, root, args.assignment)
    stamps = {s: info["timestamp"] for s, info in scores.items()}
    results = policy.apply(root, args.assignment, rows, stamps, current)
    meta = {k: v for k, v in previous.items() if k != "students"}
    with term.locked(out):
        policy.warn_changes(policy.changed_exports(root, args.assignment, out, results, args.canvas_csv))
        report.write(results, out, {**meta, "refreshed_from_gradebook": True, "late_policy": current.record()})
        _write_canvas(args, results, out)
    waiting = sum(p["status"] == "manual" for r in results for p in r["parts"])
    if not args.no_feedback:
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", args.assignment, "--force",
                               "--log-level=ERROR"], cwd=root, capture_output=True, text=True,
                              env=dict(os.environ, PATH=path), timeout=3600)
        if done.returncode != 0:
            raise ValueError(f"nbgrader generate_feedback failed: {done.stderr[-800:]}")
        term.add_late_notes(root, args.assignment, results)
    print(f"refreshed {len(results)} students of {args.assignment} from the gradebook; {waiting} parts still "
          f"wait for grading by hand; wrote {out / 'grades.csv'}, {out / 'canvas.csv'}"
          + (f" and {args.canvas_csv}" if args.canvas_csv else "")
          + ("" if args.no_feedback else "; feedback/ remade (nbgrader release_feedback sends it)"))
    return 0


def _class_parser(sub) -> None:
    p = sub.add_parser("class", help="grade every submission of an assignment")
    p.add_argument("assignment")
    p.add_argument("submissions", nargs="?", default=None,
                   help="<student>/<assignment>/ folders or a folder of <student>.ipynb/.zip "
                        "(default: the course's submitted folder, c.CourseDirectory.submitted_directory)")
    p.add_argument("--workers", type=int, default=None, help="parallel sandboxes (default: cores)")
    p.add_argument("--shard", default="1/1", help="grade only shard K of N (K/N)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--student", action="append", default=None, metavar="ID",
                   help="regrade only this student (repeatable); other rows of --out's grades.json stay as they are")
    _late_and_lms(p)
    _common(p)
    _record(p, "a folder other than the course's submitted folder is graded without touching the gradebook; "
               "--record enters its students there")


def _single_parser(sub) -> None:
    p = sub.add_parser("single", help="grade one notebook (CI in a student's repository)")
    p.add_argument("notebook")
    p.add_argument("--assignment", default=None, help="default: the notebook's file name")
    p.add_argument("--student", default=None,
                   help="whose notebook it is (their variant's numbers); default: the nbgrader folder "
                        "<student>/<assignment>/ it sits in, else the file name <student>.ipynb, else "
                        "COURSE_STUDENT")
    _common(p)
    _record(p, "graded without touching the course's gradebook unless --record")


def _refresh_and_policy_parsers(sub) -> None:
    p = sub.add_parser("refresh", help="after grading by hand in the formgrader: grades.json/csv, late "
                                       "policy, Canvas CSV and feedback from the gradebook, nothing regraded")
    p.add_argument("assignment")
    _course_root(p)
    p.add_argument("--out", default=None,
                   help="the folder of the class run's grades.json (default: <course-root>/grades/<assignment>; "
                        "made from the gradebook if no class run wrote one, e.g. after the formgrader's Autograde)")
    p.add_argument("--no-feedback", action="store_true", help="leave the feedback folder as it is")
    _late_and_lms(p)
    p = sub.add_parser("policy", help="show or change an assignment's grade policy (due date, late rule); "
                                      "every route that grades applies it")
    p.add_argument("assignment")
    _course_root(p)
    _policy_flags(p)
    p.add_argument("--no-due", action="store_true", help="remove the due date the policy sets (the "
                                                         "gradebook's, if any, applies again)")
    p = sub.add_parser("extend", help="give a student an extension (their own due date) for an assignment, "
                                      "kept in <course-root>/grades/extensions.csv; without a student, list them")
    p.add_argument("assignment")
    p.add_argument("student", nargs="?", default=None)
    p.add_argument("--days", type=float, default=None, help="extra days past the assignment's due date")
    p.add_argument("--due", default=None, help="the student's own due date, e.g. '2026-12-04 23:59 UTC'")
    p.add_argument("--note", default="", help="why (shown to the student in feedback)")
    p.add_argument("--remove", action="store_true", help="take the extension back")
    _course_root(p)


def _export_parsers(sub) -> None:
    p = sub.add_parser("canvas", help="a Canvas gradebook-import CSV from a grades.json")
    p.add_argument("grades", help="an assignment's name (its grades/<assignment>/grades.json), or a grades.json "
                                  "or a folder holding one")
    _course_root(p)
    p.add_argument("--out", default=None, help="default: canvas.csv beside the grades.json")
    p.add_argument("--canvas-assignment", default=None, help="column header 'Name (Canvas id)' (default: the assignment)")
    p.add_argument("--canvas-roster", default=None, help="the course's Canvas gradebook export (IDs, sections)")
    p = sub.add_parser("merge", help="merge shards' grades.json into one grades.json/grades.csv")
    p.add_argument("shards", nargs="+", help="grades.json files or folders holding one")
    _course_root(p)
    p.add_argument("--out", default=None, help="default: <course-root>/grades/<assignment>")
    p = sub.add_parser("term", help="the term's gradebook: term.csv and term-canvas.csv (one column per "
                                    "assignment) from every assignment's grades")
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT",
                   help="in this order (default: every grades/<assignment>/ in the course root, by name)")
    _course_root(p)
    p.add_argument("--out", default=None, help="default: <course-root>/grades")
    p.add_argument("--canvas-column", action="append", default=[], metavar="ASSIGNMENT=HEADER",
                   help="Canvas column for an assignment, e.g. 'lab05=Lab 5 (777)' (repeatable)")
    p.add_argument("--canvas-roster", default=None, help="the course's Canvas gradebook export (IDs, sections)")


def _report_parser(sub) -> None:
    p = sub.add_parser("report", help="the class report (report.html, report.json) of graded assignments")
    p.add_argument("assignments", nargs="+", metavar="ASSIGNMENT", help="one or more graded assignments (a term view)")
    _course_root(p)
    p.add_argument("--grades", action="append", default=None, metavar="PATH",
                   help="grades.json or a folder holding one (repeatable; default: the course root and its subfolders)")
    p.add_argument("--submissions", default=None,
                   help="where the predictions.json come from (default: the course's submitted folder)")
    p.add_argument("--ledgers", default=None, help="folder of ledger exports students shared (<student>.json)")
    p.add_argument("--out", default=None, help="folder for report.html and report.json (default: "
                                                "<course-root>/grades/report, with the course's other runtime data)")
    p.add_argument("--anonymise", action="store_true", help="research export: student ids become salted hashes")
    p.add_argument("--salt", default=None, help="secret salt for --anonymise (at least 16 characters)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course-autograde", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for add in (_class_parser, _single_parser, _refresh_and_policy_parsers, _export_parsers, _report_parser):
        add(sub)
    from . import ci_template, gradescope, on_submit

    on_submit.add_parser(sub)
    gradescope.add_parser(sub, limit_options)
    ci_template.add_parser(sub)
    return parser


def _make_grader(args, root: Path, assignment: str, workers=None):
    from ..grading.grader import Grader

    if args.require_sandbox and args.allow_unsandboxed:
        raise ValueError("--require-sandbox and --allow-unsandboxed contradict each other")
    return Grader(root, assignment, workers=workers, limits=limits(args), seed=args.seed,
                  feedback=not args.no_feedback, reset_hand_grades=getattr(args, "reset_hand_grades", False),
                  allow_unsandboxed=args.allow_unsandboxed or None)


def _meta(grader, args, extra) -> dict:
    return {"assignment": grader.assignment_name, "seed": grader.seed, "isolation": grader.isolation,
            "limits": vars(grader.limits), **extra}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if hasattr(args, "run"):  # gradescope, ci-template: their modules run them
            return args.run(args)
        if args.mode == "merge":
            out = args.out or term.grades_dir(Path(args.course_root), report.shards_assignment(args.shards))
            merged = report.merge(args.shards, out)
            print(f"merged {len(merged['students'])} students into {Path(out) / 'grades.csv'}")
            return 0
        if args.mode == "report":
            return _report(args)
        if args.mode == "canvas":
            return _canvas(args)
        if args.mode == "extend":
            return _extend(args)
        if args.mode == "policy":
            return _policy(args)
        if args.mode == "term":
            return _term(args)
        root = Path(args.course_root).resolve()
        if args.mode == "class":
            return _class(args, root)
        if args.mode == "refresh":
            return _refresh(args, root)
        if args.seed is None:
            args.seed = random.SystemRandom().randrange(2**31)
        # single
        notebook = Path(args.notebook).resolve()
        assignment = args.assignment or notebook.stem
        course = CourseSettings(root)
        steps = (course.step_root("submitted").name, course.step_root("autograded").name)
        student, source = single_student(notebook, assignment, args.student, steps)
        if student is None:
            raise ValueError(source)
        print(f"grading {notebook.name} as student {student} (from {source}); "
              + ("recording it in the course's gradebook" if args.record
                 else "the course's gradebook is not touched (--record to enter it)"))
        args.student = student
        if args.out is None:  # recorded: the assignment's own grades; else a folder of its own, never
            # where a class's grades are read (the course root, the assignment's grades/<assignment>/)
            args.out = str(term.grades_dir(root, assignment) if args.record
                           else term.runtime_dir(root) / "single" / assignment / student)
            print(f"writing grades.json and feedback.html to {args.out}")
        with _grading_root(root, assignment, args.record) as (grading_root, _scratch):
            return _single(args, grading_root, assignment, notebook)
    except ValueError as exc:
        print(f"course-autograde: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        from ..compat import CompatError  # the installed libraries are not the checked ones: say which, no traceback

        if not isinstance(exc, CompatError):
            raise
        print(f"course-autograde: {exc}", file=sys.stderr)
        return 3


def _canvas(args) -> int:
    import json

    source = Path(args.grades)
    if not source.exists():  # an assignment's name
        source = term.find_grades_json(Path(args.course_root), args.grades)
        if source is None:
            raise ValueError(f"{args.grades!r} is neither a grades.json nor an assignment with grades in "
                             f"{term.grades_dir(Path(args.course_root), args.grades)}")
    file = source / "grades.json" if source.is_dir() else source
    data = json.loads(file.read_text())
    out = args.out or file.parent / "canvas.csv"
    path = lms.write_canvas(data["students"], out, args.canvas_assignment or data["assignment"], args.canvas_roster)
    print(f"wrote {len(data['students'])} students to {path}")
    return 0


def _extend(args) -> int:
    root = Path(args.course_root)
    if args.student is None:
        granted = term.read_extensions(root, args.assignment)
        due = policy.load(root.resolve(), args.assignment).due
        for student, ext in sorted(granted.items()):
            print(f"{student}: {ext.describe(due)}")
        print(f"{len(granted)} extension(s) of {args.assignment} in {term.extensions_path(root)}")
        return 0
    path = term.set_extension(root, args.assignment, args.student, extra_days=args.days, due=args.due,
                              note=args.note, remove=args.remove)
    if args.remove:
        print(f"removed {args.student}'s extension of {args.assignment} from {path}")
    else:
        ext = term.read_extensions(root, args.assignment)[args.student]
        due = policy.load(root.resolve(), args.assignment).due
        print(f"{args.student}, {args.assignment}: {ext.describe(due)}; written to {path}. `course-autograde "
              f"refresh {args.assignment}` applies it to grades, Canvas CSV and feedback")
    return 0


def _policy(args) -> int:
    root = Path(args.course_root).resolve()
    term.grades_dir(root, args.assignment)  # checks the name
    current = policy.change_from_args(args, root, args.assignment)
    granted = term.read_extensions(root, args.assignment)
    print(f"{args.assignment}: {current.describe()}; {len(granted)} extension(s) "
          f"(`course-autograde extend {args.assignment}` lists them)")
    if any(getattr(args, name) is not None for name in ("due", "late_per_day", "late_grace_minutes", "late_cap")) \
            or args.no_due:
        print(f"`course-autograde refresh {args.assignment}` applies it to grades, canvas.csv and feedback "
              "without grading again")
    return 0


def _term(args) -> int:
    root = Path(args.course_root)
    names = args.assignments or term.all_graded(root)
    if not names:
        raise ValueError(f"no assignment has grades in {root / term.GRADES}: run `course-autograde class` first")
    columns = {}
    for item in args.canvas_column:
        name, sep, header = item.partition("=")
        if not sep or not header.strip():
            raise ValueError(f"--canvas-column must be ASSIGNMENT=HEADER, got {item!r}")
        columns[name.strip()] = header.strip()
    paths = term.write_term(root, names, args.out or root / term.GRADES, columns, args.canvas_roster)
    print(f"term of {len(names)} assignment(s) ({', '.join(names)}): wrote {paths['term']} and {paths['canvas']}")
    return 0


def _report(args) -> int:
    from ..reports import make_report
    from ..reports.render import counted

    if args.anonymise != (args.salt is not None):
        raise ValueError("--anonymise and --salt go together")
    out = Path(args.out) if args.out else term.runtime_dir(Path(args.course_root).resolve()) / "report"
    report = make_report(args.assignments, course_root=args.course_root, grades=args.grades,
                         submissions=args.submissions, ledgers=args.ledgers, out_dir=out, salt=args.salt)
    students = sum(r["students_total"] for r in report["assignments"])
    print(f"report of {counted(len(report['assignments']), 'assignment')}, {counted(students, 'student row')}"
          f"{' (anonymised)' if report['anonymised'] else ''}: wrote {out / 'report.html'}")
    return 0


def _single(args, root: Path, assignment: str, notebook: Path) -> int:
    if True:
        grader = _make_grader(args, root, assignment, workers=1)
        sub = Submission(student=args.student, notebook=notebook if notebook.is_file() else None,
                         folder=notebook.parent if notebook.is_file() else None,
                         status="found" if notebook.is_file() else "missing",
                         problem=None if notebook.is_file() else f"{notebook} does not exist")
        if args.record:
            stamp = notebook.parent / "timestamp.txt"
            if notebook.is_file() and stamp.is_file():
                sub.timestamp = stamp.read_text().strip()[:64]
            course = CourseSettings(root)
            collected = course.folder("submitted", args.student, assignment).resolve() == notebook.parent
            _prepare_record(root, assignment, [sub], replace=args.replace, from_collected=collected)
        result = grader.grade_one(sub)
        if args.record and Path(args.out) == term.grades_dir(root, assignment):
            policy.record(root, assignment, [result], {args.student: sub.timestamp},
                          _meta(grader, args, {"shard": "single"}))
        else:
            report.write([result], args.out, _meta(grader, args, {"shard": "single"}))
        feedback = grader.course.folder("feedback", args.student, assignment) / f"{grader.assignment.notebook}.html"
        if feedback.is_file():
            shutil.copy(feedback, Path(args.out) / "feedback.html")
        print(report.summary_table([result]))
        return 0 if result["status"] != "error" else 1
