"""nbgrader's own autograde (the formgrader's Autograde button, ``nbgrader autograde``), sandboxed.

nbgrader's ``Autograde`` converter runs two lists of preprocessors on each submitted notebook:
``sanitize_preprocessors``, then ``autograde_preprocessors``, whose ``Execute`` runs the student's
code in a kernel of the grader's own account. ``nbgrader_config.py`` replaces them: sanitizing
is left to the course's grader (an empty first list), and the second list is
:class:`SandboxedAutograde` alone, which grades the collected submission exactly as
``course-autograde class`` does (:meth:`autograder.grading.grader.Grader.grade_one`: the kernel and the
clean room in the sandbox, one uid per slot, the limits, the trusted judge) and records the same
scores in the gradebook and the same notebook in ``autograded/``. nbgrader keeps what is its own:
finding the submission, the student and submission rows with their timestamp, ``--force``, the
files copied from ``source/``, permissions, and the formgrader's success or failure.

The formgrader calls ``NbGraderAPI.autograde(assignment, student)``, which builds this converter
with the course's configuration, so the button and the command line grade alike
(``tests/autograder/test_formgrader_autograde.py``).
"""

from __future__ import annotations

import contextlib
import random
import threading
from pathlib import Path

import nbformat
from traitlets import Bool, Integer

from nbgrader.preprocessors.base import NbGraderPreprocessor

from ..isolation.limits import GradingLimits

#: lines for a copy of ``nbgrader_config.py`` that put nbgrader's own autograde steps back (its
#: ``Execute``, in the grader's account, trusting the kernel): only for comparing with plain nbgrader
#: (``benchmarks/bench_autograder.py``) and for testing the hidden test cells themselves
PLAIN_NBGRADER_CONFIG = """
from nbgrader.converters import Autograde as _Autograde  # noqa: E402 -- in a config file after its c = get_config()

c.Autograde.sanitize_preprocessors = _Autograde.class_traits()["sanitize_preprocessors"].default()
c.Autograde.autograde_preprocessors = _Autograde.class_traits()["autograde_preprocessors"].default()
"""

@contextlib.contextmanager
def _at_least_info(log):
    """While a submission is graded, the formgrader's log (whose every record the Autograde button shows:
    nbgrader's ``capture_log``) takes INFO and above. A server run with ``--debug`` otherwise showed
    hundreds of DEBUG lines of nbgrader's and nbconvert's steps around the one line that matters."""
    import logging

    logger = log if isinstance(log, logging.Logger) else getattr(log, "logger", None)
    if logger is None or logger.getEffectiveLevel() >= logging.INFO:
        yield
        return
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)


_slots_in_use: set = set()
_slots_lock = threading.Lock()


def _claim_slot() -> int:
    """The lowest worker slot no autograde of this process is using (its own sandbox uid)."""
    with _slots_lock:
        slot = next(k for k in range(len(_slots_in_use) + 1) if k not in _slots_in_use)
        _slots_in_use.add(slot)
        return slot


def _release_slot(slot: int) -> None:
    with _slots_lock:
        _slots_in_use.discard(slot)


class SandboxedAutograde(NbGraderPreprocessor, GradingLimits):
    """Grades the collected submission with the course's sandboxed grader, in place of ``Execute``.

    Its limits are :class:`~autograder.isolation.limits.GradingLimits` (``c.GradingLimits.*`` in
    ``nbgrader_config.py``, or the older ``c.SandboxedAutograde.*``), the same the command line reads.

    The notebook nbgrader hands in is its copy of ``submitted/<student>/<assignment>/``; the grader
    reads the collected folder itself (as ``course-autograde class`` does), writes the graded
    notebook to ``autograded/`` and the judged scores to the gradebook; the graded notebook is what
    this returns, so nbgrader writes the same file again.
    """

    require_sandbox = Bool(True, help="Refuse to grade when bubblewrap cannot isolate the student's "
                                      "code (False: grade with rlimits only, in this account)").tag(config=True)
    seed = Integer(None, allow_none=True, help="Probe seed of the judge (default: random per run, "
                                               "logged)").tag(config=True)
    reset_hand_grades = Bool(False, help="Clear the scores and comments a person gave when a submission is "
                                         "graded again (default: a hand grade is kept)").tag(config=True)

    def _coursedir(self):
        """The converter's CourseDirectory (this preprocessor's parent is its exporter, whose parent
        is nbgrader's Autograde converter)."""
        owner = self.parent
        while owner is not None and not hasattr(owner, "coursedir"):
            owner = getattr(owner, "parent", None)
        if owner is None:
            raise RuntimeError("SandboxedAutograde runs only inside nbgrader's Autograde converter")
        return owner.coursedir

    def preprocess(self, nb, resources):
        from nbgrader.converters.base import NbGraderException

        from ..isolation import sandbox
        from ..grading.grader import Grader
        from ..grading.submissions import collected

        info = resources["nbgrader"]
        student, assignment = info["student"], info["assignment"]
        coursedir = self._coursedir()
        from ..isolation.unsandboxed import check

        try:  # the same rule as every route (autograder/isolation/unsandboxed.py)
            check(coursedir.root, (not self.require_sandbox) or None)
        except ValueError as exc:
            raise NbGraderException(f"{student}'s {assignment}: {exc}") from None
        seed = self.seed if self.seed is not None else random.SystemRandom().randrange(2**31)
        folder = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
        sub = collected(student, folder, assignment)
        grader = Grader(coursedir.root, assignment, workers=1, seed=seed, feedback=False,
                        limits=sandbox.Limits.of(self),
                        isolate=True, log=self.log.warning, reset_hand_grades=self.reset_hand_grades,
                        allow_unsandboxed=(not self.require_sandbox) or None)
        slot = _claim_slot()
        try:
            with _at_least_info(self.log):
                row = grader.grade_one(sub, slot)
        finally:
            _release_slot(slot)
        if row["status"] == "error":
            raise NbGraderException(f"{student}: {row['reason']}")
        from ..records import policy

        # the same grades.json `course-autograde class` writes, under the assignment's grade policy
        # (due date, late rule, extensions): refresh, report and term find it
        row = policy.record(coursedir.root, assignment, [row], {student: sub.timestamp},
                            {"assignment": assignment, "seed": seed, "isolation": grader.isolation,
                             "limits": vars(grader.limits), "shard": "formgrader"}, log=self.log.warning)[0]
        from ..records.grades import summary_line

        self.log.info("%s", summary_line(row, grader.isolation, seed))
        graded = grader.course.folder("autograded", student, assignment) / f"{grader.assignment.notebook}.ipynb"
        if not graded.is_file():  # no notebook to grade: every part 0 in the gradebook, nothing executed
            return nb, resources
        return nbformat.read(str(graded), as_version=4), resources
