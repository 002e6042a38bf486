"""Safe, parallel grading of nbgrader assignments (``course-autograde`` / ``python -m autograder``).

One subpackage per job (``docs/authors/layout.md``):

* :mod:`autograder.grading`: the per-submission pipeline on nbgrader's preprocessors, feedback, hand grading
* :mod:`autograder.isolation`: the sandbox (bubblewrap + rlimits), warm kernels, the limits
* :mod:`autograder.judging`: the clean room that computes the values a trusted process judges
* :mod:`autograder.records`: grades files, late policy, extensions, the term, LMS export
* :mod:`autograder.reports`: the instructor's class report
* :mod:`autograder.engines`: the command line, formgrader, grading on submit, Gradescope, CI templates
* :mod:`autograder.course_config`: the one loader of a course's ``nbgrader_config.py`` (below every layer)
* :mod:`autograder.compat`: every place grading relies on the inside of nbgrader and its libraries
"""

from autograder import _moved  # noqa: E402 -- after the docstring, which tools read first

_moved.install()  # old module paths (autograder.grader, autograder.cli, ...) keep working
