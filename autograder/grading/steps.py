"""The steps of grading one submission, as configurable classes (nbconvert's preprocessors are the model).

:class:`~autograder.grading.grader.Grader` runs the steps its ``steps`` setting lists, in order, over one
:class:`Work` record per submission. Each step is a traitlets ``Configurable`` with one entry,
:meth:`GradingStep.run`, an ``enabled`` switch and its own typed settings, built with the instructor's
``nbgrader_config.py`` (``c.<StepClass>.<setting>``), so a course configures a step where it configures
nbgrader's own::

    c.ReadNotebookStep.max_notebook_bytes = 20 * 2**20   # refuse notebooks over 20 MiB
    c.SandboxStep.max_kernel_reruns = 1                  # rerun a hung kernel once, not twice
    c.FeedbackStep.enabled = False                       # grade only; release feedback later
    from autograder.grading.steps import DEFAULT_STEPS
    c.Grader.steps = DEFAULT_STEPS[:-1] + ["mycourse.grading.NotifyStep", "ResultStep"]

A step reads and extends the submission's :class:`Work`; one that settles the submission early (no
notebook, a file that is not a notebook) sets ``work.result`` and the steps after it do not run. The
steps every submission needs for a correct, safe row (:attr:`GradingStep.required`: the gradebook entry,
sanitizing, the sandbox, judging, recording, the row itself) cannot be disabled or left out: the grader
refuses such a configuration with an error that names the setting.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional

import nbformat
from traitlets import Bool, Integer
from traitlets.config import Configurable

from ..judging import sandboxed_cleanroom as cleanroom
from .common import MAX_KERNEL_RERUNS, MAX_NOTEBOOK_BYTES, PhaseClock, _fresh
from .submissions import Submission

if TYPE_CHECKING:  # the judge's record (the course package loads lazily)
    from course.assess.registry import Verdict


@dataclass
class Work:
    """One submission on its way through the grader's steps: what each step found so far."""

    sub: Submission
    slot: int
    phases: PhaseClock
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


class GradingStep(Configurable):
    """One step of grading a submission: ``run(grader, work)`` reads and extends ``work``."""

    enabled = Bool(True, help="run this step (a required step cannot be disabled)").tag(config=True)

    #: a step without which a submission's row would be wrong or unsafe: never disabled, never left out
    required: ClassVar[bool] = False

    def run(self, grader, work: Work) -> None:  # pragma: no cover - every step overrides it
        """Read and extend ``work``; ``grader`` (the :class:`~autograder.grading.grader.Grader`) gives the
        course, the gradebook and the sandbox."""
        raise NotImplementedError


class OpenSubmissionStep(GradingStep):
    """The submission in the gradebook; without a notebook, nbgrader's zeros and the reason."""

    required = True

    def run(self, grader, work):
        sub = work.sub
        with grader.lock:
            grader._open_submission(sub)
        if sub.notebook is None:
            with grader.lock:
                grader._zero_all(sub.student)
                grades = grader._read_grades(sub.student)
            work.result = grader._rows(sub.student, sub.status, sub.problem or "no notebook", {}, grades)


def _size_words(size: int) -> str:
    """``50 MB`` for a whole number of MiB, else the bytes."""
    return f"{size // 2**20} MB" if size % 2**20 == 0 else f"{size} bytes"


class ReadNotebookStep(GradingStep):
    """The notebook file, read as data; a file that is not a notebook scores 0 and says why."""

    required = True
    max_notebook_bytes = Integer(MAX_NOTEBOOK_BYTES, min=1,
                                 help="largest notebook file read; a larger one scores 0 and says why").tag(
                                     config=True, unit="bytes")

    def run(self, grader, work):
        sub = work.sub
        try:
            if sub.notebook.stat().st_size > self.max_notebook_bytes:
                raise ValueError(f"the file is larger than {_size_words(self.max_notebook_bytes)}")
            nb = nbformat.read(str(sub.notebook), as_version=4)
            if not isinstance(nb.get("cells"), list):
                raise ValueError("it has no list of cells")
        except Exception as exc:
            with grader.lock:
                grader._zero_all(sub.student)
                grades = grader._read_grades(sub.student)
            detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            reason = (f"your notebook file could not be read as a notebook ({detail}); open it "
                      "in Jupyter, save it and submit again")
            work.result = grader._rows(sub.student, "unreadable", reason, {}, grades)
            if grader.feedback:
                grader._write_problem_feedback(sub, work.result)
            return
        work.nb = nb


