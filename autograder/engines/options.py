"""What every grading engine shares: the limit options and the throw-away course root.

``class``, ``single`` and the Gradescope bundle take the same seed and limits and build a
gradebook the same way; they live here, below :mod:`autograder.engines.cli` and
:mod:`autograder.engines.gradescope`, so neither imports the other.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from ..isolation import sandbox
from ..isolation.limits import GradingLimits


def course_limits(course_root) -> GradingLimits:
    """The limits ``nbgrader_config.py`` in ``course_root`` sets (``c.GradingLimits.*``, or the formgrader's
    older names ``c.SandboxedAutograde.*``), the declared defaults for the others."""
    from ..course_config import course_config

    config = course_config(course_root)
    configured = GradingLimits(config=config)
    if "SandboxedAutograde" in config:  # the formgrader's names set the same limits
        configured.override(**{name: config.SandboxedAutograde[name] for name in GradingLimits.names()
                               if name in config.SandboxedAutograde})
    return configured


def limits(args) -> sandbox.Limits:
    """The limits to grade with: each flag given on the command line, else what the course's
    ``nbgrader_config.py`` sets, else the declared default (:class:`~autograder.isolation.limits.GradingLimits`)."""
    configured = course_limits(getattr(args, "course_root", None))
    given = {name: getattr(args, name, None) for name in GradingLimits.names()}
    return sandbox.Limits.of(configured.override(**given))


def limit_options(p: argparse.ArgumentParser) -> None:
    """The probe seed and one flag per limit of :class:`~autograder.isolation.limits.GradingLimits` (class and single
    mode, and the Gradescope bundle)."""
    p.add_argument("--seed", type=int, default=None, help="probe seed (default: random, recorded)")
    for name in GradingLimits.names():
        trait = GradingLimits.class_traits()[name]
        p.add_argument(GradingLimits.flag(name), type=int, default=None, dest=name,
                       help=f"{trait.help} (default: c.GradingLimits.{name} in nbgrader_config.py, "
                            f"else {trait.default_value})")


@contextlib.contextmanager
def temporary_course(root: Path, assignment: str) -> Iterator[Path]:
    """A throw-away course root with a gradebook for ``assignment`` (single mode without one), removed
    on exit, also when making it fails. It is configured as the course (folder names, nbgrader's steps;
    :meth:`~autograder.grading.course_settings.CourseSettings.scratch`) with a gradebook of its own, so
    ``nbgrader generate_assignment`` there never writes to the course's."""
    from ..course_config import CONFIG_FILE
    from ..grading.course_settings import CourseSettings

    course = CourseSettings(root)
    source = course.folder("source", ".", assignment)
    if not source.is_dir() or not (course.root / CONFIG_FILE).is_file():
        raise ValueError(f"course_root {str(root)!r} has neither a gradebook with {assignment!r} "
                         f"nor {source.relative_to(course.root)} and {CONFIG_FILE} to make one")
    with tempfile.TemporaryDirectory(prefix="autograder-course-") as scratch:
        tmp = course.scratch(scratch)
        shutil.copytree(source, tmp.folder("source", ".", assignment))
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        result = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", assignment,
                                 "--force", "--log-level=ERROR"], cwd=tmp.root, capture_output=True, text=True,
                                env=dict(os.environ, PATH=path), timeout=600)
        if result.returncode != 0:
            raise ValueError(f"nbgrader generate_assignment failed: {result.stderr[-500:]}")
        yield tmp.root
