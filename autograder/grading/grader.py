"""Grading one assignment: nbgrader's steps, with execution sandboxed and judging trusted.

Per submission (:meth:`Grader.grade_one`) the steps ``c.Grader.steps`` lists run in order, each a
configurable class over the submission's :class:`~autograder.grading.steps.Work`
(:mod:`autograder.grading.steps`, configured in ``nbgrader_config.py`` as nbgrader's own steps are); they
use the grader's parts, each in its own module: :mod:`~autograder.grading.gradebook_steps` (nbgrader's
steps on the gradebook, the rows), :mod:`~autograder.grading.execution` (kernel, clean room, ranks),
:mod:`~autograder.grading.judge_step` (the trusted judge) and :mod:`~autograder.grading.feedback_workers`.
What they do, in order:

1. *sanitize* (parent, gradebook lock): nbgrader's ``ClearOutput``,
   ``DeduplicateIds``, ``OverwriteKernelspec``, ``OverwriteCells`` (deleted
   graded cells are put back) and ``CheckCellMetadata``; cells whose nbgrader
   metadata names no known cell lose that metadata first.
2. *execute + harvest* (:mod:`autograder.isolation.kernel`): the notebook runs in its own
   kernel, the only process in the sandbox, driven by nbclient from this
   process; afterwards the same kernel harvests every registered part into
   plain JSON values.
3. *judge* (parent; the student's code never ran here): each registered part's
   ``judge`` scores the harvested JSON. Unregistered graded cells keep
   nbgrader's own result (their test cell's outputs).
4. *record* (parent, gradebook lock): nbgrader's ``LimitOutput``,
   ``SaveAutoGrades`` and ``AssignLatePenalties`` on the executed notebook,
   then the judged parts' scores overwrite the in-kernel ones. Manually graded
   cells stay for the formgrader.
5. *feedback*: :mod:`autograder.grading.feedback`; during :meth:`Grader.grade_all` rendered by
   worker processes (each keeps one nbconvert exporter) while the grading threads go
   on with the next submissions, else in the grading thread.

Only outputs and harvested values come back from the kernel; the cell
sources written to ``autograded/`` are the sanitized ones from step 1.
"""

from __future__ import annotations

import hashlib
import os
import queue
import shutil
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

from traitlets import Any, List as ListTrait
from traitlets.config import Configurable

from .. import compat
from ..isolation import sandbox
from .common import PhaseClock, _fresh
from .common import cells_words  # noqa: F401 -- the grader's helper, as tests and readers know it
from .course_settings import CourseSettings
from .execution import Execution
from .feedback_workers import _FeedbackWorkers, _feedback_html
from .gradebook_steps import GradebookSteps
from .judge_step import Judging
from .steps import DEFAULT_STEPS, FeedbackStep, Work, build_steps
from .submissions import Submission

if TYPE_CHECKING:  # the judge's record; imported where judging happens (the course package loads lazily)
    from course.assess.registry import Verdict


@dataclass
class Assignment:
    """What the gradebook knows about the assignment's (single) notebook."""

    name: str
    notebook: str
    grade_cells: Dict[str, dict]   # grade_id -> {max_score, cell_type, solution}
    known_ids: set                 # every nbgrader cell id in the source notebook


