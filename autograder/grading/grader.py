"""Grading one assignment: nbgrader's steps, with execution sandboxed and judging trusted.

Per submission (:meth:`Grader.grade_one`), in this order:

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

import copy
import hashlib
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import nbformat

from ..judging import sandboxed_cleanroom as cleanroom
from ..judging import ranks
from .. import compat
from ..isolation import kernel, sandbox
from .course_settings import CourseSettings
from .submissions import Submission

if TYPE_CHECKING:  # the judge's record; imported where judging happens (the course package loads lazily)
    from course.assess.registry import Verdict

MAX_NOTEBOOK_BYTES = 50 * 2**20
#: how many cells that hang the kernel a submission may have before its kernel-read parts are lost
MAX_KERNEL_RERUNS = 2


#: Why a cell ended a clean-room run, as a row's reason and its notes say it.
ENDED_RUN = "ended the grading run when your code was run again to grade it (it killed or stopped the processes " \
            "that run your notebook)"


def cells_words(numbers, one: str, many: str) -> str:
    """``"cell 7 " + one`` or ``"cells 22 and 23 " + many``: a reason's cells, the verb agreeing.

    >>> cells_words([7], "has a syntax error", "have a syntax error")
    'cell 7 has a syntax error'
    >>> cells_words([1, 22, 23], "was stopped", "were stopped")
    'cells 1, 22 and 23 were stopped'
    """
    numbers = [str(n) for n in numbers]
    if len(numbers) == 1:
        return f"cell {numbers[0]} {one}"
    return f"cells {', '.join(numbers[:-1])} and {numbers[-1]} {many}"


def _fresh(path: Path) -> Path:
    """``path``, its old file removed: nbgrader leaves ``autograded/`` read-only (0444), which a
    grader that is not root (an instructor on a hub, after the formgrader's Autograde button)
    cannot open for writing; the folder is the instructor's, so the file can be replaced."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    return path


class PhaseClock:
    """Wall seconds of each phase of one submission, for ``grades.json`` (``phases``) and the benchmark.

    ``lap(name)`` charges the time since the previous lap to ``name``; ``add`` records a
    duration measured elsewhere (the kernel's and the clean room's own clocks, which run
    side by side inside the ``sandbox`` phase).
    """

    def __init__(self):
        self.seconds: Dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(now - self._last, 3)
        self._last = now

    def add(self, name: str, seconds: Optional[float]) -> None:
        if seconds is not None:
            self.seconds[name] = round(float(seconds), 3)


@dataclass
class Work:
    """One submission on its way through :attr:`Grader.STEPS`: what each step found so far."""

    sub: Submission
    slot: int
    phases: "PhaseClock"
    nb: Any = None
    notes: List[str] = field(default_factory=list)
    #: the locked cells the student changed (restored before grading)
    tampered: List[str] = field(default_factory=list)
    seed: int = 0
    run: dict = field(default_factory=dict)
    problem: Optional[str] = None
    verdicts: Dict[str, "Verdict"] = field(default_factory=dict)
    grades: Dict[str, dict] = field(default_factory=dict)
    #: the submission's rows, once a step settled it
    result: Optional[dict] = None


@dataclass
class Assignment:
    """What the gradebook knows about the assignment's (single) notebook."""

    name: str
    notebook: str
    grade_cells: Dict[str, dict]   # grade_id -> {max_score, cell_type, solution}
    known_ids: set                 # every nbgrader cell id in the source notebook


class Grader:
    """Grades submissions of one assignment into a course root (gradebook, autograded/, feedback/)."""

    def __init__(self, course_root, assignment: str, *, workers: Optional[int] = None,
                 limits: sandbox.Limits = sandbox.Limits(), seed: int = 0,
                 feedback: bool = True, isolate: bool = True, log=None, reset_hand_grades: bool = False,
                 allow_unsandboxed: Optional[bool] = None):
        compat.require()  # the library internals grading relies on are the ones checked (autograder/compat.py)
        # the instructor's nbgrader_config.py: folders, gradebook, and nbgrader's steps configured by it
        self.course = CourseSettings(course_root)
        self.root = self.course.root
        # a part a person graded keeps its score and comment when the submission is graded again
        self.reset_hand_grades = reset_hand_grades
        self.assignment_name = assignment
        self.workers = workers or len(os.sched_getaffinity(0))
        if type(self.workers) is not int or self.workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.limits = limits
        self.seed = int(seed)
        self.feedback = feedback
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

    # ------------------------------------------------------------------ gradebook
    def _gradebook(self):
        return compat.open_gradebook(self.db_url)

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
                             "notebook": self.assignment.notebook, "db_url": self.db_url}}

    def _open_submission(self, sub: Submission) -> None:
        with self._gradebook() as gb:
            student = gb.update_or_create_student(sub.student)
            if student.first_name is None and student.last_name is None:  # the formgrader showed "None, None"
                from .submissions import display_name

                student.first_name, student.last_name = display_name(sub.student)
                gb.db.commit()
            if sub.timestamp:
                try:
                    gb.update_or_create_submission(self.assignment_name, sub.student,
                                                   timestamp=sub.timestamp)
                    return
                except Exception:
                    pass  # an unparsable timestamp.txt must not cost the student their grade
            gb.update_or_create_submission(self.assignment_name, sub.student)

    def _zero_all(self, student: str) -> None:
        """nbgrader's treatment of a missing notebook: every grade 0, nothing to grade by hand."""
        with self._gradebook() as gb:
            nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            for grade in nb.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
            gb.db.commit()

    def _read_grades(self, student: str) -> Dict[str, dict]:
        with self._gradebook() as gb:
            nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            return {g.name: {"auto": g.auto_score, "manual": g.manual_score, "score": float(g.score),
                             "max": float(g.max_score), "needs_manual": bool(g.needs_manual_grade)}
                    for g in nb.grades}

    # ------------------------------------------------------------------ steps
    def _structure_notes(self, nb) -> List[str]:
        """Student-readable notes on deleted, duplicated or re-labelled graded cells."""
        notes, seen = [], {}
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader")
            if not isinstance(meta, dict):
                continue
            gid = meta.get("grade_id")
            if gid not in self.assignment.known_ids:
                cell.metadata.pop("nbgrader", None)  # a student cannot add graded cells
                notes.append(f"a cell carried grading metadata that is not part of the assignment "
                             f"({str(gid)[:40]!r}); it was ignored")
                continue
            seen[gid] = seen.get(gid, 0) + 1
            info = self.assignment.grade_cells.get(gid)
            if info and (meta.get("points") != info["max_score"] or meta.get("grade") is not True):
                notes.append(f"the grading metadata of cell {gid} was changed; the original was restored")
        for gid, count in seen.items():
            if count > 1:
                notes.append(f"cell {gid} appears {count} times; only one copy counts")
        for gid in sorted(set(self.assignment.grade_cells) - set(seen)):
            checked = "your answer was still checked" if gid in self.registered else "it scores 0"
            notes.append(f"graded cell {gid} was missing from your notebook; {checked}")
        return notes

    def _sanitize(self, nb, student: str):
        from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteKernelspec

        _RestoreCells = compat.restore_cells_class()

        resources = self._resources(student)
        for pp in map(self.course.step, (ClearOutput, DeduplicateIds, OverwriteKernelspec)):
            nb, resources = pp.preprocess(nb, resources)
        for cell in nb.cells:  # DeduplicateIds leaves {} on the extra copies; nbgrader's checks reject {}
            if cell.get("metadata", {}).get("nbgrader") == {}:
                del cell.metadata["nbgrader"]
        try:  # put deleted graded cells back where nbgrader can
            restored, resources = self.course.step(_RestoreCells, add_missing_cells=True).preprocess(
                copy.deepcopy(nb), resources)
        except (KeyError, IndexError, ValueError):
            # nbgrader 0.9.6 fails when a neighbour of the deleted cell is gone too; registered parts
            # are judged from the harvest anyway, so grade without the missing cells
            restored, resources = self.course.step(_RestoreCells).preprocess(nb, resources)
        with compat.cached_metadata_schema():
            nb, resources = self.course.step(CheckCellMetadata).preprocess(restored, resources)
        return nb

    def _record(self, nb, student: str, verdicts: Dict[str, "Verdict"]) -> Dict[str, float]:
        """nbgrader's ``LimitOutput`` and ``SaveAutoGrades``, then the judged parts' scores over the
        in-kernel ones, in ONE gradebook transaction (``SaveAutoGrades`` alone commits once per
        graded cell); returns the in-kernel scores."""
        from nbgrader.preprocessors import AssignLatePenalties, LimitOutput

        resources = self._resources(student)
        nb, resources = self.course.step(LimitOutput).preprocess(nb, resources)
        with self._gradebook() as gb:
            nb, resources = self.course.step(compat.SaveAutoGradesInto).preprocess_into(
                gb, nb, resources, notebook_id=self.assignment.notebook, assignment_id=self.assignment_name,
                student_id=student, db_url=self.db_url)
            gb.db.flush()
            gb.db.expire_all()  # scores are computed by the database: read them again
            sub_nb = gb.find_submission_notebook(self.assignment.notebook, self.assignment_name, student)
            in_kernel = {grade.name: float(grade.score) for grade in sub_nb.grades}
            for grade in sub_nb.grades:
                if grade.name in verdicts:
                    grade.auto_score = verdicts[grade.name].score * float(grade.max_score)
                    grade.needs_manual_grade = False
            self._keep_or_reset_hand_grades(sub_nb)
            gb.db.commit()
        # nbgrader checks cell metadata again here because its kernel ran on the notebook itself; ours
        # only sends outputs back (merged in _merge_outputs), so the check in _sanitize still holds
        nb, resources = self.course.step(AssignLatePenalties).preprocess(nb, resources)
        return in_kernel

    def _keep_or_reset_hand_grades(self, sub_nb) -> None:
        """nbgrader's SaveAutoGrades marks every part a person already graded as needing grading
        again (and refresh would then drop its points): a hand grade stands, so it is not, unless
        the instructor asked to reset hand grades (then score and comment are cleared)."""
        comments = {c.name: c for c in sub_nb.comments}
        for grade in sub_nb.grades:
            if grade.manual_score is None:
                continue
            if self.reset_hand_grades:
                grade.manual_score = None
                if grade.name in comments:
                    comments[grade.name].manual_comment = None
                grade.needs_manual_grade = grade.auto_score is None
            else:
                grade.needs_manual_grade = False

    def _scratch_copy(self, sub: Submission, scratch: Path, name: str, slot: int) -> Path:
        """A folder with the submission's files, then the instructor's (as nbgrader), for one sandbox."""
        work = scratch / name
        work.mkdir()
        source_dir = self.course.folder("source", ".", self.assignment_name)
        for folder in (sub.folder, source_dir):
            if folder and folder.is_dir():
                for path in folder.rglob("*"):
                    rel = path.relative_to(folder)
                    if (path.is_file() and not path.is_symlink() and path.suffix != ".ipynb"
                            and ".ipynb_checkpoints" not in rel.parts and path.stat().st_size < 20 * 2**20):
                        (work / rel).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(path, work / rel)
        sandbox.prepare_scratch(work, slot, self.use_bwrap)
        return work

    def _run_sandbox(self, nb, sub: Submission, slot: int, seed: int) -> dict:
        """Execute the notebook (and harvest lab parts) in the kernel's sandbox, and evaluate function
        parts and workbook answers in a clean room (:mod:`autograder.judging.sandboxed_cleanroom`); return outputs,
        harvests and a status."""
        # the kernel's IPC socket paths live under here, and Unix socket paths end at 107 bytes
        base = tempfile.gettempdir() if len(tempfile.gettempdir()) <= 48 else "/tmp"
        scratch = Path(tempfile.mkdtemp(prefix="autograder-", dir=base))
        try:
            split = cleanroom.split_parts(self.registered)
            room: dict = {}
            if split["functions"] or split["values"]:
                # the clean room starts from its own fresh copy, so nothing the kernel writes can reach
                # it, and runs beside the kernel (a separate process: it overlaps the kernel's start-up)
                # (without bwrap both would run as one user on one disk: then one after the other)
                room_work = self._scratch_copy(sub, scratch, "room", slot)
                room_thread = threading.Thread(target=lambda: room.update(cleanroom.evaluate(
                    nb, room_work, split=split, seed=seed, limits=self.limits, slot=slot,
                    use_bwrap=self.use_bwrap, timeout=float(self.limits.submission_timeout))),
                    name="autograder-cleanroom", daemon=True)
                room_thread.start()
                if not self.use_bwrap:
                    room_thread.join()
            run = kernel.execute(nb, self._scratch_copy(sub, scratch, "work", slot), grade_ids=split["kernel"],
                                 seed=seed, limits=self.limits, slot=slot, use_bwrap=self.use_bwrap,
                                 student=sub.student)
            stopped: List[int] = []
            how: Dict[int, str] = {}
            # parts read from the kernel (a lab's answers and locks) need a kernel that reaches the
            # end: a cell that ignored the interrupt (a bare except in a loop) hung it, or one that
            # ended it (os._exit, a signal, closing its channels), so run the notebook again in a fresh
            # sandbox without that cell, as the clean room does
            while split["kernel"] and len(stopped) < MAX_KERNEL_RERUNS:
                stuck = self._stuck_cell(run, len(nb.cells))
                if stuck is None or stuck in stopped or nb.cells[stuck].cell_type != "code":
                    break
                stopped.append(stuck)
                how[stuck] = "died" if run["status"].get("state") == "kernel_died" else "hung"
                without = copy.deepcopy(nb)
                for index in stopped:
                    without.cells[index].source = ""  # nbclient skips an empty cell
                run = kernel.execute(without, self._scratch_copy(sub, scratch, f"rerun{len(stopped)}", slot),
                                     grade_ids=split["kernel"], seed=seed, limits=self.limits, slot=slot,
                                     use_bwrap=self.use_bwrap, student=sub.student)
            run["stopped_cells"] = sorted(stopped)
            run["stopped_how"] = how
            if split["functions"] or split["values"]:
                room_thread.join()
            run["cleanroom"], run["split"] = (room or None), split
            run["ranks"] = self._run_ranks(nb, sub, scratch, slot, seed, split["ranks"])
            return run
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _run_ranks(self, nb, sub: Submission, scratch: Path, slot: int, seed: int, grade_ids: List[str]) -> dict:
        """Each collective part's function on real MPI ranks, one sandboxed launch per part from a fresh
        copy (:mod:`autograder.judging.ranks`): ``{grade_id: harvest}``. A launch that deadlocks or
        loses a rank ends at its time limit and costs that part only."""
        from course.notebook_api import REGISTRY

        sources = cleanroom.code_cells(nb)
        out = {}
        # all the launches of one submission share its time: one that hangs leaves less to the next
        deadline = time.monotonic() + float(self.limits.submission_timeout)
        for gid in grade_ids:
            work = self._scratch_copy(sub, scratch, f"ranks-{gid}", slot)
            out[gid] = ranks.evaluate_part(REGISTRY[gid], sources, work, seed=seed, limits=self.limits, slot=slot,
                                           use_bwrap=self.use_bwrap,
                                           timeout=max(ranks.MIN_LAUNCH_SECONDS, deadline - time.monotonic()))
        return out

    @staticmethod
    def _stuck_cell(run: dict, cells: int) -> Optional[int]:
        """Index of the cell that hung the kernel (it ran past the cell limit and ignored the
        interrupt) or ended it (the kernel died while it ran), or ``None`` if the kernel reached the
        end or nothing names such a cell."""
        status = run["status"]
        if status.get("state") == "kernel_died" and not status.get("state_during_harvest"):
            cell = status.get("cell")
            return cell if type(cell) is int and 0 <= cell < cells else None
        if status.get("state") != "timeout":
            return None
        cell = status.get("cell")
        if type(cell) is int and 0 <= cell < cells:  # nbclient gave up on this cell after its interrupt
            return cell
        timed_out = [i for i in status.get("timed_out_cells", []) if 0 <= i < cells]
        return timed_out[-1] if timed_out else None  # killed at the deadline: the last cell that overran

    def _judge(self, run: dict, seed: int, problem: Optional[str]) -> Dict[str, "Verdict"]:
        """Trusted judging: parts with names or functions from the clean room, the rest (locked
        predictions) from the kernel's harvest.

        Returns ``{grade_id: Verdict}``: the judge's one record (score in [0, 1], reason, and the
        partial-credit checks) that the gradebook, ``grades.json``, feedback and the LMS export read.
        """
        from course.assess import codes
        from course.assess.registry import RAISED, Verdict
        from course.notebook_api import REGISTRY, judge_json, safe_judge

        room = run.get("cleanroom") or {}
        in_room = set(run["split"]["functions"]) | set(run["split"]["values"])
        failed_room = {"timeout": "your notebook's code did not finish when it was run again to grade "
                                  "it (look for a cell that never ends)",
                       "no_result": "your answers could not be read: the notebook's code stopped the "
                                    "grading run (an exit, a crash, too much memory or a forged result)"}
        if room.get("ended_in"):
            failed_room["no_result"] = failed_room["timeout"] = (
                f"your answers could not be read: cell {room['ended_in']} {ENDED_RUN}")
        verdicts = {}
        for gid in sorted(self.registered):
            if gid in run.get("ranks", {}):  # a collective, judged from its own launch on real ranks
                verdicts[gid] = safe_judge(REGISTRY[gid], run["ranks"][gid], seed)
                continue
            if gid in in_room and room.get("harvested") is None:
                verdicts[gid] = Verdict(0.0, failed_room.get(room.get("state"), "your answers could not be read"),
                                        code=codes.ENDED_RUN if room.get("ended_in") else codes.UNREADABLE)
                continue
            if gid in room.get("ended_by_calls", []):
                name = REGISTRY[gid].function.name
                verdicts[gid] = Verdict(0.0, f"calling your function `{name}` ended the grading run (it killed or "
                                             "stopped the processes that run your code), so it could not be checked",
                                        code=codes.ENDED_RUN)
                continue
            if gid in in_room:
                harvested = cleanroom.with_unbound(REGISTRY[gid], room["harvested"][gid], run.get("bound"))
                verdict = safe_judge(REGISTRY[gid], harvested, seed)
                if cleanroom.names_missing(harvested):
                    # blame only the left-out cells that could have defined what the part misses
                    missing, defines = cleanroom.missing_names(REGISTRY[gid], harvested), room.get("defines", {})
                    could = lambda n: n not in defines or bool(missing & set(defines[n]))  # noqa: E731 -- a one-line helper local to this function
                    hung = [n for n in room.get("stopped_cells", []) if n not in room.get("exited_cells", [])
                            and could(n)]
                    lost = sorted(n for n in set(room.get("exited_cells", [])) | set(room.get("ended_by", []))
                                  if could(n))
                    why = "; ".join(
                        ([cells_words(hung, "never finished and was stopped", "never finished and were stopped")]
                         if hung else [])
                        + ([cells_words(lost, "ended its run and was left out", "ended their runs and were left out")]
                           if lost else []))
                    defines = "it defines is" if len(hung) + len(lost) == 1 else "they define is"
                    why = f" ({why}, so what {defines} missing)" if why else cleanroom.MISSING_NOTE
                    if run.get("syntax_cells"):
                        why = (" (" + cells_words(run["syntax_cells"], "has a syntax error, so none of it ran",
                                                  "have a syntax error, so none of them ran") + ")" + why)
                    verdicts[gid] = replace(verdict, reason=verdict.reason + why)
                    continue
            elif run["harvested"].get(gid) is None:
                verdicts[gid] = Verdict(0.0, "this exercise could not be read from your notebook"
                                 + (" (see the submission note)" if problem else ""), (), code=codes.UNREADABLE)
                continue
            else:
                part, bound = REGISTRY[gid], run.get("bound")
                verdict = judge_json(gid, run["harvested"][gid], seed,
                                     adjust=lambda h: cleanroom.with_unbound(part, h, bound))
                if run.get("stopped_cells") and verdict.score < 1 and RAISED in run["harvested"][gid]:
                    stopped = cells_words([i + 1 for i in run["stopped_cells"]],
                                          "was stopped and left out, so what it defines is missing",
                                          "were stopped and left out, so what they define is missing")
                    verdict = replace(verdict, reason=verdict.reason + f" ({stopped})")
            verdicts[gid] = verdict
        return verdicts

    @staticmethod
    def _mark_cells(nb, state: dict, room: dict) -> None:
        """Under each cell that ended the kernel or a clean-room run, a line saying so, where the student
        reads it (the feedback and ``autograded/``, so feedback made again later says it too)."""
        marks: Dict[int, List[str]] = {}
        cell = state.get("cell")
        if state.get("state") == "kernel_died" and type(cell) is int and 0 <= cell < len(nb.cells):
            marks.setdefault(cell + 1, []).append(
                "the Python kernel stopped while this cell ran (os._exit, a signal such as os.kill, closing the "
                "kernel's connections, a crash, or too much memory); the cells after it have no outputs")
        for number in room.get("ended_by", []):
            marks.setdefault(number, []).append(
                "when your code was run again to grade it, this cell ended the run (it killed or stopped the "
                "processes that run your notebook); it was run again without this cell")
        if room.get("ended_in"):
            marks.setdefault(room["ended_in"], []).append(
                "when your code was run again to grade it, this cell ended the run (it killed or stopped the "
                "processes that run your notebook), and your answers could not be read")
        for number in room.get("stopped_cells", []):
            marks.setdefault(number, []).append(
                "when your code was run again to grade it, this cell ended its own process; the cells after it "
                "ran without it" if number in room.get("exited_cells", []) else
                "when your code was run again to grade it, this cell never finished and was stopped; the cells "
                "after it ran without it")
        for number, texts in marks.items():
            if 1 <= number <= len(nb.cells) and nb.cells[number - 1].cell_type == "code":
                nb.cells[number - 1].outputs = list(nb.cells[number - 1].get("outputs", [])) + [
                    nbformat.v4.new_output("stream", name="stderr", text=f"[autograder: {text}]\n")
                    for text in texts]

    @staticmethod
    def _merge_outputs(nb, executed) -> None:
        """Copy outputs from the executed copy (same cells, outputs from the kernel) into ``nb``.

        Output lists and execution counts come from the student's kernel, so only
        well-formed ones are kept.
        """
        if executed is None:  # killed at the deadline: nothing trustworthy came back
            return
        for cell, done in zip(nb.cells, executed.cells):
            if cell.cell_type == "code":
                outputs = done.get("outputs", [])
                cell.outputs = [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
                count = done.get("execution_count")
                cell.execution_count = count if type(count) is int else None

    def _submission_problem(self, state: dict, kernel_parts: bool = True, cells: int = 0) -> Optional[str]:
        """What stopped the notebook's run in its kernel, for the student (``None``: nothing did).

        Without parts read from the kernel (a workbook chapter, whose parts are all judged in the
        clean room) it costs outputs only, and the text says so instead of "score 0"."""
        kind = state.get("state")
        if kind in ("ok", None):
            return None
        lost = ("exercises could not be read and score 0" if kernel_parts else
                "some outputs are missing, but your answers were checked by running your code again")
        if kind == "timeout" and state.get("killed"):
            return (f"your notebook did not finish within {self.limits.submission_timeout} s (look for a "
                    f"cell that never ends, such as an infinite loop); {lost}")
        if kind == "timeout":
            cell = state.get("cell")
            where = f"cell {cell + 1}" if type(cell) is int and cell >= 0 else "a cell"
            return (f"your notebook did not finish: {where} kept running past the {self.limits.cell_timeout} s "
                    f"limit even when interrupted; {lost}")
        if kind == "kernel_died":
            cell = state.get("cell")
            where = (f"cell {cell + 1} of your notebook" if type(cell) is int and 0 <= cell < cells
                     else "your notebook")
            return (f"the Python kernel stopped while running {where} (os._exit, a signal such as "
                    f"os.kill, closing the kernel's connections, a crash, or using too much memory or too "
                    f"many processes); {lost}")
        if state.get("cell") == -1:  # no cell ever started: the kernel did not come up
            return (f"the grader could not start a Python kernel for your notebook "
                    f"({state.get('detail') or kind}); exercises score 0 until your instructor regrades it")
        return f"your notebook could not be run to the end ({state.get('detail') or kind}); {lost}"

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

    #: what grading one submission does, in order, as nbgrader's converters run their preprocessors: each
    #: step reads and extends the submission's :class:`Work`; a step that settles the submission early (no
    #: notebook, a file that is not one) gives its result, and the steps after it do not run
    STEPS = ("open_submission", "read_notebook", "sanitize", "execute", "read_code", "judge", "record",
             "write_autograded", "feedback", "result")

    def _grade_one(self, sub: Submission, slot: int, phases: "PhaseClock") -> dict:
        work = Work(sub, slot, phases)
        for name in self.STEPS:
            getattr(self, f"_step_{name}")(work)
            if work.result is not None:
                return work.result
        raise AssertionError("the result step gives every submission its rows")

    def _step_open_submission(self, work: "Work") -> None:
        """The submission in the gradebook; without a notebook, nbgrader's zeros and the reason."""
        sub = work.sub
        with self.lock:
            self._open_submission(sub)
        if sub.notebook is None:
            with self.lock:
                self._zero_all(sub.student)
                grades = self._read_grades(sub.student)
            work.result = self._rows(sub.student, sub.status, sub.problem or "no notebook", {}, grades)

    def _step_read_notebook(self, work: "Work") -> None:
        """The notebook file, read as data; a file that is not a notebook scores 0 and says why."""
        sub = work.sub
        try:
            if sub.notebook.stat().st_size > MAX_NOTEBOOK_BYTES:
                raise ValueError("the file is larger than 50 MB")
            nb = nbformat.read(str(sub.notebook), as_version=4)
            if not isinstance(nb.get("cells"), list):
                raise ValueError("it has no list of cells")
        except Exception as exc:
            with self.lock:
                self._zero_all(sub.student)
                grades = self._read_grades(sub.student)
            detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            reason = (f"your notebook file could not be read as a notebook ({detail}); open it "
                      "in Jupyter, save it and submit again")
            work.result = self._rows(sub.student, "unreadable", reason, {}, grades)
            if self.feedback:
                self._write_problem_feedback(sub, work.result)
            return
        work.nb = nb

    def _step_sanitize(self, work: "Work") -> None:
        """nbgrader's sanitizing steps, the notes on the notebook's structure and its changed locked cells,
        and the student's seed."""
        work.notes = list(work.sub.notes) + self._structure_notes(work.nb)
        from .tamper import changed_locked_cells

        with self.lock:
            with self._gradebook() as gb:  # before nbgrader restores them: which locked cells were changed
                work.tampered = changed_locked_cells(work.nb, gb, self.assignment.notebook, self.assignment_name)
            work.nb = self._sanitize(work.nb, work.sub.student)
        work.notes += [f"locked cell {gid} was changed in your notebook: the original was restored and graded"
                       for gid in work.tampered]
        work.seed = self._seed_for(work.sub.student)
        work.phases.lap("open")

    def _step_execute(self, work: "Work") -> None:
        """The notebook in its sandboxed kernel and the clean room; their outputs merged, what stopped noted."""
        nb, phases = work.nb, work.phases
        run = work.run = self._run_sandbox(nb, work.sub, work.slot, work.seed)
        phases.lap("sandbox")
        phases.add("kernel", run["status"].get("seconds"))
        phases.add("cleanroom", (run.get("cleanroom") or {}).get("seconds"))
        state = run["status"]
        work.problem = self._submission_problem(state, kernel_parts=bool(run["split"]["kernel"]), cells=len(nb.cells))
        self._merge_outputs(nb, run["executed"])
        work.notes += self._kernel_notes(nb, run)
        room = run.get("cleanroom") or {}
        work.notes += self._room_notes(room)
        self._mark_cells(nb, state, room)
        if state.get("output_truncated"):
            work.notes.append("your notebook printed too much; the rest of its output was dropped")

    def _kernel_notes(self, nb, run: dict) -> List[str]:
        """What the kernel's run stopped: a note per cell, and the stopped cell's output says so."""
        notes = [f"cell {index + 1} ran longer than {self.limits.cell_timeout} s and was stopped"
                 for index in run["status"].get("timed_out_cells", [])]
        for index in run.get("stopped_cells", []):
            if run.get("stopped_how", {}).get(index) == "died":
                notes.append(f"cell {index + 1} ended the Python kernel (os._exit, a signal such as os.kill, "
                             "closing the kernel's connections, a crash, or too much memory): your notebook was "
                             "run again without it")
                text = "[autograder: this cell ended the kernel; the notebook was run again without it]\n"
            else:
                notes.append(f"cell {index + 1} never finished (it ran past {self.limits.cell_timeout} s and "
                             "ignored the interrupt, which stopped the kernel): it was stopped and your notebook "
                             "was run again without it")
                text = "[autograder: this cell never finished and was stopped; the notebook was run again without it]\n"
            if nb.cells[index].cell_type == "code":
                nb.cells[index].outputs = [nbformat.v4.new_output("stream", name="stderr", text=text)]
        return notes

    def _room_notes(self, room: dict) -> List[str]:
        """What the clean room's run stopped or what ended it, a note each."""
        notes = []
        for number in room.get("stopped_cells", []):
            if number in room.get("exited_cells", []):
                notes.append(f"cell {number} ended its own process when your code was run again to grade it "
                             "(os._exit, a signal such as os.kill, a crash, or too much memory): the cells after it "
                             "ran without it")
            else:
                notes.append(f"cell {number} never finished when your code was run again to grade it (it ran "
                             f"past {self.limits.cell_timeout} s and ignored the interrupt): it was stopped and "
                             "the cells after it ran without it")
        for number in room.get("ended_by", []):
            notes.append(f"cell {number} {ENDED_RUN}: your notebook was run again without it, and your other "
                         "answers were graded")
        if room.get("ended_in"):
            notes.append(f"cell {room['ended_in']} {ENDED_RUN}, and your answers could not be read")
        for gid in room.get("ended_by_calls", []):
            notes.append(f"calling your function for {gid} ended the grading run: it was run again without "
                         "those calls")
        return notes

    def _step_read_code(self, work: "Work") -> None:
        """From the notebook's text: the names its code assigns (a value no cell assigns is not answered),
        and each cell Python cannot compile, named with Python's message (the student's own cells only,
        never the test cells, so nothing hidden is shown)."""
        run, nb = work.run, work.nb
        run["bound"] = cleanroom.bound_names(cleanroom.code_cells(nb))
        run["syntax_cells"] = []
        for number, message in cleanroom.syntax_errors(cleanroom.numbered_code_cells(nb)):
            run["syntax_cells"].append(number)
            work.notes.append(f"cell {number} has a syntax error ({message}), so none of it ran")

    def _step_judge(self, work: "Work") -> None:
        """Each registered part judged, in this process, from plain values."""
        work.verdicts = self._judge(work.run, work.seed, work.problem)
        work.phases.lap("judge")

    def _step_record(self, work: "Work") -> None:
        """nbgrader's recording steps and the judged scores, in the gradebook; the grades read back."""
        with self.lock:
            in_kernel = self._record(work.nb, work.sub.student, work.verdicts)
            work.grades = self._read_grades(work.sub.student)
        work.phases.lap("gradebook")
        for gid, score in in_kernel.items():
            work.grades[gid]["kernel"] = score

    def _step_write_autograded(self, work: "Work") -> None:
        """The graded notebook (with the judge's summaries, so feedback nbgrader makes later says the same),
        the exchange files and the labs' locked predictions, in nbgrader's autograded folder."""
        sub, nb = work.sub, work.nb
        out_dir = self.course.folder("autograded", sub.student, self.assignment_name)
        out_dir.mkdir(parents=True, exist_ok=True)
        from .feedback import annotate_summaries

        annotate_summaries(nb, work.verdicts)
        nbformat.write(nb, str(_fresh(out_dir / f"{self.assignment.notebook}.ipynb")))
        self._copy_exchange_files(sub, out_dir)
        locked = sub.folder / "predictions.json" if sub.folder else None  # the labs' locked predictions
        if locked is not None and locked.is_file() and not locked.is_symlink() and locked.stat().st_size < 65536:
            shutil.copyfile(locked, _fresh(out_dir / "predictions.json"))
        work.phases.lap("write")

    def _step_feedback(self, work: "Work") -> None:
        """The feedback page: rendered by a worker process while this thread grades the next submission
        (during :meth:`grade_all`), else here."""
        if self.feedback and self._feedback_dispatch is not None:
            self._feedback_pending.append((work.sub.student, self._feedback_dispatch.submit(
                self._write_feedback, work.sub, work.nb, work.verdicts, work.phases)))
        elif self.feedback:
            self._write_feedback(work.sub, work.nb, work.verdicts, work.phases)

    def _step_result(self, work: "Work") -> None:
        """The submission's rows: its status and every note as its reason."""
        status = work.run["status"].get("state", "ok") if work.problem else "graded"
        reason = "; ".join(([work.problem] if work.problem else []) + work.notes) or "graded"
        work.result = {**self._rows(work.sub.student, status, reason, work.verdicts, work.grades),
                       "tampered": work.tampered}

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

    def _rows(self, student: str, status: str, reason: str, verdicts: Dict[str, "Verdict"],
              grades: Dict[str, dict]) -> dict:
        from course.assess import codes
        from course.notebook_api import REGISTRY

        parts = []
        for gid, info in sorted(self.assignment.grade_cells.items()):
            part = REGISTRY.get(gid)
            grade = grades.get(gid, {})
            checks, findings = [], None
            if gid in verdicts:
                part_status, why, code = "judged", verdicts[gid].reason, verdicts[gid].code
                findings = list(verdicts[gid].findings)
                # partial credit: each check's points and reason (never the hidden inputs or the key)
                checks = [{"check": c.name, "points": round(c.earned * info["max_score"], 6),
                           "max_points": round(c.share * info["max_score"], 6), "reason": c.reason,
                           "codes": list(c.codes)}
                          for c in verdicts[gid].checks]
            elif status in ("missing", "unreadable", "error"):
                part_status, why, code = "not_graded", "see the submission note", codes.NOT_GRADED
            elif grade.get("needs_manual"):
                part_status, why, code = "manual", "graded by hand by your instructor", codes.AWAITING_HAND_GRADE
            elif grade.get("manual") is not None:  # graded by a person before, kept
                part_status, why, code = "hand", "graded by hand", codes.GRADED_BY_HAND
            elif info["solution"] and grade.get("manual") is None and not grade.get("score"):
                # nbgrader scores a hand-graded answer left as released 0 and asks nobody to grade it
                part_status, why, code = "nbgrader", "not answered", codes.NOT_ANSWERED
            else:
                part_status = "nbgrader"
                passed = grade.get("score", 0) >= info["max_score"]
                why, code = ("passed", codes.CORRECT) if passed else ("the test cell failed", codes.TEST_CELL_FAILED)
            parts.append({
                "part": gid, "exercise": part.exercise if part else "", "kind": part.kind if part else "",
                "points": None if part_status == "manual" else round(grade.get("score", 0.0), 6),
                "max_points": info["max_score"], "status": part_status, "reason": why, "checks": checks,
                # what the reason says, machine-readable (course.assess.codes): what reports read
                "code": code, "findings": findings or [code],
                # what nbgrader's in-kernel test cell said; differs from points under tampering
                "kernel_points": grade.get("kernel")})
        from course.assess.variants import variant_of

        return {"student": student, "assignment": self.assignment_name, "status": status,
                "variant": variant_of(self.assignment_name, student), "reason": reason, "score": round(sum(p["points"] or 0.0 for p in parts), 6),
                "max_score": sum(p["max_points"] for p in parts), "parts": parts}

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


class _FeedbackWorkers:
    """Processes that render feedback (:func:`_feedback_html`), one request at a time each, each
    keeping its own nbconvert exporter. Fresh interpreters of this Python (this process runs
    threads, so no fork); requests and answers are pickles over their stdin and stdout, between
    this process and its own children only (no student code runs there)."""

    def __init__(self, count: int):
        import subprocess

        code = "from autograder.grading.grader import _feedback_worker; _feedback_worker()"
        self.idle: "queue.Queue" = queue.Queue()
        self.procs = [subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, cwd=str(Path(__file__).resolve().parents[2]))
                      for _ in range(count)]
        for proc in self.procs:
            self.idle.put(proc)

    def render(self, *args) -> str:
        import pickle

        proc = self.idle.get()
        try:
            data = pickle.dumps(args)
            proc.stdin.write(len(data).to_bytes(8, "big") + data)
            proc.stdin.flush()
            size = int.from_bytes(proc.stdout.read(8), "big")
            ok, value = pickle.loads(proc.stdout.read(size))
        finally:
            self.idle.put(proc)
        if not ok:
            raise RuntimeError(value)
        return value

    def close(self) -> None:
        for proc in self.procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 -- any failure ends the same way
                proc.kill()