class SanitizeStep(GradingStep):
    """nbgrader's sanitizing steps, the notes on the notebook's structure and its changed locked cells, and
    the student's seed."""

    required = True

    def run(self, grader, work):
        work.notes = list(work.sub.notes) + grader._structure_notes(work.nb)
        from .tamper import changed_locked_cells

        with grader.lock:
            with grader._gradebook() as gb:  # before nbgrader restores them: which locked cells were changed
                work.tampered = changed_locked_cells(work.nb, gb, grader.assignment.notebook,
                                                     grader.assignment_name)
            work.nb = grader._sanitize(work.nb, work.sub.student)
        work.notes += [f"locked cell {gid} was changed in your notebook: the original was restored and graded"
                       for gid in work.tampered]
        work.seed = grader._seed_for(work.sub.student)
        work.phases.lap("open")


class SandboxStep(GradingStep):
    """The notebook in its sandboxed kernel, the clean room and the ranks; their outputs merged, what
    stopped noted. The resource limits are ``c.GradingLimits.*`` (below)."""

    required = True
    max_kernel_reruns = Integer(MAX_KERNEL_RERUNS, min=0,
                                help="how many cells that hang or end the kernel are skipped, each in a fresh "
                                     "run, before the parts read from the kernel are lost").tag(config=True)

    def run(self, grader, work):
        nb, phases = work.nb, work.phases
        run = work.run = grader._run_sandbox(nb, work.sub, work.slot, work.seed, reruns=self.max_kernel_reruns)
        phases.lap("sandbox")
        phases.add("kernel", run["status"].get("seconds"))
        phases.add("cleanroom", (run.get("cleanroom") or {}).get("seconds"))
        state = run["status"]
        work.problem = grader._submission_problem(state, kernel_parts=bool(run["split"]["kernel"]),
                                                  cells=len(nb.cells))
        grader._merge_outputs(nb, run["executed"])
        work.notes += grader._kernel_notes(nb, run)
        room = run.get("cleanroom") or {}
        work.notes += grader._room_notes(room)
        grader._mark_cells(nb, state, room)
        if state.get("output_truncated"):
            work.notes.append("your notebook printed too much; the rest of its output was dropped")


class ReadCodeStep(GradingStep):
    """From the notebook's text: the names its code assigns (a value no cell assigns is not answered), and
    each cell Python cannot compile, named with Python's message (the student's own cells only, never the
    test cells, so nothing hidden is shown)."""

    required = True

    def run(self, grader, work):
        run, nb = work.run, work.nb
        run["bound"] = cleanroom.bound_names(cleanroom.code_cells(nb))
        run["syntax_cells"] = []
        for number, message in cleanroom.syntax_errors(cleanroom.numbered_code_cells(nb)):
            run["syntax_cells"].append(number)
            work.notes.append(f"cell {number} has a syntax error ({message}), so none of it ran")


class JudgeStep(GradingStep):
    """Each registered part judged, in this process, from plain values."""

    required = True

    def run(self, grader, work):
        work.verdicts = grader._judge(work.run, work.seed, work.problem)
        work.phases.lap("judge")


class RecordStep(GradingStep):
    """nbgrader's recording steps and the judged scores, in the gradebook; the grades read back."""

    required = True

    def run(self, grader, work):
        with grader.lock:
            in_kernel = grader._record(work.nb, work.sub.student, work.verdicts)
            work.grades = grader._read_grades(work.sub.student)
        work.phases.lap("gradebook")
        for gid, score in in_kernel.items():
            work.grades[gid]["kernel"] = score


