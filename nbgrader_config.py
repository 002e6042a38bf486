"""nbgrader configuration: the repository root is the nbgrader course root.

source/<assignment>/   instructor notebooks with solutions and hidden tests
release/<assignment>/  what students receive (generated, committed, checked in CI)
submitted/, autograded/, feedback/, gradebook.db   runtime data, never committed
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

ROOT = Path(__file__).resolve().parent

c.CourseDirectory.course_id = "distributed-training"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.db_url = f"sqlite:///{ROOT / 'gradebook.db'}"

# An instructor on a shared machine or JupyterHub points this at the exchange (students'
# nbgrader reads the same variable through hub/nbgrader_env_config.py).
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", str(ROOT / "exchange"))

# nbgrader runs `alembic` from PATH when it creates gradebook.db; `.venv/bin/nbgrader` in a shell
# without the environment activated would not find it (and `generate_assignment --force` would
# fail after removing release/<assignment>/).
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")

# Autograding: the formgrader's Autograde button and plain `nbgrader autograde` grade as
# `course-autograde class` does, never with nbgrader's Execute in this account: the student's code
# runs in the course's sandbox (bubblewrap, a uid per slot, limits), answers are judged by the
# trusted judge from a clean room, and those scores go into the gradebook and autograded/
# (autograder.engines.formgrader.SandboxedAutograde; it refuses to grade if bubblewrap cannot isolate).
# The course's grader sanitizes the submission itself (it repairs what nbgrader's sanitizing
# would reject), so nbgrader's own sanitizing step passes the notebook through unchanged.
c.Autograde.sanitize_preprocessors = []
c.Autograde.autograde_preprocessors = ["autograder.engines.formgrader.SandboxedAutograde"]

# Feedback shows each workbook exercise's worked derivation (computed from its spec by
# course.core), inserted after the exercise; hidden-test regions are cleared from it, and every
# graded test cell's outputs (hidden tests' tracebacks) become the trusted judge's summary that
# course-autograde left in autograded/ (autograder.grading.feedback.ScrubTestOutputs). The list is the
# autograder's own, so `nbgrader generate_feedback`, the formgrader's Generate Feedback button and
# `course-autograde` render alike (tests/autograder/test_feedback_paths.py).
from autograder.grading.feedback import FEEDBACK_PREPROCESSORS  # noqa: E402 -- below the settings it explains

c.GenerateFeedback.preprocessors = list(FEEDBACK_PREPROCESSORS)
# ... and each page says what the assignment's grade policy (grades/<assignment>/policy.json: due date,
# late rule, extensions) did to the score, the same note course-autograde and grading on submit give
# (autograder/engines/nbgrader_feedback.py), also from the formgrader's Generate Feedback button.
from autograder.engines.nbgrader_feedback import after_feedback  # noqa: E402 -- below the settings it explains

c.GenerateFeedback.post_convert_hook = after_feedback
# ... and its maths is MathML, so it reads offline: no MathJax from a CDN (autograder/templates)
from autograder.grading.feedback import template_basedirs  # noqa: E402 -- below the settings it explains

c.HTMLExporter.extra_template_basedirs = template_basedirs()

# The formgrader shows under each hand-graded answer its model answer and marking guide (from
# source/), and widgets as a short note instead of their repr (autograder/grading/handgrading.py; the guide
# appears only in the formgrader's template, never in feedback).
c.HTMLExporter.preprocessors = ["autograder.grading.handgrading.ShowMarkingGuide", "autograder.grading.handgrading.WidgetNote"]

# Everything a student hands in is data, never markup: every HTMLExporter built from this file (the
# formgrader's submission pages, nbgrader generate_feedback and its button) first makes the notebook
# inert (outputs, metadata, attachments, raw cells), renders markdown and HTML outputs through the
# course's allow-list (nh3), and leaves out scripts and widgets (autograder/grading/sanitize.py).
from autograder.grading.sanitize import configure as _sanitize_student_markup  # noqa: E402 -- below the settings it explains

_sanitize_student_markup(c)

# One release: the guide's plain `nbgrader generate_assignment NAME` writes exactly the committed
# release/ (which `course build-release` makes). Answer cells get the activity's ``code_stub``
# instead of nbgrader's `raise NotImplementedError()`, so "Run All" does not stop at the first
# answer: a lab's is a comment, a chapter's a comment and `pass` (a Build function's body stays valid).
from nbgrader.converters.generate_assignment import GenerateAssignment  # noqa: E402 -- below the settings it explains
from nbgrader.preprocessors import ClearSolutions  # noqa: E402 -- below the settings it explains


class ClearSolutionsPerAssignment(ClearSolutions):
    """nbgrader's ClearSolutions with the code stub the course declares for the assignment."""

    def preprocess(self, nb, resources):
        from course.activities import SYLLABUS

        listed = SYLLABUS.by_name.get(resources.get("nbgrader", {}).get("assignment", ""))
        if listed is not None and listed.code_stub is not None:
            self.code_stub = dict(self.code_stub, python=listed.code_stub)
        return super().preprocess(nb, resources)


c.GenerateAssignment.preprocessors = [ClearSolutionsPerAssignment if pp is ClearSolutions else pp
                                      for pp in GenerateAssignment.class_traits()["preprocessors"].default()]