def _feedback_worker() -> None:
    """The loop of one :class:`_FeedbackWorkers` process."""
    import pickle

    from .feedback import _exporter, _preprocessors

    _preprocessors()
    _exporter()  # built once per worker (it loads the templates)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing but answers on the pipe
    while True:
        head = stdin.read(8)
        if len(head) < 8:
            return
        args = pickle.loads(stdin.read(int.from_bytes(head, "big")))
        try:
            answer = (True, _feedback_html(*args))
        except Exception as exc:  # noqa: BLE001 (the grader renders it itself then)
            answer = (False, f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(answer)
        stdout.write(len(data).to_bytes(8, "big") + data)
        stdout.flush()


def _feedback_html(nb, resources: dict, verdicts, db_url: str, gradebook_lock=None) -> str:
    """The feedback HTML of one graded notebook (:mod:`autograder.grading.feedback`): only the scores come
    from the gradebook (under ``gradebook_lock`` when given); runs in a worker process or thread."""
    from .feedback import feedback_notebook, render_feedback

    compat.open_gradebook(db_url)  # the shared engine for db_url exists before GetGrades opens it
    with compat.shared_gradebooks():
        fb_nb, fb_resources = feedback_notebook(nb, resources, verdicts, gradebook_lock=gradebook_lock)
    return render_feedback(fb_nb, fb_resources)