class WriteAutogradedStep(GradingStep):
    """The graded notebook (with the judge's summaries, so feedback nbgrader makes later says the same), the
    exchange files and the labs' locked predictions, in nbgrader's autograded folder."""

    required = True

    def run(self, grader, work):
        sub, nb = work.sub, work.nb
        out_dir = grader.course.folder("autograded", sub.student, grader.assignment_name)
        out_dir.mkdir(parents=True, exist_ok=True)
        from .feedback import annotate_summaries

        annotate_summaries(nb, work.verdicts)
        nbformat.write(nb, str(_fresh(out_dir / f"{grader.assignment.notebook}.ipynb")))
        grader._copy_exchange_files(sub, out_dir)
        locked = sub.folder / "predictions.json" if sub.folder else None  # the labs' locked predictions
        if locked is not None and locked.is_file() and not locked.is_symlink() and locked.stat().st_size < 65536:
            shutil.copyfile(locked, _fresh(out_dir / "predictions.json"))
        work.phases.lap("write")


class FeedbackStep(GradingStep):
    """The feedback page: rendered by a worker process while the grading thread grades the next submission
    (during :meth:`~autograder.grading.grader.Grader.grade_all`), else here. Disabled (or left out of the
    steps), grading writes no feedback at all, as ``feedback=False`` does."""

    def run(self, grader, work):
        if not grader.feedback:
            return
        if grader._feedback_dispatch is not None:
            grader._feedback_pending.append((work.sub.student, grader._feedback_dispatch.submit(
                grader._write_feedback, work.sub, work.nb, work.verdicts, work.phases)))
        else:
            grader._write_feedback(work.sub, work.nb, work.verdicts, work.phases)


class ResultStep(GradingStep):
    """The submission's rows: its status and every note as its reason."""

    required = True

    def run(self, grader, work):
        status = work.run["status"].get("state", "ok") if work.problem else "graded"
        reason = "; ".join(([work.problem] if work.problem else []) + work.notes) or "graded"
        work.result = {**grader._rows(work.sub.student, status, reason, work.verdicts, work.grades),
                       "tampered": work.tampered}


#: the steps this module declares, by class name (``c.Grader.steps`` may name them so)
BUILTIN = {cls.__name__: cls for cls in (OpenSubmissionStep, ReadNotebookStep, SanitizeStep, SandboxStep,
                                         ReadCodeStep, JudgeStep, RecordStep, WriteAutogradedStep,
                                         FeedbackStep, ResultStep)}

#: what grading one submission does, in order (the default of ``c.Grader.steps``)
DEFAULT_STEPS = list(BUILTIN)


def step_class(entry) -> type:
    """The step class ``entry`` names: a :class:`GradingStep` subclass, a built-in step's class name or a
    dotted import path (``"mycourse.grading.NotifyStep"``); ``ValueError`` names ``c.Grader.steps``."""
    from traitlets.utils.importstring import import_item

    cls = entry
    if isinstance(entry, str):
        try:
            cls = BUILTIN[entry] if entry in BUILTIN else import_item(entry)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ValueError(f"c.Grader.steps names {entry!r}, which is neither a built-in step "
                             f"({', '.join(BUILTIN)}) nor an importable class: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, GradingStep)):
        raise ValueError(f"c.Grader.steps: {entry!r} is not a GradingStep class "
                         "(autograder.grading.steps.GradingStep)")
    return cls


def build_steps(entries, parent: Configurable) -> List[GradingStep]:
    """The enabled steps ``entries`` lists, each built with ``parent``'s configuration; ``ValueError`` if a
    required step is disabled or missing, naming the setting to change."""
    classes = [step_class(entry) for entry in entries]
    steps = [cls(parent=parent) for cls in classes]
    for cls in BUILTIN.values():
        if cls.required and not any(issubclass(c, cls) for c in classes):
            raise ValueError(f"c.Grader.steps leaves out {cls.__name__}, which every submission needs")
    for step in steps:
        if step.required and not step.enabled:
            raise ValueError(f"c.{type(step).__name__}.enabled = False: this step cannot be disabled, every "
                             "submission needs it")
    if not issubclass(classes[-1], ResultStep):
        raise ValueError("c.Grader.steps must end with ResultStep, which gives every submission its rows")
    return [step for step in steps if step.enabled]