class Grader(Configurable, GradebookSteps, Execution, Judging):
    """Grades submissions of one assignment into a course root (gradebook, autograded/, feedback/).

    Configured by the course's ``nbgrader_config.py``: ``c.Grader.steps`` and each step's own settings
    (:mod:`autograder.grading.steps`)."""

    steps = ListTrait(Any(), default_value=list(DEFAULT_STEPS),
                      help="the steps grading one submission runs, in order: built-in step class names "
                           "(autograder.grading.steps), dotted import paths or GradingStep classes; it ends "
                           "with ResultStep").tag(config=True)

    def __init__(self, course_root, assignment: str, *, workers: Optional[int] = None,
                 limits: sandbox.Limits = sandbox.Limits(), seed: int = 0,
                 feedback: bool = True, isolate: bool = True, log=None, reset_hand_grades: bool = False,
                 allow_unsandboxed: Optional[bool] = None):
        compat.require()  # the library internals grading relies on are the ones checked (autograder/compat.py)
        # the instructor's nbgrader_config.py: folders, gradebook, and nbgrader's steps configured by it
        course = CourseSettings(course_root)
        super().__init__(config=course.config)
        self.course = course
        self.root = self.course.root
        #: the enabled steps, each built with the course's configuration (c.<Step>.<setting>)
        self.pipeline = build_steps(self.steps, parent=self)
        # a part a person graded keeps its score and comment when the submission is graded again
        self.reset_hand_grades = reset_hand_grades
        self.assignment_name = assignment
        self.workers = workers or len(os.sched_getaffinity(0))
        if type(self.workers) is not int or self.workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.limits = limits
        self.seed = int(seed)
        # feedback=False, or c.FeedbackStep.enabled = False (or no FeedbackStep): no feedback page at all
        self.feedback = feedback and any(isinstance(step, FeedbackStep) for step in self.pipeline)
        self._feedback_pool = None  # worker processes that render feedback during grade_all
        self._feedback_dispatch = None  # threads that hand feedback to them, during grade_all
        self._feedback_pending: list = []  # (student, future) of feedback being rendered
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        self.db_url = self.course.db_url
        self.lock = threading.Lock()  # nbgrader's gradebook is SQLite: one writer at a time
        self.use_bwrap = False
        if isolate:
            from ..isolation.unsandboxed import check

            # refuses (ValueError) unless a flag, the course's setting or the environment allows it
            why = check(self.root, allow_unsandboxed)
            if why is None:
                self.use_bwrap = True
            else:
                message = ("WARNING: submissions run WITHOUT namespace isolation (rlimits only): "
                           f"{why}. Student code can read what this user can read.")
                warnings.warn(message)
                self.log("!" * 78 + "\n" + message + "\n" + "!" * 78)
        self.isolation = "bwrap+rlimits" if self.use_bwrap else "rlimits"
        self.assignment = self._load_assignment()
        from course.notebook_api import REGISTRY

        self.registered = {gid for gid in self.assignment.grade_cells if gid in REGISTRY}


    def _load_assignment(self) -> Assignment:
        from nbgrader.api import MissingEntry

        gradebook = self.course.gradebook_file
        if gradebook is not None and not gradebook.exists():
            raise ValueError(f"course_root {str(self.root)!r} has no {gradebook.name}: "
                             "run `nbgrader generate_assignment` there first")
        with self.lock, self._gradebook() as gb:
            try:
                assignment = gb.find_assignment(self.assignment_name)
            except MissingEntry:
                raise ValueError(f"assignment {self.assignment_name!r} is not in the gradebook: "
                                 "run `nbgrader generate_assignment` first") from None
            if len(assignment.notebooks) != 1:
                raise ValueError(f"assignment must have exactly one notebook, "
                                 f"found {len(assignment.notebooks)}")
            nb = assignment.notebooks[0]
            cells = {c.name: {"max_score": float(c.max_score), "cell_type": c.cell_type,
                              "solution": any(s.name == c.name for s in nb.solution_cells)}
                     for c in nb.grade_cells}
            known = ({c.name for c in nb.grade_cells} | {c.name for c in nb.solution_cells}
                     | {c.name for c in nb.source_cells} | {c.name for c in nb.task_cells})
            return Assignment(self.assignment_name, nb.name, cells, known)

    def _resources(self, student: str) -> dict:
        # metadata.path: the graded notebook's folder, as nbconvert gives it for a file (feedback reads
        # the submission's predictions.json there: autograder.grading.handgrading.WidgetNote)
        folder = self.course.folder("autograded", student, self.assignment_name)
        return {"unique_key": self.assignment.notebook,
                "metadata": {"name": self.assignment.notebook, "path": str(folder)},
                "nbgrader": {"student": student, "assignment": self.assignment_name,
                             "notebook": self.assignment.notebook, "db_url": self.db_url,
                             "course_root": str(self.root)}}  # feedback's steps read its configuration


    # ------------------------------------------------------------------ one submission
    def grade_one(self, sub: Submission, slot: int = 0) -> dict:
        """Grade one submission; always returns a result row set, never raises."""
        started = time.monotonic()
        phases = PhaseClock()
        try:
            with compat.shared_gradebooks():  # nbgrader's preprocessors on the shared engine, while grading
                result = self._grade_one(sub, slot, phases)
        except Exception as exc:  # an internal failure still gives the student a row
            result = self._rows(sub.student, "error",
                                f"the autograder failed on this submission ({type(exc).__name__}: "
                                f"{str(exc)[:200]}); your instructor will look at it", {}, {})
        result["seconds"] = round(time.monotonic() - started, 2)
        result["phases"] = phases.seconds
        return result

    def _seed_for(self, student: str) -> int:
        """The probe seed of this run (random per run) plus the student's variant (from who they are)."""
        from course.assess.variants import student_seed

        digest = hashlib.sha256(f"{self.seed}:{self.assignment_name}:{student}".encode()).digest()
        return student_seed(self.assignment_name, student, int.from_bytes(digest[:4], "big") & 0x7FFFFFFF)

    def _grade_one(self, sub: Submission, slot: int, phases: "PhaseClock") -> dict:
        work = Work(sub, slot, phases)
        for step in self.pipeline:
            step.run(self, work)
            if work.result is not None:
                return work.result
        raise AssertionError("the result step gives every submission its rows")

    def _write_feedback(self, sub: Submission, nb, verdicts: Dict[str, "Verdict"], phases: PhaseClock) -> None:
        """``feedback/<student>/<assignment>/<notebook>.html`` and the exchange files; the render's
        seconds go to ``phases`` (``feedback``)."""
        started = time.monotonic()
        pool, html = self._feedback_pool, None
        if pool is not None:  # another process renders (its own interpreter lock, its own core)
            try:
                html = pool.render(nb, self._resources(sub.student), verdicts, self.db_url)
            except Exception as exc:  # noqa: BLE001 (rendered here instead)
                self.log(f"feedback worker failed for {sub.student}: {exc}")
        if html is None:
            html = _feedback_html(nb, self._resources(sub.student), verdicts, self.db_url,
                                  gradebook_lock=self.lock)
        fb_dir = self.course.folder("feedback", sub.student, self.assignment_name)
        fb_dir.mkdir(parents=True, exist_ok=True)
        _fresh(fb_dir / f"{self.assignment.notebook}.html").write_text(html)
        self._copy_exchange_files(sub, fb_dir)
        phases.add("feedback", time.monotonic() - started)

    def _write_problem_feedback(self, sub: Submission, result: dict) -> None:
        """A short feedback page for a submission that could not be graded at all (its notebook file
        is not a notebook): without it the student fetches no feedback and never learns why."""
        import html as _html

        esc = _html.escape
        rows = "".join(f"<tr><td>{esc(p['part'])}</td><td>{p['points'] or 0:g} / {p['max_points']:g}</td></tr>"
                       for p in result["parts"])
        page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{esc(self.assignment_name)}"
                f"</title></head><body><h1>{esc(self.assignment_name)} (Score: {result['score']:g} / "
                f"{result['max_score']:g})</h1><p><strong>Your submission could not be graded:</strong> "
                f"{esc(result['reason'])}.</p><table><tr><th>part</th><th>points</th></tr>{rows}</table>"
                "</body></html>")
        fb_dir = self.course.folder("feedback", sub.student, self.assignment_name)
        fb_dir.mkdir(parents=True, exist_ok=True)
        _fresh(fb_dir / f"{self.assignment.notebook}.html").write_text(page)
        self._copy_exchange_files(sub, fb_dir)

    @staticmethod
    def _copy_exchange_files(sub: Submission, dest: Path) -> None:
        """``timestamp.txt`` and ``submission_secret.txt``: nbgrader's release_feedback needs both.

        A submission that did not come through nbgrader's exchange (a folder of notebooks, one
        notebook) gets its recorded time and a fresh secret, so release_feedback still works (no
        student holds that secret, so nobody fetches that feedback by mistake)."""
        import secrets

        for name in ("timestamp.txt", "submission_secret.txt"):
            src = sub.folder / name if sub.folder else None
            if src is not None and src.is_file() and not src.is_symlink() and src.stat().st_size < 4096:
                shutil.copyfile(src, _fresh(dest / name))
            elif name == "timestamp.txt" and sub.timestamp:
                _fresh(dest / name).write_text(sub.timestamp)
            elif name == "submission_secret.txt" and not (dest / name).is_file():
                (dest / name).write_text(secrets.token_hex(16))


    # ------------------------------------------------------------------ many submissions
    def grade_all(self, subs: List[Submission], progress: bool = True) -> List[dict]:
        """Grade ``subs`` concurrently (``workers`` sandboxes at a time); results sorted by student."""
        from tqdm import tqdm

        slots: "queue.Queue[int]" = queue.Queue()
        for slot in range(self.workers):
            slots.put(slot)

        def work(sub: Submission) -> dict:
            slot = slots.get()
            try:
                return self.grade_one(sub, slot)
            finally:
                slots.put(slot)

        results = []
        warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's own SQLAlchemy noise
        if self.feedback and len(subs) > self.workers:
            # one renderer per two grading threads: a render takes a fraction of a grade, and each
            # renderer costs a start-up (nbconvert, templates) of its own
            self._feedback_pool = _FeedbackWorkers(max(1, self.workers // 2))
            self._feedback_dispatch = ThreadPoolExecutor(max_workers=self.workers)
        try:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                futures = [pool.submit(work, sub) for sub in subs]
                bar = tqdm(as_completed(futures), total=len(futures), unit="submission",
                           desc=f"grading {self.assignment_name}", disable=not progress)
                for future in bar:
                    results.append(future.result())
            by_student = {row["student"]: row for row in results}
            for student, future in self._feedback_pending:
                exc = future.exception()
                if exc is not None and student in by_student:  # as grade_one says of any failure
                    row = by_student[student]
                    row["status"] = "error"
                    row["reason"] = (f"the autograder failed on this submission ({type(exc).__name__}: "
                                     f"{str(exc)[:200]}); your instructor will look at it")
        finally:
            if self._feedback_dispatch is not None:
                self._feedback_dispatch.shutdown(wait=True)
                self._feedback_dispatch = None
            self._feedback_pending = []
            if self._feedback_pool is not None:
                self._feedback_pool.close()
                self._feedback_pool = None
        return sorted(results, key=lambda r: r["student"])


