"""Old module paths of the grading side keep working: each is an alias of the module's new home.

The grading side was split by job (``grading``, ``isolation``, ``judging``, ``records``, ``reports``,
``engines``; ``docs/authors/layout.md``). An instructor's own ``nbgrader_config.py`` (a copy of this
repository's, in a course root elsewhere) names classes by their old paths, for example
``"autograder.formgrader.SandboxedAutograde"`` or ``from autograder.feedback import
FEEDBACK_PREPROCESSORS``, and console scripts installed before the split import
``autograder.cli``. ``import autograder`` installs the course's finder (:mod:`course._moved`) for
:data:`MOVED`, so each old name is the *same* module object as its new home. First-party code uses the
new names only; ``tests/test_import_graph.py`` checks that no file is left at an old path.
"""

from __future__ import annotations

from typing import Dict

from course import _moved

#: old module name -> the module that now holds it
MOVED: Dict[str, str] = {
    "autograder.grader": "autograder.grading.grader",
    "autograder.submissions": "autograder.grading.submissions",
    "autograder.feedback": "autograder.grading.feedback",
    "autograder.offline_maths": "autograder.grading.offline_maths",
    "autograder.handgrading": "autograder.grading.handgrading",
    "autograder.sandbox": "autograder.isolation.sandbox",
    "autograder.warm": "autograder.isolation.warm",
    "autograder.kernel": "autograder.isolation.kernel",
    "autograder.limits": "autograder.isolation.limits",
    "autograder.cleanroom": "autograder.judging.sandboxed_cleanroom",
    "autograder.report": "autograder.records.grades",
    "autograder.late": "autograder.records.late",
    "autograder.term": "autograder.records.term",
    "autograder.lms": "autograder.records.lms",
    "autograder.classreport": "autograder.reports",
    "autograder.classreport.anonymise": "autograder.reports.anonymise",
    "autograder.classreport.build": "autograder.reports.build",
    "autograder.classreport.catalog": "autograder.reports.catalog",
    "autograder.classreport.render": "autograder.reports.render",
    "autograder.classreport.stats": "autograder.reports.stats",
    "autograder.cli": "autograder.engines.cli",
    "autograder.formgrader": "autograder.engines.formgrader",
    "autograder.on_submit": "autograder.engines.on_submit",
    "autograder.gradescope": "autograder.engines.gradescope",
    "autograder.ci_template": "autograder.engines.ci_template",
    "autograder.options": "autograder.engines.options",
}


def install() -> None:
    """Bind the old names of :data:`MOVED` (idempotent)."""
    _moved.install(MOVED)
