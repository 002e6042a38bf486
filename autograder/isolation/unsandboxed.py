"""No student code runs without the sandbox unless the instructor says so, the same everywhere.

Where bubblewrap cannot isolate a submission (not installed, no user namespaces in a container),
every route that grades refuses: ``course-autograde class`` and ``single``, the formgrader's
Autograde button and ``nbgrader autograde``, grading on submit, the Gradescope bundle and the CI
templates. Grading with rlimits only (the student's code then runs in the grader's own account,
able to read what it can read) needs one of:

* ``--allow-unsandboxed`` on the command line (``class``, ``single``, ``on-submit run``,
  ``gradescope``);
* ``c.Isolation.allow_unsandboxed = True`` in the course's ``nbgrader_config.py`` (the older
  ``c.SandboxedAutograde.require_sandbox = False`` says the same for every route);
* ``COURSE_ALLOW_UNSANDBOXED=1`` in the grader's environment (a CI job or a test run on a machine
  without bubblewrap: ``tests/conftest.py`` sets it there, and says so).

:class:`autograder.grading.grader.Grader` asks :func:`check` before it grades anything, so no route can
forget it.
"""

from __future__ import annotations

import os
from typing import Optional

from traitlets import Bool
from traitlets.config import Configurable

from ..course_config import course_config

ENV = "COURSE_ALLOW_UNSANDBOXED"
FLAG = "--allow-unsandboxed"


class Isolation(Configurable):
    """``c.Isolation.allow_unsandboxed`` in ``nbgrader_config.py``."""

    allow_unsandboxed = Bool(False, help="Grade with rlimits only where bubblewrap cannot isolate the "
                                         "student's code (UNSAFE: it runs in the grader's account)").tag(config=True)


def allowed(course_root=None, given: Optional[bool] = None) -> Optional[str]:
    """What allows grading without the sandbox (a flag, the environment, the course's setting), or
    ``None``: nothing does."""
    if given:
        return FLAG
    if os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes"):
        return f"{ENV}={os.environ[ENV]}"
    config = course_config(course_root)
    if Isolation(config=config).allow_unsandboxed:
        return "c.Isolation.allow_unsandboxed in nbgrader_config.py"
    if "SandboxedAutograde" in config and config.SandboxedAutograde.get("require_sandbox") is False:
        return "c.SandboxedAutograde.require_sandbox = False in nbgrader_config.py"
    return None


def refusal(why: str) -> str:
    """Why nothing is graded, and what would allow it."""
    return (f"not grading: the student's code would run unsandboxed in this account ({why}). Install "
            f"bubblewrap (docs/admins/isolation.md), or accept the risk with {FLAG}, "
            f"c.Isolation.allow_unsandboxed = True in nbgrader_config.py (older: "
            f"c.SandboxedAutograde.require_sandbox = False) or {ENV}=1")


def check(course_root=None, given: Optional[bool] = None) -> Optional[str]:
    """``None`` when the sandbox works; else what allows grading without it; ``ValueError``
    (:func:`refusal`) when nothing does."""
    from . import sandbox

    why = sandbox.probe()
    if why is None:
        return None
    source = allowed(course_root, given)
    if source is None:
        raise ValueError(refusal(why))
    return f"{why}; allowed by {source}"
